"""Training and sampling callbacks (RLlib's `ray.rllib.algorithms.callbacks`).

Defined here, in the evaluation layer, because the rollout worker calls them; RLlib's
path `tfrl.algorithms.callbacks` re-exports `DefaultCallbacks` and
`make_multi_callbacks`.

Subclass `DefaultCallbacks`, override the hooks you need and pass the *class* as the
`callbacks` config key; the rollout worker instantiates it. Every hook is keyword-only
and accepts `**kwargs`, so new arguments never break existing subclasses.

Example:
    >>> class EpisodeLength(DefaultCallbacks):
    ...     def on_episode_end(self, *, episode, **kwargs):
    ...         episode.custom_metrics["length"] = episode.length
    >>> EpisodeLength.overrides("on_episode_end"), EpisodeLength.overrides("on_episode_step")
    (True, False)
"""

from typing import Any, Dict, List, Optional, Sequence, Type

__all__ = ["DefaultCallbacks", "make_multi_callbacks"]

# Hooks in the order they are documented; `make_multi_callbacks` forwards each of them.
HOOK_NAMES = (
    "on_algorithm_init",
    "on_create_policy",
    "on_sub_environment_created",
    "on_episode_start",
    "on_episode_step",
    "on_episode_end",
    "on_postprocess_trajectory",
    "on_sample_end",
    "on_learn_on_batch",
    "on_train_result",
    "on_evaluate_start",
    "on_evaluate_end",
)


class DefaultCallbacks:
    """No-op base class of all callbacks.

    Args:
        legacy_callbacks_dict: Not supported (RLlib's pre-1.0 dict of callables). Passing a
            non-empty dict raises `ValueError`.
    """

    def __init__(self, legacy_callbacks_dict: Optional[Dict[str, Any]] = None):
        if legacy_callbacks_dict:
            raise ValueError(
                "Callbacks given as a dict of functions are not supported. Received: "
                f"legacy_callbacks_dict with keys {sorted(legacy_callbacks_dict)}. Subclass "
                "tfrl.algorithms.callbacks.DefaultCallbacks and override its on_* methods."
            )

    @classmethod
    def overrides(cls, name: str) -> bool:
        """Whether `cls` (a subclass) overrides the hook `name` of `DefaultCallbacks`.

        Samplers skip per-step hooks that are not overridden.

        Raises:
            ValueError: `name` is not a hook of `DefaultCallbacks`.
        """
        if name not in HOOK_NAMES:
            raise ValueError(
                f"Unknown callback hook. Received: name={name!r}. Expected one of "
                f"{list(HOOK_NAMES)}."
            )
        return getattr(cls, name) is not getattr(DefaultCallbacks, name)

    def on_algorithm_init(self, *, algorithm, **kwargs) -> None:
        """Called at the end of `Algorithm.setup()`."""

    def on_create_policy(self, *, policy_id, policy, **kwargs) -> None:
        """Called right after a policy was created (by a worker or `add_policy`)."""

    def on_sub_environment_created(self, *, worker, sub_environment, env_context,
                                   **kwargs) -> None:
        """Called after a sub-environment of a worker was created."""

    def on_episode_start(self, *, worker, base_env, policies, episode, env_index,
                         **kwargs) -> None:
        """Called after an episode was started (its first observation is known)."""

    def on_episode_step(self, *, worker, base_env, policies, episode, env_index,
                        **kwargs) -> None:
        """Called after each step of an episode (not after the reset)."""

    def on_episode_end(self, *, worker, base_env, policies, episode, env_index,
                       **kwargs) -> None:
        """Called when an episode ended (terminated, truncated or cut by the horizon)."""

    def on_postprocess_trajectory(self, *, worker, episode, agent_id, policy_id, policies,
                                  postprocessed_batch, original_batches, **kwargs) -> None:
        """Called after a policy postprocessed one agent's trajectory.

        `postprocessed_batch` may be modified in place. `original_batches` maps each agent id
        of the episode's trajectory chunk to `(policy, batch)` before postprocessing (the
        `other_agent_batches` format of `Policy.postprocess_trajectory`).
        """

    def on_sample_end(self, *, worker, samples, **kwargs) -> None:
        """Called at the end of `RolloutWorker.sample()` with the sampled batch."""

    def on_learn_on_batch(self, *, policy, train_batch, result, **kwargs) -> None:
        """Called before a policy learns on `train_batch`; `result` may be extended in place."""

    def on_train_result(self, *, algorithm, result: dict, **kwargs) -> None:
        """Called at the end of `Algorithm.train()` with the result dict (modifiable)."""

    def on_evaluate_start(self, *, algorithm, **kwargs) -> None:
        """Called before an evaluation round."""

    def on_evaluate_end(self, *, algorithm, evaluation_metrics: dict, **kwargs) -> None:
        """Called after an evaluation round with its metrics (modifiable)."""


def make_multi_callbacks(callback_class_list: Sequence[Type[DefaultCallbacks]]
                         ) -> Type[DefaultCallbacks]:
    """A `DefaultCallbacks` class calling the hooks of several callback classes in order.

    Args:
        callback_class_list: `DefaultCallbacks` subclasses (classes, not instances).

    Returns:
        A class; its instances hold one instance of each given class. `overrides(name)` is
        True when any of the given classes overrides `name`.

    Raises:
        TypeError: An item is not a `DefaultCallbacks` subclass.

    Example:
        >>> class A(DefaultCallbacks):
        ...     def on_episode_end(self, *, episode, **kwargs):
        ...         episode.append("A")
        >>> class B(DefaultCallbacks):
        ...     def on_episode_end(self, *, episode, **kwargs):
        ...         episode.append("B")
        >>> calls = []
        >>> make_multi_callbacks([A, B])().on_episode_end(episode=calls)
        >>> calls
        ['A', 'B']
    """
    classes: List[Type[DefaultCallbacks]] = list(callback_class_list)
    for c in classes:
        if not (isinstance(c, type) and issubclass(c, DefaultCallbacks)):
            raise TypeError(
                "make_multi_callbacks expects DefaultCallbacks subclasses (classes, not "
                f"instances). Received: {c!r}."
            )

    def _forward(name):
        def hook(self, **kwargs):
            for callbacks in self._callbacks_list:
                getattr(callbacks, name)(**kwargs)
        hook.__name__ = name
        return hook

    def __init__(self, legacy_callbacks_dict=None):
        DefaultCallbacks.__init__(self, legacy_callbacks_dict)
        self._callbacks_list = [c() for c in classes]

    namespace = {"__init__": __init__}
    for name in HOOK_NAMES:
        if any(c.overrides(name) for c in classes):
            namespace[name] = _forward(name)
    return type("MultiCallbacks", (DefaultCallbacks,), namespace)
