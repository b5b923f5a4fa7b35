"""Experiment tracking for `Algorithm.fit()`: MLflow and Weights & Biases callbacks.

Both are Keras callbacks (one epoch = one `train()` iteration) that record, in the
tracking tool, what Ray Tune's `MLflowLoggerCallback` / `WandbLoggerCallback` record for a
trial (`tfrl.tune.tracking`), so runs with and without Tune compare side by side:

- at `on_train_begin`: the algorithm's config as the run's parameters (nested keys
  joined with "/", values as text);
- at every `on_epoch_end`: the iteration's numeric results (`fit()`'s flattened logs:
  `episode_reward_mean`, `evaluation/episode_reward_mean`, `info/learner/...`), stepped by
  `timesteps_total` as Tune's MLflow logger steps them (W&B: by `training_iteration`, as
  Tune's W&B logger does);
- at `on_train_end`: the final algorithm checkpoint (`Algorithm.save()`) as an artifact
  (MLflow: under `checkpoint/`; W&B: an artifact `checkpoint_<run id>` of type `model`).

The libraries' own Keras callbacks (`mlflow.keras.MlflowCallback`,
`wandb.integration.keras.WandbMetricsLogger`) read `model.optimizer` and `model.summary()`,
which an algorithm does not have (it owns one optimizer per policy), so these callbacks
talk to the libraries' run APIs instead: `mlflow.MlflowClient` (no global active run is
touched) and `wandb.init` / `run.log` / `run.log_artifact`.

Both libraries are optional (`pip install 'tfrl[tracking]'`); offline, MLflow writes to a
local file store (`tracking_uri="file:/path/mlruns"`) and W&B to its offline run
directory (`mode="offline"`, `dir=...`).

Example (not run: it needs mlflow):
    algo.fit(iterations=20, callbacks=[MLflowCallback(tracking_uri="file:./mlruns",
                                                      experiment_name="ppo-cartpole")])
"""

import importlib
import os
import shutil
import tempfile
import time
from typing import Any, Dict, Mapping, Optional

import keras


def _optional_module(name: str) -> Any:
    """The module `name` if it is installed (the `tracking` extra), else None."""
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - exercised without the extra
        return None


mlflow: Any = _optional_module("mlflow")
wandb: Any = _optional_module("wandb")

#: The longest parameter value logged (MLflow refuses values over 6000 characters).
MAX_PARAM_CHARS = 500

__all__ = ["MLflowCallback", "WandbCallback", "flat_config"]


def flat_config(config: Mapping[str, Any], prefix: str = "") -> Dict[str, str]:
    """An algorithm config as flat text parameters: nested dicts' keys joined with "/",
    values as `repr` text of at most `MAX_PARAM_CHARS` characters.

    Example:
        >>> flat_config({"lr": 0.001, "model": {"fcnet_hiddens": [8]}, "env": None})
        {'lr': '0.001', 'model/fcnet_hiddens': '[8]', 'env': 'None'}
    """
    flat: Dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flat_config(value, prefix=f"{name}/"))
        else:
            text = value if isinstance(value, str) else repr(value)
            flat[name] = text[:MAX_PARAM_CHARS]
    return flat


def _config_of(model: Any) -> Dict[str, Any]:
    config = model.algorithm.config
    return config.to_dict() if hasattr(config, "to_dict") else dict(config)


def _step(model: Any, epoch: int) -> int:
    result = getattr(model, "last_result", None) or {}
    return int(result.get("timesteps_total") or result.get("training_iteration") or epoch + 1)


def _missing(package: str, callback: str) -> ImportError:
    return ImportError(f"{callback} needs the {package} package; install it with "
                       f"pip install 'tfrl[tracking]' (or pip install {package}).")


class _CheckpointOnEnd(keras.callbacks.Callback):
    """Writes the algorithm's final checkpoint into a temporary directory for a
    subclass to log as an artifact."""

    def __init__(self, log_checkpoint: bool):
        super().__init__()
        self.log_checkpoint = bool(log_checkpoint)

    def _with_final_checkpoint(self, log: Any) -> None:
        if not self.log_checkpoint:
            return
        staging = tempfile.mkdtemp(prefix="tfrl-tracking-")
        try:
            log(self.model.algorithm.save(staging))
        finally:
            shutil.rmtree(staging, ignore_errors=True)


