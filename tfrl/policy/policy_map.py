"""PolicyMap: the policies of a rollout worker, by policy id, with the specs that built them.

A `dict` (PolicyID -> Policy) that also remembers, for each policy, the `PolicySpec` it was
built from (with the env's *original* observation space, before preprocessing), so the
worker can save it and rebuild the policy elsewhere (`RolloutWorker.restore`).

Unlike RLlib's PolicyMap, policies are never swapped out to disk. RLlib's views of its
least-recently-used cache are kept: `deque` (the ids of the `capacity` most recently
set or read policies, oldest first), `cache` (those policies) and `valid_keys` (every
id); every policy stays in memory, so reading one never restores it from disk.

Example:
    >>> import gymnasium as gym
    >>> from tfrl.policy.policy import PolicySpec
    >>> pm = PolicyMap()
    >>> pm["p"] = object()
    >>> pm.policy_specs["p"] = PolicySpec(None, gym.spaces.Discrete(2), gym.spaces.Discrete(2))
    >>> list(pm), pm.policy_specs["p"].action_space
    (['p'], Discrete(2))
    >>> del pm["p"]
    >>> pm.policy_specs
    {}
"""

import collections
from typing import Any, Dict, Optional, Set

from tfrl.policy.policy import PolicySpec


class PolicyMap(dict):
    """PolicyID -> Policy, plus `policy_specs` (PolicyID -> PolicySpec).

    Args:
        capacity: RLlib's number of policies kept in memory before swapping to disk;
            tfrl keeps every policy in memory, so it only sizes `deque` and `cache` and
            has to be None (all policies) or >= 1.
        worker_index: Index of the owning worker (for messages).
        policies_swappable, policy_states_are_swappable: RLlib's switch for swapping
            policy states instead of policies; accepted, without effect.
    """

    def __init__(self, capacity: Optional[int] = None, worker_index: int = 0, *,
                 policies_swappable: bool = False, policy_states_are_swappable: bool = False):
        super().__init__()
        if capacity is not None and (not isinstance(capacity, int) or capacity < 1):
            raise ValueError(f"PolicyMap capacity must be None or an int >= 1; received {capacity!r}.")
        self.capacity = capacity
        self.worker_index = worker_index
        self.policy_specs: Dict[Any, PolicySpec] = {}
        # Policy ids in the order they were last set or read (the last is the newest).
        self._recent: Dict[Any, None] = {}

    def __getitem__(self, policy_id: Any) -> Any:
        try:
            policy = dict.__getitem__(self, policy_id)
        except KeyError:
            raise KeyError(
                f"No policy {policy_id!r} in the policy map of worker {self.worker_index}; its "
                f"policies are {sorted(self, key=repr)}."
            ) from None
        recent = self._recent
        recent.pop(policy_id, None)
        recent[policy_id] = None
        return policy

    def __setitem__(self, policy_id: Any, policy: Any) -> None:
        dict.__setitem__(self, policy_id, policy)
        self._recent.pop(policy_id, None)
        self._recent[policy_id] = None

    def __delitem__(self, policy_id: Any) -> None:
        self[policy_id]  # the error above for unknown ids
        dict.__delitem__(self, policy_id)
        self._recent.pop(policy_id, None)
        self.policy_specs.pop(policy_id, None)

    @property
    def deque(self) -> collections.deque:
        """The ids of the `capacity` most recently set or read policies, oldest first
        (RLlib's in-memory LRU order)."""
        ids = [pid for pid in self._recent if dict.__contains__(self, pid)]
        return collections.deque(ids[-self.capacity:] if self.capacity else ids)

    @property
    def cache(self) -> Dict[Any, Any]:
        """`{policy id: policy}` of `deque`, in its order."""
        return {pid: dict.__getitem__(self, pid) for pid in self.deque}

    @property
    def valid_keys(self) -> Set[Any]:
        """Every policy id of the map."""
        return set(dict.keys(self))

    def __repr__(self) -> str:
        return f"PolicyMap({ {pid: type(p).__name__ for pid, p in self.items()} })"
