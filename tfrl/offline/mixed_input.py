"""ShuffledInput and MixedInput: input readers built from other readers (RLlib's names).

- `ShuffledInput(child, n)` keeps a buffer of `n` batches and returns a random one,
  replacing it by the child's next batch (`n <= 1`: the child's order);
- `MixedInput({source: probability}, ioctx)` draws each batch from one of several
  sources ("sampler", a JSON path/glob/list, or a callable `IOContext -> InputReader`)
  with the given probabilities (they must sum to 1).

Example:
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> class Count(InputReader):
    ...     i = 0
    ...     def next(self):
    ...         self.i += 1
    ...         return SampleBatch(obs=[self.i])
    >>> reader = ShuffledInput(Count(), n=4, seed=0)
    >>> sorted(int(reader.next()["obs"][0]) for _ in range(4)) != [1, 2, 3, 4]
    True
"""

import math
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from tfrl.offline.input_reader import InputReader
from tfrl.offline.io_context import IOContext
from tfrl.offline.json_reader import JsonReader
from tfrl.utils.checks import check_int


class ShuffledInput(InputReader):
    """Randomizes the order of a reader's batches with a buffer of `n` batches.

    Args:
        child: The reader to shuffle.
        n: Buffer size (batches); 0 or 1 passes the child's batches through.
        seed: Seed of the buffer's random draws.
    """

    def __init__(self, child: InputReader, n: int = 0, seed: Optional[int] = None):
        check_int(n, "ShuffledInput: n", 0)
        self.child = child
        self.n = n
        self.buffer: List[Any] = []
        self._rng = np.random.default_rng(seed)

    def next(self) -> Any:
        """A random batch of the buffer (refilled from the child)."""
        if self.n <= 1:
            return self.child.next()
        while len(self.buffer) < self.n:
            self.buffer.append(self.child.next())
        i = int(self._rng.integers(len(self.buffer)))
        batch, self.buffer[i] = self.buffer[i], self.child.next()
        return batch


def source_reader(source: Any, ioctx: IOContext) -> Any:
    """The InputReader of one `input` source: "sampler", a JSON path/glob/list, or a
    callable `IOContext -> InputReader`."""
    if isinstance(source, str) and source == "sampler":
        return ioctx.default_sampler_input()
    if callable(source):
        return source(ioctx)
    return JsonReader(source, ioctx)


class MixedInput(InputReader):
    """Draws each batch from one of several sources with fixed probabilities.

    Args:
        dist: `{source: probability}`; sources as `source_reader` takes them.
        ioctx: The worker's IOContext.

    Raises:
        ValueError: If the probabilities are negative or do not sum to 1.
    """

    def __init__(self, dist: Dict[Any, float], ioctx: Optional[IOContext] = None):
        check_mixed_input(dist)
        ioctx = ioctx or IOContext()
        self.choices = [source_reader(source, ioctx) for source in dist]
        self.p = np.asarray(list(dist.values()), dtype=np.float64)
        seed = ioctx.config.get("seed")
        self._rng = np.random.default_rng(None if seed is None else [int(seed), 7])

    def next(self) -> Any:
        """The next batch of a source drawn with the given probabilities."""
        i = int(self._rng.choice(len(self.choices), p=self.p))
        reader = self.choices[i]
        if reader is None:
            raise ValueError("MixedInput: the 'sampler' source needs a worker with an env.")
        return reader.next()


def check_mixed_input(dist: Any) -> None:
    """Raises a ValueError unless `dist` is a dict of sources to probabilities summing
    to 1."""
    if not isinstance(dist, dict) or not dist:
        raise ValueError(f"A mixed `input` must be a non-empty dict source -> probability; "
                         f"received {dist!r}.")
    for source, p in dist.items():
        if isinstance(p, bool) or not isinstance(p, (int, float)) or p < 0:
            raise ValueError(f"`input` mix: the probability of {source!r} must be a number "
                             f">= 0; received {p!r}.")
    total = float(sum(dist.values()))
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise ValueError(f"`input` mix: the probabilities must sum to 1.0; they sum to {total} "
                         f"in {dist!r}.")


InputCreator = Callable[[IOContext], Any]
