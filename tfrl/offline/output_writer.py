"""OutputWriter: where a rollout worker writes the experiences it samples.

`RolloutWorker(output_creator=...)` takes an `IOContext -> OutputWriter` function; the
worker calls `write(batch)` with every batch it samples (before compression). The default
`NoopOutput` discards them.

Example:
    >>> class Collect(OutputWriter):
    ...     def __init__(self):
    ...         self.batches = []
    ...     def write(self, sample_batch):
    ...         self.batches.append(sample_batch)
    >>> out = Collect()
    >>> out.write({"obs": [1]}); NoopOutput().write({"obs": [1]})
    >>> len(out.batches)
    1
"""

import abc
from typing import Any


class OutputWriter(abc.ABC):
    """The interface of experience sinks of rollout workers."""

    @abc.abstractmethod
    def write(self, sample_batch: Any) -> None:
        """Saves a batch of experiences (a SampleBatch or MultiAgentBatch)."""


class NoopOutput(OutputWriter):
    """Discards every batch."""

    def write(self, sample_batch: Any) -> None:
        pass
