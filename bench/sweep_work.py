"""The work of a sweep's trials, read from the files each side writes: `tfrl tune`'s trial
directories (`params.json`, `result.json`) and RL Baselines3 Zoo's report CSV. Used by
`bench_sweep.py` (kept apart from it, which defines absl flags, so tests can import it)."""

import csv
import glob
import json
import math
import os
import re
from typing import Any, Dict

from tfrl.utils.search_transforms import derive_config


def tfrl_work(logdir: str, stop_timesteps: int) -> Dict[str, Any]:
    """The work of `tfrl tune`'s trials in `logdir`: minibatch SGD steps (a learning
    phase is `num_sgd_iter * floor(train_batch_size / sgd_minibatch_size)` steps, one
    phase per train batch sampled), the trials' own seconds, and how many stopped before
    `stop_timesteps`."""
    steps = seconds = stopped = trials = 0
    for trial in sorted(glob.glob(os.path.join(logdir, "*", "result.json"))):
        with open(trial, encoding="utf-8") as f:
            results = [json.loads(line) for line in f if line.strip()]
        if not results:
            continue
        with open(os.path.join(os.path.dirname(trial), "params.json"), encoding="utf-8") as f:
            params = derive_config(json.load(f))  # tune.variables -> the config keys
        batch = int(params["train_batch_size"])
        per_phase = int(params["num_sgd_iter"]) * (batch // int(params["sgd_minibatch_size"]))
        last = results[-1]
        steps += last["timesteps_total"] // batch * per_phase
        seconds += last["time_total_s"]
        stopped += last["timesteps_total"] < stop_timesteps
        trials += 1
    return {"trials": trials, "sgd_steps": steps, "trial_s": seconds, "stopped": stopped}


def _seconds(duration: str) -> float:
    """pandas' Timedelta text ("0 days 00:09:05.297471") in seconds."""
    days, clock = re.fullmatch(r"(\d+) days? (\S+)", duration.strip()).groups()
    hours, minutes, secs = clock.split(":")
    return int(days) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(secs)


def zoo_work(report_csv: str, n_envs: int = 8, steps: int = 20000, evaluations: int = 4
             ) -> Dict[str, Any]:
    """The work of the Zoo's trials from its report CSV: minibatch SGD steps (SB3: `n_epochs
    * ceil(n_steps * n_envs / batch_size)` per update, an update after each rollout), the
    trials' seconds, and how many were pruned. A pruned trial's steps are a range: the
    report does not say at which evaluation it stopped (`sgd_steps` counts the first
    evaluation, `sgd_steps_max` the last before the end)."""
    low = high = 0
    seconds = 0.0
    pruned = trials = 0
    with open(report_csv, encoding="utf-8") as f:
        for row in csv.DictReader(f):
            rollout = 2 ** int(row["params_n_steps_pow"]) * n_envs
            per_update = int(row["params_n_epochs"]) * math.ceil(
                rollout / 2 ** int(row["params_batch_size_pow"]))
            interval = steps // evaluations
            if row["state"] == "PRUNED":
                low += interval // rollout * per_update
                high += (steps - interval) // rollout * per_update
                pruned += 1
            else:
                done = math.ceil(steps / rollout) * per_update
                low += done
                high += done
            seconds += _seconds(row["duration"])
            trials += 1
    return {"trials": trials, "sgd_steps": low, "sgd_steps_max": high, "trial_s": seconds,
            "pruned": pruned}
