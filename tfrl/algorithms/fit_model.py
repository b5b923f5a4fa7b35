"""`AlgorithmModel`: what Keras callbacks see as `self.model` during `Algorithm.fit()`.

Keras callbacks talk to a `keras.Model` through a handful of attributes and methods.
`AlgorithmModel` gives an `Algorithm` exactly those, so the stock callbacks work on it
unchanged:

- `stop_training` (EarlyStopping, TerminateOnNaN): the fit loop stops after the current
  iteration when a callback sets it.
- `save_weights(filepath)` / `load_weights(filepath)` (BackupAndRestore,
  ModelCheckpoint with `save_weights_only=True`) and `save(filepath)` (ModelCheckpoint):
  the full algorithm checkpoint of `Algorithm.save()` (policy weights, optimizer
  slots, filters, counters, episode window, RNG states), packed into ONE file (an
  uncompressed zip of the checkpoint directory, whatever the file's extension), written
  atomically. `load_weights` restores it with `Algorithm.restore()`, so training resumes
  with identical counters.
- `get_weights()` / `set_weights()` (EarlyStopping's `restore_best_weights`): the
  policies' weights, `{policy_id: weights}` (`Algorithm.get_weights`).
- `_initial_epoch` (BackupAndRestore): the iteration a restored checkpoint reached; the
  fit loop resumes there.
- `last_result`: the latest full result dict of `train()` (set by the fit loop).
- `built = True`, `optimizer = None`, `train_function = None`, `layers` (the default
  policy model's layers), `metrics = []`: what keras.callbacks.TensorBoard and the
  monitor callbacks probe.

Example:
    >>> model = AlgorithmModel(algorithm=None)
    >>> model.built, model.stop_training, model.optimizer
    (True, False, None)
"""

import os
import shutil
import tempfile
import zipfile
from typing import Any, Dict, List


class AlgorithmModel:
    """Adapter presenting an `Algorithm` to Keras callbacks as `callback.model`.

    Args:
        algorithm: The `Algorithm` being fitted.
    """

    built = True
    optimizer = None
    train_function = None

    def __init__(self, algorithm: Any):
        self.algorithm = algorithm
        self.stop_training = False
        self._initial_epoch = None
        self.history = None
        self.last_result = None
        self.metrics: List[Any] = []

    @property
    def name(self) -> str:
        return type(self.algorithm).__name__

    @property
    def layers(self) -> List[Any]:
        """The default policy model's layers (keras.callbacks.TensorBoard histograms)."""
        try:
            model = self.algorithm.get_policy().model
        except (AttributeError, KeyError):
            return []
        return list(getattr(model, "layers", []))

    # ------------------------------------------------------------ checkpoints

    def save_weights(self, filepath: str, overwrite: bool = True, **kwargs: Any) -> None:
        """Writes the algorithm checkpoint (`Algorithm.save`) as one file at `filepath`.

        Raises:
            FileExistsError: `filepath` exists and `overwrite` is False.
        """
        filepath = os.fspath(filepath)
        if os.path.exists(filepath) and not overwrite:
            raise FileExistsError(f"{filepath!r} exists; pass overwrite=True to replace it.")
        parent = os.path.dirname(os.path.abspath(filepath))
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".fit-ckpt-", dir=parent)
        try:
            checkpoint_dir = self.algorithm.save(staging)
            tmp_file = os.path.join(staging, "packed.zip")
            with zipfile.ZipFile(tmp_file, "w", compression=zipfile.ZIP_STORED) as archive:
                for name in sorted(os.listdir(checkpoint_dir)):
                    archive.write(os.path.join(checkpoint_dir, name), arcname=name)
            with open(tmp_file, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp_file, filepath)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def load_weights(self, filepath: str, **kwargs: Any) -> None:
        """Restores a `save_weights`/`save` file into the algorithm (`Algorithm.restore`).

        Raises:
            FileNotFoundError: No file at `filepath`.
            ValueError: The file is not a checkpoint written by `save_weights`.
        """
        filepath = os.fspath(filepath)
        if not os.path.isfile(filepath):
            raise FileNotFoundError(
                f"No fit checkpoint file at {filepath!r}. Pass a file written by "
                "AlgorithmModel.save_weights (BackupAndRestore / ModelCheckpoint).")
        if not zipfile.is_zipfile(filepath):
            raise ValueError(
                f"{filepath!r} is not a tfrl fit checkpoint (expected the zip written by "
                "AlgorithmModel.save_weights; Keras .h5/.keras model files cannot be "
                "loaded into an Algorithm).")
        staging = tempfile.mkdtemp(prefix=".fit-restore-")
        try:
            with zipfile.ZipFile(filepath) as archive:
                archive.extractall(staging)
            self.algorithm.restore(staging)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    save = save_weights

    def get_weights(self) -> Dict[str, Any]:
        """`{policy_id: weights}` of the local worker's policies."""
        return self.algorithm.get_weights()

    def set_weights(self, weights: Dict[str, Any]) -> None:
        """Sets the policies' weights (and syncs them to remote workers)."""
        self.algorithm.set_weights(weights)

    def __repr__(self) -> str:
        return f"AlgorithmModel({self.algorithm!r})"
