"""Synchronising the observation filters of a driver and its remote workers."""

import concurrent.futures
from typing import Dict, Sequence

from tfrl.utils.filter import Filter


class FilterManager:
    """Merges the filter changes of remote workers into the driver's filters and back."""

    @staticmethod
    def synchronize(local_filters: Dict[str, Filter], remotes: Sequence = (),
                    update_remote: bool = True, timeout_seconds: float = 60.0) -> None:
        """Aggregates the remote workers' filter buffers into `local_filters`.

        Each remote worker (a handle with `call(method, ...) -> Future`)
        returns its filters and clears their buffers (`get_filters(flush_after=True)`);
        their changes are merged into `local_filters` (`apply_changes`), and, with
        `update_remote`, the merged filters are sent back (`sync_filters`) so every worker
        normalises with the statistics of all data.

        Args:
            local_filters: PolicyID -> Filter of the driver (updated in place).
            remotes: Worker handles.
            update_remote: Send the merged filters back to the workers.
            timeout_seconds: Time to wait for each round of replies.

        Raises:
            TimeoutError: If a worker does not answer within `timeout_seconds`.
        """
        if not remotes:
            return
        futures = [r.call("get_filters", flush_after=True) for r in remotes]
        for remote_filters in _results(futures, timeout_seconds):
            for pid, f in local_filters.items():
                f.apply_changes(remote_filters[pid], with_buffer=False)
        if update_remote:
            copies = {pid: f.as_serializable() for pid, f in local_filters.items()}
            for f in copies.values():  # workers add their own unreported data on sync
                f.clear_buffer()
            _results([r.call("sync_filters", copies) for r in remotes], timeout_seconds)


def _results(futures, timeout_seconds):
    done, pending = concurrent.futures.wait(futures, timeout=timeout_seconds)
    if pending:
        raise TimeoutError(
            f"{len(pending)} of {len(futures)} workers did not answer within "
            f"{timeout_seconds} s while synchronising observation filters."
        )
    return [f.result() for f in futures]
