"""What the policy server checks before it accepts data from a client.

A client is code tfrl does not control. Whatever the server answers 200 to must be
usable by the next `train()`: an uploaded batch that lacks a column the loss reads,
holds an action outside the action space or a NaN reward fails (or, worse, silently
trains NaN weights) long after the request was answered. So the server applies the
sampler's checks at the door, and a batch is either fully valid or not taken:

- every numeric value a client sends (observations, actions, rewards, uploaded
  columns, episode metrics) is finite and fits the dtype it will be stored in (a
  float64 of 1e39 is finite but becomes inf in a float32 column);
- uploaded episode metrics are numbers (custom metrics, perf stats, hist data) in
  dicts of bounded size (`episode_metrics_error`);
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
    >>> reward_error(1e39)
    'reward is 1e+39, outside the float32 range [-3.4028235e+38, 3.4028235e+38] it is stored in'
"""

import copy
import logging
import math
import numbers
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np
import tree

from tfrl.serving import policy_protocol as P
from tfrl.env import space_checks
from tfrl.env.space_checks import discrete_bounds, nonfinite_error, observation_error, range_error
from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.evaluation.sampling.collectors import AgentCollector

logger = logging.getLogger(__name__)
_SIMPLE = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
# Columns every uploaded batch needs even when the reference batch cannot be built.
_BASE_COLUMNS = (SampleBatch.OBS, SampleBatch.ACTIONS, SampleBatch.REWARDS)
# Columns whose values must lie in the observation / action space.
_OBS_COLUMNS = (SampleBatch.OBS, SampleBatch.NEXT_OBS)
# The dtype rewards and float columns are stored in when nothing else says so.
_FLOAT_DTYPE = np.dtype(np.float32)
# Bounds of uploaded episode metrics (per episode record).
MAX_METRIC_KEYS = 256  # keys of each dict field (custom_metrics, perf_stats, ...)
MAX_METRIC_NAME = 128  # characters of a metric name
MAX_HIST_VALUES = 10_000  # numbers in all hist_data lists of an episode
MAX_MEDIA_BYTES = 2**20  # bytes of all media values of an episode
MAX_EPISODE_LENGTH = 2**31 - 1
_METRICS_NUMBER_DICTS = ("custom_metrics", "perf_stats")


class InvalidData(P.BadRequest):
    """Client data the server refuses (HTTP 400); the message names the field."""


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
        if not bad.any():
            problem = range_error(arr, what, space.dtype)
            if problem:
                return problem + f" (the space is {space})"
    else:
        if integral and arr.dtype.kind not in "biu":
            return (f"{what} has dtype {arr.dtype}, expected integers (the space is {space})")
        low, high, expected = discrete_bounds(space)
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
    if problem and problem.startswith("observation[0]"):
        problem = "observation" + problem[len("observation[0]"):]
    return problem


def space_range_error(space: gym.Space, value: Any, what: str) -> Optional[str]:
    """Where the floats of one `value` of `space` overflow the float dtype of its Box
    (e.g. an action of 1e39 for a float32 Box with infinite bounds), or None."""
    if isinstance(space, gym.spaces.Dict) and isinstance(value, dict):
        for key, sub in space.spaces.items():
            problem = space_range_error(sub, value.get(key), f"{what}[{key!r}]")
            if problem:
                return problem
        return None
    if isinstance(space, gym.spaces.Tuple) and isinstance(value, (list, tuple)):
        for i, (sub, v) in enumerate(zip(space.spaces, value)):
            problem = space_range_error(sub, v, f"{what}[{i}]")
            if problem:
                return problem
        return None
    if not isinstance(space, gym.spaces.Box) or value is None:
        return None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        return None
    return range_error(arr, what, space.dtype)


def _as_one_row(space: gym.Space, value: Any) -> Any:
    """`value` as a batch of one row, following the structure of `space`."""
    if isinstance(space, gym.spaces.Dict):
        return {k: _as_one_row(sub, value[k]) for k, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_as_one_row(sub, v) for sub, v in zip(space.spaces, value))
    return np.asarray(value)[None]


def reward_error(reward: Any, what: str = "reward") -> Optional[str]:
    """Returns why a LOG_RETURNS reward (a number, or a dict agent -> number) is bad: the
    external env's own check (`tfrl.env.space_checks.reward_error`) on each number."""
    if isinstance(reward, dict):
        for key, value in reward.items():
            problem = reward_error(value, f"{what}[{key!r}]")
            if problem:
                return problem
        return None
    return space_checks.reward_error(reward, what)


def number_error(value: Any, what: str) -> Optional[str]:
    """Why `value` is not a finite real number within the float32 range (a metric,
    stored and summarised as a float), or None."""
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"{what} must be a number; received {_short(value)}"
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        return f"{what} must be a finite number; received {_short(value)}"
    return range_error(np.float64(number), what, _FLOAT_DTYPE)


