"""The experiment trackers a sweep may log to (`tfrl tune`'s `callbacks:` key) and the
options each takes; no Ray needed, so `tfrl tune --dry_run` checks them before Ray starts.
`tfrl.tune.tracking` builds Ray Tune's logger callbacks from them."""

from typing import Dict, Tuple

#: Tracker -> the keys it takes (its Tune callback's arguments; W&B's also the common
#: `wandb.init` ones).
TRACKERS: Dict[str, Tuple[str, ...]] = {
    "mlflow": ("tracking_uri", "registry_uri", "experiment_name", "tags", "save_artifact",
               "log_params_on_trial_end", "log_checkpoint"),
    "wandb": ("project", "group", "entity", "mode", "dir", "name", "notes", "tags",
              "job_type", "api_key_file", "excludes", "log_config", "upload_checkpoints"),
}
