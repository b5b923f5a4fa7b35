"""JsonReader: reads batches from JSON-lines experience files (RLlib's JsonReader).

`inputs` is a file, a directory (all files in it), a glob pattern, or a list of those.
`next()` returns the batch of the next line; files are read whole, one after the other,
in an order shuffled afresh on every pass (seeded by `config["seed"]` and the worker
index), and the reader cycles through them forever. `read_all_files()` reads every file
once, in sorted order.

Unlike RLlib, which logs and skips a corrupt line, a line that does not decode raises a
`JsonRecordError` naming the file and the line number: nothing is dropped silently. So
does a line that is not UTF-8 text (a file that is not a JSON-lines file at all), and a
record whose observations, actions or rewards hold NaN, inf or a number that overflows
their dtype (naming the column, row and value; see `json_format.check_column_values`).
The next `next()` goes on with the following line.

With a worker in the IOContext, each batch is checked against the worker's policies:
a column the policy needs (`policy.offline_input_columns`, by default `obs` and
`actions`) must be present and observations must have the shape of the policy's
observation space; JSON-list columns get the dtypes of the policy's spaces; and with
`config["postprocess_inputs"]` each episode goes through `policy.postprocess_trajectory`
(e.g. MARWIL's returns).

Example:
    >>> import tempfile, numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> from tfrl.offline.json_writer import JsonWriter
    >>> out = tempfile.mkdtemp()
    >>> JsonWriter(out).write(SampleBatch(obs=np.ones((3, 2), np.float32), actions=[0, 1, 1]))
    >>> [b.count for b in JsonReader(out + "/*.json").read_all_files()]
    [3]
    >>> JsonReader(out + "/*.nothing")
    Traceback (most recent call last):
    ...
    ValueError: JsonReader: no files match ...
"""

import glob
import json
import logging
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from tfrl.core.columns import Columns
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch, concat_samples
from tfrl.offline.input_reader import InputReader
from tfrl.offline.io_context import IOContext
from tfrl.offline.json_format import JsonRecordError, from_json_dict

logger = logging.getLogger(__name__)

DEFAULT_REQUIRED_COLUMNS = (Columns.OBS, Columns.ACTIONS)


