"""Policy: what a rollout worker acts with and a learner trains; PolicySpec describes one.

A policy maps observations to actions (`compute_actions`), turns trajectories into
training data (`postprocess_trajectory`) and learns from it (`learn_on_batch`). Its
weights and state travel as numpy (`get_weights`, `get_state`).

The usage loop:

    actions, state_outs, extras = policy.compute_actions(obs_batch)
    ... step the env, collect a SampleBatch `batch` of one trajectory ...
    batch = policy.postprocess_trajectory(batch)
    info = policy.learn_on_batch(batch)          # {"learner_stats": {...}}
    other_policy.set_weights(policy.get_weights())

`tfrl.policy.tf_policy.TFPolicy` is the Keras/TF2 implementation.
"""

import abc
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import gymnasium as gym
import numpy as np
import tree

from tfrl.core.columns import Columns
from tfrl.policy.policy_config import FrozenConfig
from tfrl.policy.view_requirement import ViewRequirement


class PolicySpec(NamedTuple):
    """Everything needed to build one policy; `None` spaces are filled in from the env.

    Args:
        policy_class: The Policy subclass; None means the algorithm's default policy.
        observation_space: Observation space of the policy's agents.
        action_space: Action space of the policy's agents.
        config: Overrides of the algorithm's config for this policy.
    """

    policy_class: Optional[type] = None
    observation_space: Optional[gym.Space] = None
    action_space: Optional[gym.Space] = None
    config: Optional[dict] = None


