"""What the policy server checks before it accepts data from a client.

A client is code tfrl does not control. Whatever the server answers 200 to must be
usable by the next `train()`: an uploaded batch that lacks a column the loss reads,
holds an action outside the action space or a NaN reward fails (or, worse, silently
trains NaN weights) long after the request was answered. So the server applies the
sampler's checks at the door, and a batch is either fully valid or not taken:

- every numeric value a client sends (observations, rewards, uploaded columns) is
  finite;
- observations lie in the observation space (structure, shape, numeric dtype,
  bounds), actions in the action space (integer dtypes for discrete spaces);
- an uploaded batch has exactly the columns, dtype kinds and row shapes of the
  batches the server's own inference loop produces for the same policy (found once,
  by running one short trajectory through the policy's `compute_actions` and
  `postprocess_trajectory`), and consistent column lengths.

Example:
    >>> import gymnasium as gym
    >>> import numpy as np
    >>> space = gym.spaces.Discrete(2)
    >>> batch_error(space, np.array([0, 1, 7]), "actions", integral=True)
    'actions[2] is 7, not an integer in [0, 2) (the space is Discrete(2))'
    >>> nonfinite_error({"pos": [0.0, float("nan")]}, "observation")
    "observation['pos'][1] holds a non-finite number (nan)"
"""

import copy
import logging
import math
import numbers
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np
import tree

from tfrl.env import policy_protocol as P
from tfrl.env.single_agent_episode import SingleAgentEpisode
from tfrl.env.space_checks import observation_error
from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch

logger = logging.getLogger(__name__)
_SIMPLE = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
# Columns every uploaded batch needs even when the reference batch cannot be built.
_BASE_COLUMNS = (SampleBatch.OBS, SampleBatch.ACTIONS, SampleBatch.REWARDS)
# Columns whose values must lie in the observation / action space.
_OBS_COLUMNS = (SampleBatch.OBS, SampleBatch.NEXT_OBS)


class InvalidData(P.BadRequest):
    """Client data the server refuses (HTTP 400); the message names the field."""


