"""IOContext: what an input reader or output writer needs to know about its worker.

`config["input"]` may be a callable `ioctx -> InputReader`; the rollout worker calls
it with an `IOContext` describing itself, e.g. to create
`PolicyServerInput(ioctx, address, port)` that serves the worker's policy.

Example:
    >>> ctx = IOContext(config={"rollout_fragment_length": 50}, worker_index=1)
    >>> ctx.config["rollout_fragment_length"], ctx.worker_index, ctx.worker is None
    (50, 1, True)
"""

from typing import Any, Optional


class IOContext:
    """Attributes of the rollout worker an input reader or output writer belongs to.

    Args:
        log_dir: Default directory for output files ("" if None).
        config: The algorithm config dict (`{}` if None).
        worker_index: Index of the worker: 0 for the local worker, > 0 for remote ones.
        worker: The RolloutWorker itself, if any.
    """

    def __init__(self, log_dir: Optional[str] = None, config: Optional[dict] = None,
                 worker_index: int = 0, worker: Any = None):
        self.log_dir = log_dir or ""
        self.config = config or {}
        self.worker_index = worker_index
        self.worker = worker

    def default_sampler_input(self) -> Any:
        """The worker's own sampler (an InputReader over its envs), or None."""
        return getattr(self.worker, "sampler", None)

    def __repr__(self) -> str:
        return (f"IOContext(log_dir={self.log_dir!r}, worker_index={self.worker_index}, "
                f"worker={self.worker!r})")
