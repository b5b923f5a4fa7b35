"""tfrl's vocabulary: column names (`columns`) and typing Protocols (`types`).

The bottom layer: it imports nothing from the rest of tfrl and nothing heavy.
"""

from tfrl.core.columns import Columns
from tfrl.core.types import (Batch, LearnerInfo, Operator, Policy, RemoteWorker, ResultDict,
                             Worker, WorkerSet)

__all__ = ["Columns", "Batch", "LearnerInfo", "Operator", "Policy", "RemoteWorker",
           "ResultDict", "Worker", "WorkerSet"]
