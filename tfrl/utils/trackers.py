"""The experiment trackers a sweep may log to (`tfrl tune`'s `callbacks:` key) and the
options each takes. `tfrl.tune.tracking` builds Ray Tune's logger callbacks from them;
the command line checks a sweep file against them without importing `tfrl.tune` (whose
import loads Ray Tune and registers every algorithm with it), so that `tfrl train`,
`tfrl list` and `tfrl tune --dry_run` answer before Ray or TensorFlow load."""

from typing import Dict, Tuple

#: Tracker -> the keys it takes (its Tune callback's arguments; W&B's also the common
#: `wandb.init` ones).
TRACKERS: Dict[str, Tuple[str, ...]] = {
    "mlflow": ("tracking_uri", "registry_uri", "experiment_name", "tags", "save_artifact",
               "log_params_on_trial_end", "log_checkpoint"),
    "wandb": ("project", "group", "entity", "mode", "dir", "name", "notes", "tags",
              "job_type", "api_key_file", "excludes", "log_config", "upload_checkpoints"),
}
