"""PolicyMap: the policies of a rollout worker, by policy id, with the specs that built them.

A `dict` (PolicyID -> Policy) that also remembers, for each policy, the `PolicySpec` it was
built from (with the env's *original* observation space, before preprocessing), so the
worker can save it and rebuild the policy elsewhere (`RolloutWorker.restore`).

Unlike RLlib's PolicyMap, policies are never swapped out to disk: `capacity` is accepted
for compatibility and only checked.

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

from typing import Any, Dict, Optional

from tfrl.policy.policy import PolicySpec


class PolicyMap(dict):
    """PolicyID -> Policy, plus `policy_specs` (PolicyID -> PolicySpec).

    Args:
        capacity: RLlib's number of policies kept in memory before swapping to disk;
            tfrl keeps every policy in memory, so it only has to be None or >= 1.
        worker_index: Index of the owning worker (for messages).
    """

    def __init__(self, capacity: Optional[int] = None, worker_index: int = 0):
        super().__init__()
        if capacity is not None and (not isinstance(capacity, int) or capacity < 1):
            raise ValueError(f"PolicyMap capacity must be None or an int >= 1; received {capacity!r}.")
        self.capacity = capacity
        self.worker_index = worker_index
        self.policy_specs: Dict[Any, PolicySpec] = {}

    def __getitem__(self, policy_id: Any) -> Any:
        try:
            return dict.__getitem__(self, policy_id)
        except KeyError:
            raise KeyError(
                f"No policy {policy_id!r} in the policy map of worker {self.worker_index}; its "
                f"policies are {sorted(self, key=repr)}."
            ) from None

    def __delitem__(self, policy_id: Any) -> None:
        self[policy_id]  # the error above for unknown ids
        dict.__delitem__(self, policy_id)
        self.policy_specs.pop(policy_id, None)

    def __repr__(self) -> str:
        return f"PolicyMap({ {pid: type(p).__name__ for pid, p in self.items()} })"
