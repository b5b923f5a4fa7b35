"""Experiment tracking of sweeps through Ray Tune's own logger callbacks.

`tfrl tune`'s `callbacks:` key, and the Python form `tracking_callbacks(...)` passed to
`tune.RunConfig(callbacks=...)`, log every trial as one run of MLflow or Weights & Biases:
its config, each iteration's results, and its final checkpoint as an artifact (with
`checkpoint_at_end=True` in the run's `CheckpointConfig`; `tfrl tune` sets it).

- `WandbLoggerCallback` is Ray Tune's (`ray.air.integrations.wandb`); its
  `upload_checkpoints` logs each checkpoint Tune saves as an artifact. Here it defaults to
  `upload_checkpoints=True` and `dir=<the sweep's directory>`, and `mode="offline"` (or
  `"disabled"`) needs no API key.
- `MLflowLoggerCallback` is Ray Tune's (`ray.air.integrations.mlflow`) plus the trial's
  last checkpoint logged under `checkpoint/` at the trial's end (Tune's own
  `save_artifact=True` logs the driver's staging directory, which holds no checkpoint).

Example (not run: it needs mlflow):
    tuner = tfrl.tune.Tuner("PPO", param_space=..., run_config=tune.RunConfig(
        callbacks=tracking_callbacks({"mlflow": {"tracking_uri": "file:./mlruns"}}, "runs"),
        checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True)))
"""

import os
from typing import Any, Dict, List, Mapping, Optional

from ray.air.integrations import mlflow as ray_mlflow
from ray.air.integrations import wandb as ray_wandb

from tfrl.utils.trackers import TRACKERS

class MLflowLoggerCallback(ray_mlflow.MLflowLoggerCallback):
    """Ray Tune's MLflow logger that also logs each trial's last checkpoint (under
    `checkpoint/`) when the trial ends.

    Args:
        log_checkpoint: Log the trial's last checkpoint as artifacts.
        *args, **kwargs: Ray Tune's `MLflowLoggerCallback` arguments (`tracking_uri`,
            `experiment_name`, `tags`, `save_artifact`, ...).
    """

    def __init__(self, *args: Any, log_checkpoint: bool = True, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.log_checkpoint = log_checkpoint

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        checkpoint = trial.checkpoint
        run_id = self._trial_runs.get(trial)
        if self.log_checkpoint and checkpoint is not None and run_id is not None \
                and os.path.isdir(checkpoint.path):
            client = self.mlflow_util._mlflow.MlflowClient()  # the URI setup() set
            client.log_artifacts(run_id, checkpoint.path, artifact_path="checkpoint")
        super().log_trial_end(trial, failed=failed)


class WandbLoggerCallback(ray_wandb.WandbLoggerCallback):
    """Ray Tune's W&B logger; with `mode="offline"` or `"disabled"` it asks for no API
    key (as `WANDB_MODE=offline` does)."""

    def setup(self, *args: Any, **kwargs: Any) -> None:
        mode = self.kwargs.get("mode")
        if mode in ("offline", "disabled") and not os.environ.get("WANDB_MODE"):
            os.environ["WANDB_MODE"] = mode  # Tune's key check reads the environment
            try:
                super().setup(*args, **kwargs)
            finally:
                del os.environ["WANDB_MODE"]
        else:
            super().setup(*args, **kwargs)


def tracking_callbacks(spec: Optional[Mapping[str, Optional[Mapping[str, Any]]]],
                       logdir: str, experiment: Optional[str] = None) -> List[Any]:
    """Tune logger callbacks for `{"mlflow": {...}, "wandb": {...}}` (a tracker's
    options may be empty or None).

    Defaults: MLflow's experiment is `experiment` (else the directory's name) and its
    tracking URI MLflow's own; W&B's project is `experiment` (else "tfrl"), its `dir`
    `logdir` and `upload_checkpoints=True`.

    Raises:
        ValueError: For an unknown tracker or key (naming the valid ones).
    """
    name = experiment or os.path.basename(os.path.normpath(logdir))
    callbacks: List[Any] = []
    for tracker, options in (spec or {}).items():
        if tracker not in TRACKERS:
            raise ValueError(f"Unknown tracker {tracker!r}; use one of "
                             f"{', '.join(TRACKERS)}.")
        options = dict(options or {})
        unknown = sorted(set(options) - set(TRACKERS[tracker]))
        if unknown:
            raise ValueError(f"{tracker} takes the keys {', '.join(TRACKERS[tracker])}; "
                             f"received {unknown[0]!r}.")
        if tracker == "mlflow":
            options.setdefault("experiment_name", name)
            callbacks.append(MLflowLoggerCallback(**options))
        else:
            options.setdefault("project", experiment or "tfrl")
            options.setdefault("dir", logdir)
            options.setdefault("upload_checkpoints", True)
            os.makedirs(options["dir"], exist_ok=True)
            callbacks.append(WandbLoggerCallback(**options))
    return callbacks