class MLflowCallback(_CheckpointOnEnd):
    """Logs a `fit()` run to MLflow: config as parameters, each iteration's numeric
    results as metrics, the final checkpoint as artifacts under `checkpoint/`.

    Args:
        tracking_uri: MLflow's tracking URI (a server, or `file:/path/mlruns` for a local
            file store); None: MLflow's default (`MLFLOW_TRACKING_URI`, else ./mlruns).
        experiment_name: The experiment (created when missing); None: MLflow's default
            experiment.
        run_name: The run's name; None: the algorithm's class name.
        tags: Tags of the run.
        log_checkpoint: Log the final checkpoint as an artifact.

    Attributes:
        run_id: The MLflow run's id (set at `on_train_begin`).
        client: The `mlflow.MlflowClient` it logs with.
    """

    def __init__(self, tracking_uri: Optional[str] = None, experiment_name: Optional[str] = None,
                 run_name: Optional[str] = None, tags: Optional[Dict[str, str]] = None,
                 log_checkpoint: bool = True):
        if mlflow is None:
            raise _missing("mlflow", "MLflowCallback")
        super().__init__(log_checkpoint)
        self.tracking_uri = tracking_uri
        self.experiment_name = experiment_name
        self.run_name = run_name
        self.tags = dict(tags or {})
        self.client: Any = None
        self.run_id: Optional[str] = None

    def _experiment_id(self) -> str:
        if self.experiment_name is None:
            return "0"  # MLflow's default experiment
        found = self.client.get_experiment_by_name(self.experiment_name)
        if found is not None:
            return found.experiment_id
        return self.client.create_experiment(self.experiment_name)

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        self.client = mlflow.MlflowClient(tracking_uri=self.tracking_uri)
        run = self.client.create_run(
            self._experiment_id(), run_name=self.run_name or self.model.name, tags=self.tags)
        self.run_id = run.info.run_id
        params = [mlflow.entities.Param(k, v) for k, v in
                  flat_config(_config_of(self.model)).items()]
        for start in range(0, len(params), 100):  # MLflow's batch limit
            self.client.log_batch(self.run_id, params=params[start:start + 100])

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        step = _step(self.model, epoch)
        now = int(time.time() * 1000)
        metrics = [mlflow.entities.Metric(k, float(v), now, step)
                   for k, v in (logs or {}).items()]
        for start in range(0, len(metrics), 1000):
            self.client.log_batch(self.run_id, metrics=metrics[start:start + 1000])

    def on_train_end(self, logs: Optional[Dict[str, Any]] = None) -> None:
        self._with_final_checkpoint(lambda path: self.client.log_artifacts(
            self.run_id, path, artifact_path="checkpoint"))
        self.client.set_terminated(self.run_id, "FINISHED")


class WandbCallback(_CheckpointOnEnd):
    """Logs a `fit()` run to Weights & Biases: config as the run's config, each
    iteration's numeric results (`run.log(..., step=training_iteration)`), the final
    checkpoint as an artifact `checkpoint_<run id>` of type `model`.

    Args:
        project: The W&B project; None: W&B's default (`WANDB_PROJECT`).
        log_checkpoint: Log the final checkpoint as an artifact.
        run: An active `wandb` run to log to (left open at the end); None: the callback
            starts one with `wandb.init(project=project, config=..., **init_kwargs)` at
            `on_train_begin` and finishes it at `on_train_end`.
        **init_kwargs: More `wandb.init` arguments (`mode="offline"`, `dir`, `name`,
            `group`, `tags`, ...).

    Attributes:
        run: The W&B run.
    """

    def __init__(self, project: Optional[str] = None, log_checkpoint: bool = True,
                 run: Any = None, **init_kwargs: Any):
        if wandb is None:
            raise _missing("wandb", "WandbCallback")
        super().__init__(log_checkpoint)
        self.project = project
        self.run = run
        self._owns_run = run is None
        self.init_kwargs = init_kwargs

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        config = flat_config(_config_of(self.model))
        if self._owns_run:
            self.run = wandb.init(project=self.project, config=config, **self.init_kwargs)
        else:
            self.run.config.update(config, allow_val_change=True)

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.run.log(dict(logs or {}), step=int(getattr(self.model.algorithm, "iteration",
                                                         epoch + 1)))

    def on_train_end(self, logs: Optional[Dict[str, Any]] = None) -> None:
        def log(path: str) -> None:
            artifact = wandb.Artifact(f"checkpoint_{self.run.id}", type="model")
            artifact.add_dir(path)
            self.run.log_artifact(artifact)

        self._with_final_checkpoint(log)
        if self._owns_run:
            self.run.finish()