def episode_metrics_error(metrics: Any) -> Optional[str]:
    """Why an uploaded episode-metrics dict (RolloutMetrics fields) would not aggregate,
    or None: `episode_length` an int in [0, 2**31), `episode_reward` and the values of
    `agent_rewards`, `custom_metrics` and `perf_stats` finite numbers in the float32
    range, `hist_data` values lists of such numbers, `media` values numbers, strings or
    numeric arrays; at most `MAX_METRIC_KEYS` keys per dict, names of at most
    `MAX_METRIC_NAME` characters, `MAX_HIST_VALUES` hist numbers and `MAX_MEDIA_BYTES`
    of media per episode, `episode_faulty` a bool.

    The caller has checked the field names and that the dict fields are dicts.
    """
    length = metrics["episode_length"]
    if isinstance(length, bool) or not isinstance(length, numbers.Integral) or length < 0:
        return f"episode_length must be an int >= 0; received {_short(length)}"
    if length > MAX_EPISODE_LENGTH:
        return (f"episode_length must be at most {MAX_EPISODE_LENGTH}; received "
                f"{_short(length)}")
    problem = number_error(metrics["episode_reward"], "episode_reward")
    if problem:
        return problem
    if not isinstance(metrics.get("episode_faulty", False), bool):
        return f"episode_faulty must be a bool; received {_short(metrics['episode_faulty'])}"
    hist_values, media_bytes = 0, 0
    for field in ("agent_rewards", "custom_metrics", "perf_stats", "hist_data", "media"):
        values = metrics.get(field) or {}
        if len(values) > MAX_METRIC_KEYS:
            return f"{field} has {len(values)} keys; at most {MAX_METRIC_KEYS} are accepted"
        for key, value in values.items():
            if field == "agent_rewards":
                name = f"{field}[{_short(key)}]"
            elif not isinstance(key, str) or len(key) > MAX_METRIC_NAME:
                return (f"{field} keys must be names of at most {MAX_METRIC_NAME} "
                        f"characters; received {_short(key)}")
            else:
                name = f"{field}[{key!r}]"
            if field in ("agent_rewards",) + _METRICS_NUMBER_DICTS:
                problem = number_error(value, name)
            elif field == "hist_data":
                problem, n = _hist_error(value, name)
                hist_values += n
                if not problem and hist_values > MAX_HIST_VALUES:
                    problem = (f"hist_data holds more than {MAX_HIST_VALUES} numbers; "
                               "fewer are accepted per episode")
            else:
                problem, n = _media_error(value, name)
                media_bytes += n
                if not problem and media_bytes > MAX_MEDIA_BYTES:
                    problem = (f"media holds more than {MAX_MEDIA_BYTES} bytes; less is "
                               "accepted per episode")
            if problem:
                return problem
    return None


def _hist_error(value: Any, what: str):
    """(problem or None, count of numbers) of one hist_data entry."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        return f"{what} must be a list of numbers; received {_short(value)}", 0
    if len(value) > MAX_HIST_VALUES:
        return None, len(value)
    for i, item in enumerate(value):
        problem = number_error(item, f"{what}[{i}]")
        if problem:
            return problem, 0
    return None, len(value)


def _media_error(value: Any, what: str):
    """(problem or None, bytes) of one media value."""
    if isinstance(value, str):
        return None, len(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return nonfinite_error(value, what), value.nbytes
    problem = number_error(value, what)
    if problem:
        return (f"{what} must be a number, a str or a numeric array; received "
                f"{_short(value)}"), 0
    return None, 8


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
                problem = nonfinite_error(value, column, self._float_dtype(reference, column))
            if problem:
                raise InvalidData(f"{where}: {problem}.")
            if reference is not None:
                self._check_like_reference(column, value, reference[column], where)

    @staticmethod
    def _float_dtype(reference: Optional[Dict[str, Any]], column: str) -> Any:
        """The float dtype the column is stored in: the reference's (when it has one
        float dtype), float32 for rewards without a reference; None: no range check."""
        if reference is None or column not in reference:
            return _FLOAT_DTYPE if column == SampleBatch.REWARDS else None
        kinds = {spec.dtype for spec in tree.flatten(reference[column])
                 if spec.dtype.kind == "f"}
        return min(kinds, key=lambda d: d.itemsize) if kinds else None

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
    come from `compute_actions(explore=False)`. The columns are the same with or
    without `multiagent` (a MultiAgentBatch holds the same per-policy batches).
    """
    space = policy.observation_space
    sampler = copy.deepcopy(space)  # seeding the policy's own space would change its RNG
    sampler.seed(0)
    obs = [sampler.sample() for _ in range(3)]
    collector = AgentCollector(0, "reference", (False, False),
                               spaces=(space, policy.action_space), id_columns=False)
    for t in range(2):
        batch_obs = tree.map_structure(lambda *o: np.stack(o), obs[t])
        actions, _, extras = policy.compute_actions(batch_obs, explore=False)
        collector.pending = (obs[t], tree.map_structure(lambda a: a[0], actions),
                             {k: tree.map_structure(lambda v: v[0], v)
                              for k, v in (extras or {}).items()}, None, None)
        collector.add_row(obs[t + 1], 0.0, t == 1, False, {}, t)
    batch = collector.build("reference", "reference", 0, None, None)
    if hasattr(policy, "postprocess_trajectory"):
        batch = policy.postprocess_trajectory(batch)
    return batch


class _LeafSpec:
    """dtype and row shape of one array of a reference column (a tree leaf)."""

    __slots__ = ("dtype", "row_shape")

    def __init__(self, value: Any):
        arr = np.asarray(value)
        self.dtype, self.row_shape = arr.dtype, arr.shape[1:]


def _length(arr: np.ndarray) -> Any:
    return "no" if arr.ndim == 0 else len(arr)


def _short(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an int of {value.bit_length()} bits"  # repr() of a huge int may raise
    try:
        text = repr(value.tolist() if isinstance(value, (np.ndarray, np.generic)) else value)
    except Exception:  # pylint: disable=broad-except
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."