def resolve_files(inputs: Union[str, Sequence[str]], who: str = "JsonReader") -> List[str]:
    """The sorted files named by `inputs` (files, directories, globs, or a list of them).

    Raises:
        ValueError: If a pattern matches nothing (naming it) or `inputs` is empty.
        TypeError: If `inputs` is not a str or a list of str.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [os.fspath(inputs)]
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError(f"{who}: inputs must be a path, a directory, a glob pattern or a "
                        f"non-empty list of them; received {inputs!r}.")
    files: List[str] = []
    for item in inputs:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"{who}: every input must be a path str; received "
                            f"{type(item).__name__}: {item!r}.")
        path = os.path.expanduser(os.fspath(item))
        if os.path.isdir(path):
            matched = [f for f in glob.glob(os.path.join(path, "*")) if os.path.isfile(f)]
        elif any(c in path for c in "*?["):
            matched = [f for f in glob.glob(path) if os.path.isfile(f)]
        elif os.path.isfile(path):
            matched = [path]
        else:
            raise ValueError(f"{who}: input {item!r} is neither a file, a directory nor a "
                             "glob pattern; check the path.")
        if not matched:
            raise ValueError(f"{who}: no files match {item!r} (a directory must hold files; "
                             "a glob must match some). Check the path, or write data first "
                             "with config output=<dir>.")
        files.extend(sorted(matched))
    return files


class JsonReader(InputReader):
    """Reads SampleBatches / MultiAgentBatches from JSON-lines files.

    Args:
        inputs: A file, a directory, a glob pattern, or a list of them.
        ioctx: The worker's IOContext (its policies check and type the batches; its config
            gives `seed` and `postprocess_inputs`).

    Raises:
        ValueError: If no files match (see `resolve_files`).
    """

    def __init__(self, inputs: Union[str, Sequence[str]], ioctx: Optional[IOContext] = None):
        self.ioctx = ioctx or IOContext()
        self.files = resolve_files(inputs)
        seed = self.ioctx.config.get("seed")
        self._rng = np.random.default_rng(
            None if seed is None else [int(seed), self.ioctx.worker_index])
        self._order: List[str] = []
        self._lines: Iterator[Tuple[str, int, bytes]] = iter(())
        self.cur_file: Optional[str] = None

    # ---------------------------------------------------------------- reading
    def next(self) -> Any:
        """The batch of the next line (cycling through the files forever).

        Raises:
            JsonRecordError: For a line that does not decode or does not fit the policy.
        """
        for _ in range(2):
            for path, number, line in self._lines:
                batch = self._parse(path, number, line)
                if batch is not None:
                    return batch
            self._lines = self._next_pass()
        raise ValueError(f"JsonReader: the files {self.files} hold no records.")

    def _next_pass(self) -> Iterator[Tuple[str, int, bytes]]:
        order = list(self.files)
        self._rng.shuffle(order)
        for path in order:
            yield from _file_lines(path, self)

    def read_all_files(self) -> Iterator[Any]:
        """Every batch of every file, once, in file-name order."""
        for path in self.files:
            for _, number, line in _file_lines(path, self):
                batch = self._parse(path, number, line)
                if batch is not None:
                    yield batch

    def _parse(self, path: str, number: int, raw: bytes) -> Any:
        where = f"{path}, line {number}"
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as e:
            raise JsonRecordError(
                f"JsonReader: {where} is not UTF-8 text: byte 0x{raw[e.start]:02x} at column "
                f"{e.start + 1} cannot be decoded. Experience files are JSON-lines text as "
                "JsonWriter (config output=<dir>) writes them; remove this file from the "
                "input, or repair the line.") from None
        if not line:
            return None
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            raise JsonRecordError(
                f"JsonReader: corrupt or truncated JSON record in {where}: {e.msg} at column "
                f"{e.colno} (the line holds {len(line)} characters). Remove or repair the "
                "line; a writer that was killed leaves a partial last line.") from None
        try:
            batch = from_json_dict(data, self._spaces())
        except (ValueError, TypeError, KeyError, ImportError) as e:
            raise JsonRecordError(f"JsonReader: cannot read the record in {where}: {e}") from e
        self._check(batch, where)
        return self._postprocess(batch)

    # ---------------------------------------------------------------- policies
    def _policies(self) -> Dict[Any, Any]:
        worker = self.ioctx.worker
        policy_map = getattr(worker, "policy_map", None)
        return dict(policy_map.items()) if policy_map is not None else {}

    def _spaces(self) -> Optional[Dict[Any, Tuple[Any, Any]]]:
        policies = self._policies()
        if not policies:
            return None
        return {pid: (p.observation_space, p.action_space) for pid, p in policies.items()}

    def _check(self, batch: Any, where: str) -> None:
        policies = self._policies()
        if not policies:
            return
        if isinstance(batch, SampleBatch):
            if len(policies) != 1:
                raise JsonRecordError(
                    f"JsonReader: {where} holds a single-agent SampleBatch but the worker has "
                    f"{len(policies)} policies {sorted(policies)}; write MultiAgentBatches.")
            pairs = [(next(iter(policies)), batch)]
        else:
            pairs = list(batch.policy_batches.items())
        for pid, b in pairs:
            policy = policies.get(pid)
            if policy is None:
                raise JsonRecordError(f"JsonReader: {where} holds data of policy {pid!r}, "
                                      f"which the worker does not have ({sorted(policies)}).")
            need = getattr(policy, "offline_input_columns", DEFAULT_REQUIRED_COLUMNS)
            missing = [c for c in need if c not in b]
            if missing:
                raise JsonRecordError(
                    f"JsonReader: the record in {where} lacks the column(s) {missing} that "
                    f"{type(policy).__name__} needs; it has {sorted(b.keys())}. Write the "
                    "data with those columns.")
            space = policy.observation_space
            shape = getattr(space, "shape", None)
            obs = b.get(Columns.OBS)
            if shape is not None and isinstance(obs, np.ndarray) and obs.shape[1:] != shape:
                raise JsonRecordError(
                    f"JsonReader: observations in {where} have shape {obs.shape[1:]} per row; "
                    f"policy {pid!r} expects {shape} ({space}). The file was written for "
                    "another env or observation preprocessing.")

    def _postprocess(self, batch: Any) -> Any:
        if not self.ioctx.config.get("postprocess_inputs"):
            return batch
        policies = self._policies()
        if isinstance(batch, SampleBatch):
            pid = next(iter(policies), DEFAULT_POLICY_ID)
            return _postprocess_episodes(policies[pid], batch) if policies else batch
        return MultiAgentBatch({pid: _postprocess_episodes(policies[pid], b)
                                for pid, b in batch.policy_batches.items()}, batch.count)


def _postprocess_episodes(policy: Any, batch: SampleBatch) -> SampleBatch:
    episodes = [policy.postprocess_trajectory(ep.copy()) for ep in batch.split_by_episode()]
    return concat_samples(episodes) if len(episodes) > 1 else episodes[0]


def _file_lines(path: str, reader: JsonReader) -> Iterator[Tuple[str, int, bytes]]:
    """The file's lines as bytes (each decoded by `_parse`, so that a line that is not
    UTF-8 is reported with its number)."""
    reader.cur_file = path
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            yield path, number, line