def nonfinite_error(value: Any, what: str) -> Optional[str]:
    """Returns where `value` (a number, array or nest of them) holds NaN or inf, or None."""
    if isinstance(value, dict):
        for key, sub in value.items():
            problem = nonfinite_error(sub, f"{what}[{key!r}]")
            if problem:
                return problem
        return None
    if isinstance(value, (list, tuple)) and not _is_flat_numbers(value):
        for i, sub in enumerate(value):
            problem = nonfinite_error(sub, f"{what}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        return None
    if arr.dtype.kind not in "fc":
        return None
    bad = ~np.isfinite(arr)
    if not bad.any():
        return None
    if arr.ndim == 0:
        return f"{what} is not finite ({arr.item()!r})"
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = what + "".join(f"[{i}]" for i in index)
    return f"{where} holds a non-finite number ({arr[index].item()!r})"


def batch_error(space: gym.Space, batch: Any, what: str, *, integral: bool = False
                ) -> Optional[str]:
    """Returns why a `[B, ...]` batch of values is not in `space` (first bad row), or None.

    Args:
        space: The (observation or action) space of one row.
        batch: The batch (a dict/tuple of batches for Dict/Tuple spaces).
        what: The column name used in the message (e.g. "obs").
        integral: Require integer dtypes for Discrete/MultiDiscrete/MultiBinary
            (actions; observations may be integer-valued floats, as the sampler allows).
    """
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(batch, dict) or set(batch) != set(space.spaces):
            keys = sorted(map(str, batch)) if isinstance(batch, dict) else type(batch).__name__
            return f"{what} has keys {keys}, expected {sorted(space.spaces)}"
        for key, sub in space.spaces.items():
            problem = batch_error(sub, batch[key], f"{what}[{key!r}]", integral=integral)
            if problem:
                return problem
        return None
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(batch, (tuple, list)) or len(batch) != len(space.spaces):
            return f"{what} is not a tuple of {len(space.spaces)} items"
        for i, sub in enumerate(space.spaces):
            problem = batch_error(sub, batch[i], f"{what}[{i}]", integral=integral)
            if problem:
                return problem
        return None
    if not isinstance(space, _SIMPLE):
        return None
    arr = np.asarray(batch)
    if arr.dtype.kind not in "biuf":
        return f"{what} has dtype {arr.dtype}, expected numbers of dtype {space.dtype}"
    if arr.ndim == 0 or arr.shape[1:] != tuple(space.shape):
        return (f"{what} has rows of shape {arr.shape[1:]}, expected {tuple(space.shape)} "
                f"(the space is {space})")
    if isinstance(space, gym.spaces.Box):
        bad = ~((arr >= space.low) & (arr <= space.high))
        expected = f"in [{space.low.min()}, {space.high.max()}] and finite"
    else:
        if integral and arr.dtype.kind not in "biu":
            return (f"{what} has dtype {arr.dtype}, expected integers (the space is {space})")
        if isinstance(space, gym.spaces.Discrete):
            low, high = space.start, space.start + space.n
            expected = f"an integer in [{low}, {high})"
        elif isinstance(space, gym.spaces.MultiDiscrete):
            low, high = space.start, space.start + space.nvec
            expected = "integers in [start, start + nvec)"
        else:
            low, high = 0, 2
            expected = "0 or 1"
        bad = (arr < low) | (arr >= high) | (arr != np.floor(arr)) | ~np.isfinite(arr)
    if not bad.any():
        return None
    row = int(np.argwhere(bad)[0][0])
    return f"{what}[{row}] is {_short(arr[row])}, not {expected} (the space is {space})"


def observation_problem(space: Optional[gym.Space], observation: Any) -> Optional[str]:
    """Why one observation is not in `space` (None: only finiteness is checked), or
    None: non-finite numbers, structure and shape (as external envs check them), then
    bounds (as the sampler checks an env's observations)."""
    problem = nonfinite_error(observation, "observation")
    if problem or space is None:
        return problem
    problem = observation_error(space, observation)
    if problem:
        return problem
    problem = batch_error(space, _as_one_row(space, observation), "observation")
    return problem.replace("observation[0] is", "observation is", 1) if problem else None


def _as_one_row(space: gym.Space, value: Any) -> Any:
    """`value` as a batch of one row, following the structure of `space`."""
    if isinstance(space, gym.spaces.Dict):
        return {k: _as_one_row(sub, value[k]) for k, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_as_one_row(sub, v) for sub, v in zip(space.spaces, value))
    return np.asarray(value)[None]


def reward_error(reward: Any, what: str = "reward") -> Optional[str]:
    """Returns why a LOG_RETURNS reward (a number, or a dict agent -> number) is bad."""
    if isinstance(reward, dict):
        for key, value in reward.items():
            problem = reward_error(value, f"{what}[{key!r}]")
            if problem:
                return problem
        return None
    if isinstance(reward, (bool, np.bool_)) or not isinstance(reward, (numbers.Real, np.ndarray)):
        return f"{what} must be a finite number; received {_short(reward)}"
    arr = np.asarray(reward)
    if arr.ndim != 0 or arr.dtype.kind not in "iuf":
        return f"{what} must be a finite number; received {_short(reward)}"
    if not math.isfinite(float(arr)):
        return f"{what} must be a finite number; received {float(arr)!r}"
    return None


class BatchValidator:
    """Checks uploaded batches against what the server's own loop would produce.

    Args:
        policies: Policy id -> policy (`observation_space`, `action_space`,
            `compute_actions`, optionally `postprocess_trajectory`).
        multiagent: Whether uploads are MultiAgentBatches.
        policy_lock: Held while the reference batch runs through a policy.
    """

    def __init__(self, policies: Dict[str, Any], multiagent: bool, policy_lock: Any):
        self.policies = policies
        self.multiagent = multiagent
        self.policy_lock = policy_lock
        self._reference: Dict[str, Optional[Dict[str, Any]]] = {}

    def check(self, batch: Any, where: str) -> None:
        """Raises InvalidData (naming `where`, the column and the value) for a bad batch."""
        expected = MultiAgentBatch if self.multiagent else SampleBatch
        if not isinstance(batch, expected):
            raise InvalidData(f"{where} must be a {expected.__name__}; received "
                              f"{type(batch).__name__}.")
        if self.multiagent:
            per_policy = batch.policy_batches
            rows = sum(len(b) for b in per_policy.values())
            if batch.count > rows or (rows and batch.count < 1):
                raise InvalidData(f"{where}: env_steps={batch.count} does not fit the {rows} "
                                  "agent steps of the batch (expected 1 <= env_steps <= "
                                  "agent steps).")
        else:
            per_policy = {next(iter(self.policies)): batch}
        for pid, policy_batch in per_policy.items():
            if pid not in self.policies:
                raise InvalidData(f"{where} has data of unknown policy {pid!r}; known: "
                                  f"{sorted(self.policies)}.")
            label = f"{where}[{pid!r}]" if self.multiagent else where
            self._check_policy_batch(pid, policy_batch, label)

    def _check_policy_batch(self, pid: str, batch: SampleBatch, where: str) -> None:
        policy = self.policies[pid]
        reference = self.reference(pid)
        columns = set(batch.keys())
        if reference is None:
            missing = sorted(set(_BASE_COLUMNS) - columns)
            extra = []
        else:
            missing = sorted(set(reference) - columns)
            extra = sorted(columns - set(reference))
        if missing or extra:
            raise InvalidData(
                f"{where} has columns {sorted(columns)}: missing {missing}, unexpected {extra}. "
                f"Policy {pid!r} trains on batches with exactly the columns "
                f"{sorted(reference or _BASE_COLUMNS)} (what its postprocess_trajectory "
                "returns; PolicyClient uploads them in local inference mode).")
        n = len(batch)
        for column in sorted(columns):
            value = batch[column]
            for leaf in tree.flatten(value):
                arr = np.asarray(leaf)
                if arr.ndim == 0 or len(arr) != n:
                    raise InvalidData(f"{where}: column {column!r} has {_length(arr)} rows, "
                                      f"expected {n} (every column needs one value per row).")
            if column in _OBS_COLUMNS:
                problem = batch_error(policy.observation_space, value, column)
            elif column == SampleBatch.ACTIONS:
                problem = batch_error(policy.action_space, value, column, integral=True)
            else:
                problem = nonfinite_error(value, column)
            if problem:
                raise InvalidData(f"{where}: {problem}.")
            if reference is not None:
                self._check_like_reference(column, value, reference[column], where)

    @staticmethod
    def _check_like_reference(column: str, value: Any, reference: Any, where: str) -> None:
        try:
            received = tree.flatten_up_to(reference, value)
        except (ValueError, TypeError):
            raise InvalidData(f"{where}: column {column!r} does not have the structure of "
                              f"the policy's {column!r} column.") from None
        for got, spec in zip(received, tree.flatten(reference)):
            got = np.asarray(got)
            if spec.dtype.kind == "O":
                continue
            if spec.dtype.kind in "US":
                ok = got.dtype.kind in "US"
            elif spec.dtype.kind == "b":
                ok = got.dtype.kind == "b"
            else:
                ok = got.dtype.kind in "biuf" and np.can_cast(got.dtype, spec.dtype, "same_kind")
            if not ok:
                raise InvalidData(f"{where}: column {column!r} has dtype {got.dtype}, expected "
                                  f"{spec.dtype} (or a dtype that casts to it safely).")
            if got.shape[1:] != spec.row_shape:
                raise InvalidData(f"{where}: column {column!r} has rows of shape "
                                  f"{got.shape[1:]}, expected {spec.row_shape}.")

    def reference(self, pid: str) -> Optional[Dict[str, Any]]:
        """Column -> (numpy dtype, row shape) (nested like the column) of the batches the
        server's own loop produces for policy `pid`; None if they cannot be computed."""
        if pid not in self._reference:
            try:
                with self.policy_lock:
                    batch = reference_batch(self.policies[pid], self.multiagent)
                self._reference[pid] = {c: tree.map_structure(_LeafSpec, v)
                                        for c, v in batch.items()}
            except Exception:  # pylint: disable=broad-except
                logger.warning("Cannot compute the columns policy %r trains on; uploaded "
                               "batches are checked for %s only.", pid, list(_BASE_COLUMNS),
                               exc_info=True)
                self._reference[pid] = None
        return self._reference[pid]


def reference_batch(policy: Any, multiagent: bool) -> SampleBatch:
    """A two-step trajectory recorded and postprocessed as `ExternalEnvRunner` does it.

    Observations are sampled (seeded) from the policy's observation space; actions
    come from `compute_actions(explore=False)`.
    """
    space = policy.observation_space
    sampler = copy.deepcopy(space)  # seeding the policy's own space would change its RNG
    sampler.seed(0)
    obs = [sampler.sample() for _ in range(3)]
    episode = SingleAgentEpisode("reference", observation_space=space,
                                 action_space=policy.action_space,
                                 agent_id="agent0" if multiagent else None,
                                 len_lookback_buffer=0)
    episode.add_env_reset(obs[0], {})
    for t in range(2):
        batch_obs = tree.map_structure(lambda *o: np.stack(o), obs[t])
        actions, _, extras = policy.compute_actions(batch_obs, explore=False)
        action = tree.map_structure(lambda a: a[0], actions)
        episode.add_env_step(obs[t + 1], action, 0.0, {}, terminated=t == 1, truncated=False,
                             extra_model_outputs={k: tree.map_structure(lambda v: v[0], v)
                                                  for k, v in (extras or {}).items()})
    batch = episode.get_sample_batch()
    if hasattr(policy, "postprocess_trajectory"):
        batch = policy.postprocess_trajectory(batch)
    return batch


class _LeafSpec:
    """dtype and row shape of one array of a reference column (a tree leaf)."""

    __slots__ = ("dtype", "row_shape")

    def __init__(self, value: Any):
        arr = np.asarray(value)
        self.dtype, self.row_shape = arr.dtype, arr.shape[1:]


def _is_flat_numbers(items: Any) -> bool:
    return all(isinstance(v, numbers.Number) for v in items)


def _length(arr: np.ndarray) -> Any:
    return "no" if arr.ndim == 0 else len(arr)


def _short(value: Any) -> str:
    text = repr(value.tolist() if isinstance(value, (np.ndarray, np.generic)) else value)
    return text if len(text) <= 80 else text[:77] + "..."
