"""The `Algorithm.fit` callbacks of `tfrl train` that write its logdir: `result.json`
lines and periodic checkpoints.

`tfrl.cli.commands.train` runs `Algorithm.fit` with `StopOnCriteria`, these two,
`tfrl.utils.tensorboard.TensorBoard` and a `ProgressLogger`; it writes the final
checkpoint itself after `fit` returns (or is interrupted by Ctrl-C).
"""

import json
from typing import Any, Callable, Dict, Optional, TextIO

import keras


class ResultLog(keras.callbacks.Callback):
    """Writes each iteration's full result as one JSON line to `file` (and flushes).

    Args:
        file: An open text file (the caller closes it).
        default: `json.dumps`'s `default` for values JSON cannot encode.
    """

    def __init__(self, file: TextIO, default: Callable[[Any], Any]):
        super().__init__()
        self.file = file
        self.default = default

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        result = self.model.last_result
        self.file.write(json.dumps(result, default=self.default) + "\n")
        self.file.flush()


class PeriodicCheckpoint(keras.callbacks.Callback):
    """`Algorithm.save(checkpoint_dir)` after every `every`-th iteration, unless training
    stops after this iteration (the caller writes the final checkpoint).

    Place it after `StopOnCriteria` in the callback list, so that it sees the stop.

    Args:
        checkpoint_dir: Where the `checkpoint_<iteration>` directories go.
        every: Save when the algorithm's iteration is a multiple of it; 0 never.
    """

    def __init__(self, checkpoint_dir: str, every: int):
        super().__init__()
        self.checkpoint_dir = checkpoint_dir
        self.every = int(every)

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        algorithm = self.model.algorithm
        if (self.every > 0 and not self.model.stop_training
                and algorithm.iteration % self.every == 0):
            algorithm.save(self.checkpoint_dir)