class Policy(abc.ABC):
    """Base class of every policy.

    Subclasses implement at least `compute_actions`; learning policies also
    `learn_on_batch` (or `compute_gradients` and `apply_gradients`) and the weight
    accessors.

    Args:
        observation_space: Observation space of one agent.
        action_space: Action space of one agent.
        config: The policy config (an algorithm config dict); kept read-only as
            `self.config` (a `FrozenConfig`; a subclass may assign a new mapping in its
            constructor).
    """

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: dict):
        for name, space in (("observation_space", observation_space),
                            ("action_space", action_space)):
            if not isinstance(space, gym.Space):
                raise TypeError(
                    f"{type(self).__name__}(): `{name}` must be a gymnasium Space; received "
                    f"{space!r} of type {type(space).__name__}."
                )
        if config is not None and not isinstance(config, dict):
            raise TypeError(
                f"{type(self).__name__}(): `config` must be a dict or None; received "
                f"{type(config).__name__}."
            )
        self.observation_space = observation_space
        self.action_space = action_space
        self.config = FrozenConfig(config or {})
        self.global_timestep = 0
        self.exploration = None
        self.view_requirements: Dict[str, ViewRequirement] = self._default_view_requirements()

    # ----------------------------------------------------------------- acting

    @abc.abstractmethod
    def compute_actions(
        self,
        obs_batch: Any,
        state_batches: Optional[List[Any]] = None,
        prev_action_batch: Any = None,
        prev_reward_batch: Any = None,
        info_batch: Any = None,
        episodes: Any = None,
        explore: Optional[bool] = None,
        timestep: Optional[int] = None,
        **kwargs,
    ) -> Tuple[Any, List[Any], Dict[str, Any]]:
        """Actions for a batch of observations.

        Args:
            obs_batch: Observations, batched along the first axis (nested for Dict and
                Tuple spaces).
            state_batches: Recurrent state inputs, one `[B, ...]` array per state tensor.
            prev_action_batch: Previous actions, if the model uses them.
            prev_reward_batch: Previous rewards, if the model uses them.
            info_batch: Infos of the observations.
            episodes: The episodes the observations belong to.
            explore: Sample (True) or act deterministically (False); None means the
                config's `explore` setting.
            timestep: The step to act at (for exploration schedules); None means
                `global_timestep`. It does not set the counter: as in RLlib, an
                implementation advances `global_timestep` by the number of rows it acted
                on, so a sampler passing `timestep=policy.global_timestep` sees it grow
                between `on_global_var_update` calls.
            **kwargs: Ignored by the base class.

        Returns:
            `(actions [B, ...], state_outs list of [B, ...], extra_fetches dict)`.
        """

    def compute_actions_from_input_dict(
        self,
        input_dict: Dict[str, Any],
        explore: Optional[bool] = None,
        timestep: Optional[int] = None,
        episodes: Any = None,
        **kwargs,
    ) -> Tuple[Any, List[Any], Dict[str, Any]]:
        """`compute_actions` on the columns of an input dict (`obs`, `state_in_<i>`, ...)."""
        if Columns.OBS not in input_dict:
            raise KeyError(
                f"compute_actions_from_input_dict(): the input dict needs an '{Columns.OBS}' "
                f"column; received columns {sorted(input_dict)}."
            )
        state_batches = []
        while f"state_in_{len(state_batches)}" in input_dict:
            state_batches.append(input_dict[f"state_in_{len(state_batches)}"])
        return self.compute_actions(
            input_dict[Columns.OBS],
            state_batches or None,
            prev_action_batch=input_dict.get(Columns.PREV_ACTIONS),
            prev_reward_batch=input_dict.get(Columns.PREV_REWARDS),
            info_batch=input_dict.get(Columns.INFOS),
            episodes=episodes,
            explore=explore,
            timestep=timestep,
            **kwargs,
        )

    def value(self, obs_batch: Any, state_batches: Optional[List[Any]] = None,
              prev_action_batch: Any = None, prev_reward_batch: Any = None) -> np.ndarray:
        """Value estimates `[B]` of a batch of observations (to bootstrap truncated
        trajectories); default: the `vf_preds` of a deterministic `compute_actions`
        (which does not count as acting: `global_timestep` is left unchanged).

        Raises:
            NotImplementedError: If `compute_actions` returns no `vf_preds`.
        """
        timestep = self.global_timestep
        try:
            _, _, extras = self.compute_actions(
                obs_batch, state_batches, prev_action_batch=prev_action_batch,
                prev_reward_batch=prev_reward_batch, explore=False, timestep=timestep)
        finally:
            self.global_timestep = timestep
        if Columns.VF_PREDS not in extras:
            raise NotImplementedError(
                f"{type(self).__name__} has no value function: compute_actions() returns no "
                f"'{Columns.VF_PREDS}' (it returns {sorted(extras)}). Override value()."
            )
        return np.asarray(extras[Columns.VF_PREDS])

    def compute_single_action(
        self,
        obs: Any = None,
        state: Optional[List[Any]] = None,
        *,
        prev_action: Any = None,
        prev_reward: Any = None,
        info: Any = None,
        input_dict: Optional[Dict[str, Any]] = None,
        episode: Any = None,
        explore: Optional[bool] = None,
        timestep: Optional[int] = None,
        **kwargs,
    ) -> Tuple[Any, List[Any], Dict[str, Any]]:
        """The action for one observation: `compute_actions` on a batch of one, unbatched.

        Returns:
            `(action, state_outs, extra_fetches)` with the batch axis removed.
        """
        if input_dict is not None:
            obs = input_dict[Columns.OBS]
            state = [input_dict[k] for k in sorted(input_dict) if k.startswith("state_in_")]
        if obs is None:
            raise ValueError("compute_single_action() needs `obs` (or `input_dict`); received none.")
        add_axis = lambda x: np.asarray(x)[None]  # noqa: E731
        actions, state_outs, extras = self.compute_actions(
            tree.map_structure(add_axis, obs),
            [add_axis(s) for s in state] if state else None,
            prev_action_batch=None if prev_action is None else tree.map_structure(add_axis, prev_action),
            prev_reward_batch=None if prev_reward is None else add_axis(prev_reward),
            info_batch=None if info is None else [info],
            episodes=None if episode is None else [episode],
            explore=explore,
            timestep=timestep,
            **kwargs,
        )
        first = lambda x: x[0]  # noqa: E731
        return (tree.map_structure(first, actions), [s[0] for s in state_outs],
                tree.map_structure(first, extras))

    # -------------------------------------------------------------- learning

    def postprocess_trajectory(self, sample_batch: Any, other_agent_batches: Any = None,
                               episode: Any = None) -> Any:
        """Adds derived columns (e.g. advantages) to one trajectory; default: unchanged."""
        return sample_batch

    def learn_on_batch(self, samples: Any, *, num_sgd_iter: Optional[int] = None,
                       sgd_minibatch_size: Optional[int] = None,
                       shuffle_sequences: Optional[bool] = None) -> Dict[str, Any]:
        """Trains on `samples`; default: `apply_gradients(compute_gradients(samples))`,
        one step on the whole batch.

        Args:
            samples: The batch.
            num_sgd_iter: Epochs (None: the policy's own choice). The default
                implementation runs one.
            sgd_minibatch_size: Rows per minibatch (0 or None: the whole batch). The
                default implementation learns on the whole batch.
            shuffle_sequences: Shuffle every epoch; ignored by the default implementation.

        Returns:
            An info dict with a `"learner_stats"` entry.

        Raises:
            NotImplementedError: If asked for more than one epoch or for minibatches
                (`TFPolicy` runs them in one compiled call).
        """
        if num_sgd_iter not in (None, 1) or sgd_minibatch_size not in (None, 0):
            raise NotImplementedError(
                f"{type(self).__name__}.learn_on_batch() learns in one step on the whole "
                f"batch; received num_sgd_iter={num_sgd_iter!r}, sgd_minibatch_size="
                f"{sgd_minibatch_size!r}. Override learn_on_batch to run minibatch SGD "
                "(TFPolicy does).")
        grads, info = self.compute_gradients(samples)
        self.apply_gradients(grads)
        return info

    def compute_gradients(self, postprocessed_batch: Any) -> Tuple[Any, Dict[str, Any]]:
        """Gradients of the loss on a batch, and an info dict; not implemented here."""
        raise NotImplementedError(f"{type(self).__name__} does not compute gradients.")

    def apply_gradients(self, gradients: Any) -> None:
        """Applies gradients from `compute_gradients`; not implemented here."""
        raise NotImplementedError(f"{type(self).__name__} does not apply gradients.")

    def on_global_var_update(self, global_vars: Dict[str, Any]) -> None:
        """Receives the learner's global variables; stores `timestep`."""
        if "timestep" in global_vars:
            self.global_timestep = int(global_vars["timestep"])

    # ----------------------------------------------------------------- state

    def get_weights(self) -> Any:
        """The model weights as numpy arrays; default: none."""
        return {}

    def set_weights(self, weights: Any) -> None:
        """Sets weights from `get_weights`; default: accepts and ignores them."""

    def get_state(self) -> Dict[str, Any]:
        """Everything needed to restore this policy: weights and the global timestep."""
        return {"weights": self.get_weights(), "global_timestep": self.global_timestep}

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result."""
        if not isinstance(state, dict) or "weights" not in state:
            raise ValueError(
                "set_state() takes a dict from get_state() with a 'weights' entry; received "
                f"{type(state).__name__}"
                f"{' with keys ' + str(sorted(state)) if isinstance(state, dict) else ''}."
            )
        self.set_weights(state["weights"])
        self.global_timestep = int(state.get("global_timestep", self.global_timestep))

    def get_initial_state(self) -> List[Any]:
        """Initial recurrent state of one agent (unbatched); `[]` for feed-forward."""
        return []

    def is_recurrent(self) -> bool:
        """Whether the policy keeps recurrent state."""
        return bool(self.get_initial_state())

    def num_state_tensors(self) -> int:
        """Number of recurrent state tensors."""
        return len(self.get_initial_state())

    def get_session(self) -> None:
        """TF1 sessions do not exist in tfrl: always None."""
        return None

    def export_model(self, export_dir: str, onnx: Optional[int] = None) -> None:
        """Exports the model for serving; not implemented here."""
        raise NotImplementedError(f"{type(self).__name__} cannot export a model.")

    def export_checkpoint(self, export_dir: str) -> None:
        """Writes a checkpoint of the policy; not implemented here."""
        raise NotImplementedError(f"{type(self).__name__} cannot export a checkpoint.")

    # -------------------------------------------------------------- private

    def _default_view_requirements(self) -> Dict[str, ViewRequirement]:
        obs, act = self.observation_space, self.action_space
        return {
            Columns.OBS: ViewRequirement(space=obs),
            Columns.NEXT_OBS: ViewRequirement(
                data_col=Columns.OBS, shift=1, space=obs, used_for_compute_actions=False),
            Columns.ACTIONS: ViewRequirement(space=act, used_for_compute_actions=False),
            Columns.PREV_ACTIONS: ViewRequirement(data_col=Columns.ACTIONS, shift=-1, space=act),
            Columns.REWARDS: ViewRequirement(used_for_compute_actions=False),
            Columns.PREV_REWARDS: ViewRequirement(data_col=Columns.REWARDS, shift=-1),
            Columns.TERMINATEDS: ViewRequirement(used_for_compute_actions=False),
            Columns.TRUNCATEDS: ViewRequirement(used_for_compute_actions=False),
            Columns.INFOS: ViewRequirement(used_for_compute_actions=False),
            Columns.EPS_ID: ViewRequirement(used_for_compute_actions=False),
            Columns.UNROLL_ID: ViewRequirement(used_for_compute_actions=False),
            Columns.AGENT_INDEX: ViewRequirement(used_for_compute_actions=False),
            Columns.T: ViewRequirement(used_for_compute_actions=False),
        }


def action_output_view_requirements() -> Dict[str, ViewRequirement]:
    """Columns `compute_actions` adds to trajectories (training-only inputs)."""
    return {
        column: ViewRequirement(used_for_compute_actions=False)
        for column in (Columns.ACTION_DIST_INPUTS, Columns.ACTION_LOGP, Columns.ACTION_PROB,
                       Columns.VF_PREDS)
    }


def recurrent_view_requirements(initial_state: List[np.ndarray],
                                max_seq_len: int) -> Dict[str, ViewRequirement]:
    """`state_in_<i>` (the previous step's `state_out_<i>`, kept once per sequence of
    `max_seq_len` steps for training) and `state_out_<i>` for each state tensor."""
    requirements = {}
    for i, state in enumerate(initial_state):
        space = gym.spaces.Box(-np.inf, np.inf, state.shape, state.dtype)
        requirements[f"state_in_{i}"] = ViewRequirement(
            data_col=f"state_out_{i}", shift=-1, space=space, batch_repeat_value=max_seq_len)
        requirements[f"state_out_{i}"] = ViewRequirement(space=space, used_for_training=False)
    return requirements
