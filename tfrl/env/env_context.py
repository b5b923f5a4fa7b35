"""EnvContext: an env's config dict plus where in the worker set the env lives.

Env creators receive an `EnvContext` so that each process or sub-env can be
parameterized differently, e.g. pick a data file by `worker_index` or a seed by
`vector_index`.

Example:
    >>> ctx = EnvContext({"size": 3}, worker_index=1, vector_index=2, num_workers=4)
    >>> ctx["size"], ctx.worker_index, ctx.vector_index, ctx.remote, ctx.num_workers
    (3, 1, 2, False, 4)
    >>> other = ctx.copy_with_overrides(vector_index=0)
    >>> dict(other), other.worker_index, other.vector_index
    ({'size': 3}, 1, 0)
"""

import copy
from collections.abc import Mapping
from typing import Optional

from tfrl.utils.typing import EnvConfigDict


class EnvContext(dict):
    """The env's configuration (this dict's items) plus tfrl metadata.

    Args:
        env_config: The env's configuration (the `"env_config"` key of the
            algorithm config). Its items become this dict's items (shallow copy).
        worker_index: Identifies the worker the env is created in: 0 for the local
            worker, > 0 for remote workers.
        vector_index: Index of the sub-env within its worker's vectorized env,
            starting from 0.
        remote: Whether the sub-envs of a vectorized env run remotely (in their own
            processes or actors).
        num_workers: Total number of remote workers in the set (0 if only a local
            worker exists); None if unknown.

    Raises:
        TypeError: If `env_config` is not a mapping.
    """

    def __init__(
        self,
        env_config: EnvConfigDict,
        worker_index: int,
        vector_index: int = 0,
        remote: bool = False,
        num_workers: Optional[int] = None,
    ):
        if not isinstance(env_config, Mapping):
            raise TypeError(
                f"EnvContext needs a dict as env_config; received {type(env_config).__name__}: "
                f"{env_config!r}. Pass {{}} for an env without configuration."
            )
        super().__init__(env_config)
        self.worker_index = worker_index
        self.vector_index = vector_index
        self.remote = remote
        self.num_workers = num_workers

    def copy_with_overrides(
        self,
        env_config: Optional[EnvConfigDict] = None,
        worker_index: Optional[int] = None,
        vector_index: Optional[int] = None,
        remote: Optional[bool] = None,
        num_workers: Optional[int] = None,
    ) -> "EnvContext":
        """Returns a new EnvContext: self with the given (non-None) values replaced.

        Args:
            env_config: New config; deep-copied. None keeps a shallow copy of self's
                items.
            worker_index: New worker index; None keeps self's.
            vector_index: New vector index; None keeps self's.
            remote: New remote flag; None keeps self's.
            num_workers: New number of workers; None keeps self's.

        Returns:
            A new EnvContext; self is not changed.
        """
        return EnvContext(
            copy.deepcopy(env_config) if env_config is not None else self,
            self.worker_index if worker_index is None else worker_index,
            self.vector_index if vector_index is None else vector_index,
            self.remote if remote is None else remote,
            self.num_workers if num_workers is None else num_workers,
        )

    def __repr__(self) -> str:
        return (
            f"EnvContext({dict.__repr__(self)}, worker_index={self.worker_index}, "
            f"vector_index={self.vector_index}, remote={self.remote}, "
            f"num_workers={self.num_workers})"
        )

    def __reduce__(self):
        # Pickle (for sub-processes) with the metadata, not just the dict items.
        return (
            EnvContext,
            (dict(self), self.worker_index, self.vector_index, self.remote, self.num_workers),
        )
