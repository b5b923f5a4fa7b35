"""RandomPolicy: acts uniformly at random in its action space and learns nothing.

Useful as an opponent in multi-agent envs, as a baseline, and to exercise sampling and
serving code without a model.

Example:
    >>> import gymnasium as gym
    >>> import numpy as np
    >>> policy = RandomPolicy(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(3), {"seed": 0})
    >>> actions, state_outs, extras = policy.compute_actions(np.zeros((4, 2), np.float32))
    >>> actions.shape, state_outs, extras
    ((4,), [], {})
"""

from typing import Any, Dict, List, Optional, Tuple

import gymnasium as gym
import numpy as np
import tree

from tfrl.policy.policy import Policy
from tfrl.utils.spaces.space_utils import batch


class RandomPolicy(Policy):
    """A policy whose actions are samples of its action space.

    Args:
        observation_space: Observation space of one agent.
        action_space: Action space of one agent.
        config: Policy config. Keys used: `"seed"` (seeds the action space; default
            None), `"ignore_action_bounds"` (sample a Box space as if it had no
            bounds, from a standard normal, as RLlib's RandomPolicy; default False).
    """

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Optional[dict] = None):
        super().__init__(observation_space, action_space, config)
        if self.config.get("ignore_action_bounds") and isinstance(action_space, gym.spaces.Box):
            # As RLlib: sample an unbounded Box of the same shape (standard normal), so
            # actions fall outside the space's bounds (to test clipping/normalization).
            self._sampling_space = gym.spaces.Box(-np.inf, np.inf, action_space.shape,
                                                  dtype=action_space.dtype)
        else:
            self._sampling_space = action_space
        self._sampling_space.seed(self.config.get("seed"))

    def compute_actions(self, obs_batch: Any, state_batches: Optional[List[Any]] = None,
                        explore: Optional[bool] = None, **kwargs) -> Tuple[Any, List[Any], Dict]:
        """Returns `(actions, [], {})`, one random action per row of `obs_batch`."""
        n = len(tree.flatten(obs_batch)[0])
        actions = [self._sampling_space.sample() for _ in range(n)]
        self.global_timestep += n  # every policy counts the rows it acted on
        return batch(actions) if actions else np.zeros((0,)), [], {}

    def get_initial_state(self) -> List[Any]:
        """No recurrent state: `[]`."""
        return []

    def learn_on_batch(self, samples: Any) -> dict:
        """Learns nothing; returns `{}`."""
        return {}

    def get_weights(self) -> Dict[str, np.ndarray]:
        """No weights: `{}`."""
        return {}

    def set_weights(self, weights: Dict[str, np.ndarray]) -> None:
        """Accepts (and ignores) weights."""

    def postprocess_trajectory(self, sample_batch: Any, other_agent_batches: Any = None,
                               episode: Any = None) -> Any:
        """Returns the batch unchanged."""
        return sample_batch

