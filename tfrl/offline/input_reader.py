"""InputReader: the source of a rollout worker's experiences (`next()` -> a batch).

A rollout worker normally samples its own envs; with the `input` config it reads
batches from an `InputReader` instead: JSON files, a policy server
(`tfrl.env.policy_server_input.PolicyServerInput`), or anything else implementing
`next()`.

Example:
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> class Constant(InputReader):
    ...     def next(self):
    ...         return SampleBatch({"obs": [1, 2]})
    >>> Constant().next().count
    2
"""

import abc
from typing import Any


class InputReader(abc.ABC):
    """The interface of experience sources of rollout workers."""

    @abc.abstractmethod
    def next(self) -> Any:
        """Returns the next batch of experiences (a SampleBatch or MultiAgentBatch)."""
