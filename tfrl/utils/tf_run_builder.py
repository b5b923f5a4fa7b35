"""TFRunBuilder: the action computations of several policies for one env step, in one call.

A multi-agent sampler adds each policy's observations of the step (`add_fetches`), then
reads each result (`get`). The first `get` runs every pending computation in one call of
a compiled function over all the policies' action graphs; the compiled function is
cached per sequence of policies, so a sampler that uses the same policies every step
traces it once.

Policies are duck-typed: they provide `action_input_signature()`, `action_inputs(obs,
state_batches, explore)`, `action_graph(obs, state_in, explore)` and
`action_outputs(outputs)`, as `tfrl.policy.tf_policy.TFPolicy` does.

Example:
    >>> import gymnasium as gym, numpy as np
    >>> from tfrl.policy.tf_policy import TFPolicy
    >>> space = gym.spaces.Box(-1.0, 1.0, (2,))
    >>> a = TFPolicy(space, gym.spaces.Discrete(2), {"model": {"fcnet_hiddens": [4]}})
    >>> b = TFPolicy(space, gym.spaces.Discrete(3), {"model": {"fcnet_hiddens": [4]}})
    >>> builder = TFRunBuilder()
    >>> ha = builder.add_fetches(a, np.zeros((2, 2), np.float32))
    >>> hb = builder.add_fetches(b, np.zeros((1, 2), np.float32), explore=False)
    >>> builder.get(ha)[0].shape, builder.get(hb)[0].shape
    ((2,), (1,))
"""

import weakref
from typing import Any, Dict, List, Optional, Tuple

import tensorflow as tf

# (id(policy), ...) -> (weak references to the policies, concrete function)
_FUNCTIONS: Dict[Tuple[int, ...], Tuple[List[Any], Any]] = {}
_TRACES = {"count": 0}


def num_traces() -> int:
    """How many combined action functions have been traced in this process."""
    return _TRACES["count"]


def _compiled(policies: List[Any]):
    key = tuple(id(p) for p in policies)
    cached = _FUNCTIONS.get(key)
    if cached is not None and all(ref() is p for ref, p in zip(cached[0], policies)):
        return cached[1]

    def combined(inputs):
        _TRACES["count"] += 1
        return [p.action_graph(*args) for p, args in zip(policies, inputs)]

    signature = [[p.action_input_signature() for p in policies]]
    function = tf.function(combined, input_signature=signature).get_concrete_function()
    _FUNCTIONS[key] = ([weakref.ref(p) for p in policies], function)
    return function


class TFRunBuilder:
    """Collects action computations and runs them in one compiled call.

    Args:
        sess: Ignored (RLlib's TF1 session argument); tfrl has no sessions.
        debug_name: A name shown in errors.
    """

    def __init__(self, sess: Any = None, debug_name: Optional[str] = None):
        self.debug_name = debug_name or "TFRunBuilder"
        self._pending: List[Tuple[Any, Any]] = []  # (policy, checked inputs)
        self._results: Optional[List[Any]] = None

    def add_fetches(self, policy: Any, obs_batch: Any, state_batches: Optional[List[Any]] = None,
                    explore: Optional[bool] = None, prev_action_batch: Any = None,
                    prev_reward_batch: Any = None) -> int:
        """Queues `policy.compute_actions(obs_batch, state_batches, prev_action_batch,
        prev_reward_batch, explore=explore)`.

        Returns:
            The handle to pass to `get`.

        Raises:
            RuntimeError: If the fetches already ran (use a new builder per step).
            ValueError, TypeError: For inputs the policy rejects (checked here).
        """
        if self._results is not None:
            raise RuntimeError(
                f"{self.debug_name}: add_fetches() after get(); the fetches already ran. "
                "Use a new TFRunBuilder for each env step."
            )
        for method in ("action_input_signature", "action_inputs", "action_graph",
                       "action_outputs"):
            if not callable(getattr(policy, method, None)):
                raise TypeError(
                    f"{self.debug_name}.add_fetches() takes a policy with compiled action "
                    f"graphs (a TFPolicy); received {type(policy).__name__}, which lacks "
                    f"{method}()."
                )
        self._pending.append((policy, policy.action_inputs(
            obs_batch, state_batches, explore, prev_action_batch, prev_reward_batch)))
        return len(self._pending) - 1

    def get(self, handle: int) -> Tuple[Any, List[Any], Dict[str, Any]]:
        """`(actions, state_outs, extra_fetches)` of the fetch `handle`, as numpy.

        The first call runs every queued fetch in one compiled call.

        Raises:
            IndexError: If `handle` is not one `add_fetches` returned.
        """
        if not isinstance(handle, int) or not 0 <= handle < len(self._pending):
            raise IndexError(
                f"{self.debug_name}.get(): unknown handle {handle!r}; add_fetches() returned "
                f"handles 0..{len(self._pending) - 1}."
            )
        if self._results is None:
            self._run()
        return self._results[handle]

    def _run(self) -> None:
        policies = [policy for policy, _ in self._pending]
        outputs = _compiled(policies)([list(inputs) for _, inputs in self._pending])
        self._results = []
        for (policy, inputs), output in zip(self._pending, outputs):
            policy.global_timestep += len(tf.nest.flatten(inputs[0])[0])
            self._results.append(policy.action_outputs(output))
