"""Population Based Training of PPO on CartPole with Ray Tune.

Four PPO trials start with a learning rate far too small for their budget (1e-5: on its
own, no trial leaves chance level). Every `perturbation_interval` iterations, Ray Tune's
`PopulationBasedTraining` ranks them by `episode_reward_mean`: a trial in the bottom
quantile *exploits* one in the top quantile (it loads that trial's checkpoint: weights,
optimizer state, counters) and *explores* (it continues with a new `lr` drawn from
3e-3..3e-2). The same four trials without PBT (same configs and seeds, trained in this
process) are the baseline: PBT's best final return beats theirs.

The trainable here is tfrl's PPO trainable (`tfrl.tune.get_trainable`) reporting where
each restore came from and a fingerprint of the weights, so the script can show that an
exploiting trial really continues from the other trial's weights.

Ray Tune is optional (`pip install 'tfrl[tune]'`); without it this example says so.

    python examples/pbt_cartpole.py           # 4 trials x 8 iterations of 256 steps
    python examples/pbt_cartpole.py --smoke   # 4 trials x 3 iterations of 64 steps
"""

import json
import os
import random
import tempfile
from typing import Any, Dict, List, Optional

import numpy as np

from tfrl.utils.progress import quiet_tensorflow, script_parser

TRACE_FILE = "pbt_trace.json"  # what TracedPPO writes beside each checkpoint

quiet_tensorflow()  # hides TensorFlow's start-up notices unless --verbose; before it loads

try:
    from ray import tune
    from ray.tune.schedulers import PopulationBasedTraining
except ImportError:  # the tune extra is not installed
    tune = None

if tune is not None:
    import tfrl.tune

    class ReportLog(tune.Callback):
        """Every result each trial reported, in order, as the driver received it.

        A trial's `metrics_dataframe` is not its whole history under PBT: it is read back
        from the trial's progress file, which an exploit may rewrite (a source trial that
        later exploits another one can lose the rows it reported before). This log keeps
        them all."""

        KEYS = ("training_iteration", "weights_fingerprint", "restored_from",
                "restored_source_iteration", "saved_fingerprint", "restored_fingerprint")

        def __init__(self) -> None:
            self.reports: Dict[str, List[Dict[str, Any]]] = {}

        def on_trial_result(self, iteration: int, trials: List[Any], trial: Any,
                            result: Dict[str, Any], **info: Any) -> None:
            if "trial" in result:
                self.reports.setdefault(result["trial"], []).append(
                    {k: result[k] for k in self.KEYS if k in result})

    class TracedPPO(tfrl.tune.get_trainable("PPO")):
        """tfrl's PPO trainable that reports, after each step, a fingerprint of its
        weights and, after a restore, which trial saved the checkpoint it loaded, that
        trial's fingerprint and iteration when it saved, and its own fingerprint after
        loading (equal when the weights really came back)."""

        restored: Dict[str, Any] = {}

        def fingerprint(self) -> float:
            return float(sum(np.abs(np.asarray(w, np.float64)).sum()
                             for w in self.algorithm.get_weights()["default_policy"]))

        def save_checkpoint(self, checkpoint_dir: str) -> None:
            super().save_checkpoint(checkpoint_dir)
            with open(os.path.join(checkpoint_dir, TRACE_FILE), "w") as f:
                json.dump({"trial": self.trial_id, "iteration": self.iteration,
                           "fingerprint": self.fingerprint()}, f)

        def load_checkpoint(self, checkpoint: Any) -> None:
            super().load_checkpoint(checkpoint)
            with open(os.path.join(os.fspath(checkpoint), TRACE_FILE)) as f:
                saved = json.load(f)
            self.restored = {"restored_from": saved["trial"],
                             "restored_source_iteration": saved["iteration"],
                             "saved_fingerprint": saved["fingerprint"],
                             "restored_fingerprint": self.fingerprint()}

        def step(self) -> Dict[str, Any]:
            result = super().step()
            result.update({"restored_from": "", "restored_source_iteration": -1,
                           "saved_fingerprint": -1.0, "restored_fingerprint": -1.0},
                          weights_fingerprint=self.fingerprint(), trial=self.trial_id)
            result.update(self.restored)
            self.restored = {}
            return result


def fingerprint_in(fingerprint: float, reported: Any) -> bool:
    """Whether `fingerprint` is one of the `reported` ones: equal within 1e-9, in case a
    report went through text on the way (one optimizer step moves a fingerprint by ~1e-3
    of itself)."""
    return bool(np.isclose(fingerprint, np.asarray(reported, np.float64),
                           rtol=1e-9, atol=0.0).any())


#: The population's starting learning rate (too small to learn at these budgets) and the
#: range PBT's explore step draws new ones from.
START_LR = 1e-5
LR_RANGE = (3e-3, 3e-2)


def population_config(batch: int, seed: Any, lr: float = START_LR) -> Dict[str, Any]:
    """One trial's PPO config: `batch` env steps an iteration on CartPole, a [16] MLP,
    the mean return over the latest 20 episodes (a few iterations' worth)."""
    return {"env": "CartPole-v1", "num_workers": 0, "num_envs_per_worker": 2,
            "rollout_fragment_length": batch // 8, "train_batch_size": batch,
            "sgd_minibatch_size": min(batch, 64), "num_sgd_iter": 2,
            "metrics_smoothing_episodes": 20, "model": {"fcnet_hiddens": [16]},
            "lr": lr, "clip_param": 0.2, "num_cpus_for_driver": 0.5, "seed": seed}


def run_without_pbt(num_trials: int = 4, iterations: int = 8, batch: int = 256
                    ) -> Dict[int, float]:
    """The same population without PBT: each seed's config trained in this process for
    the same iterations (a trial's run is deterministic given its seed, so this is what
    Tune would report for it). Returns `{seed: final episode_reward_mean}`."""
    from tfrl.algorithms.registry import get_algorithm_class

    finals = {}
    for seed in range(num_trials):
        config = population_config(batch, seed)
        config.pop("num_cpus_for_driver")
        algo = get_algorithm_class("PPO")(config=config)
        try:
            for _ in range(iterations):
                result = algo.train()
        finally:
            algo.stop()
        finals[seed] = float(result["episode_reward_mean"])
    return finals


def run_pbt(num_trials: int = 4, iterations: int = 8, batch: int = 256,
            storage_path: str = "", time_budget_s: Optional[float] = None,
            perturbation_interval: int = 2, synch: bool = False, seed: int = 0
            ) -> Dict[str, Any]:
    """Runs the PBT population; returns the trials' histories and the exploits found.
    `time_budget_s` (None: no limit) ends the whole run after that many seconds; `seed`
    seeds the driver's random draws (PBT's choices of source trials and new values).

    PBT is asynchronous by default: a trial is ranked as soon as it reports, without
    waiting for the others, and which trial exploits which depends on the order the
    reports arrive in. `synch=True` ranks all trials together at each perturbation, the
    same way on every run, but pauses every trial there, and each restart pays
    TensorFlow's start-up in a new actor.

    Returns:
        `{"results": Tune's ResultGrid, "reports": {trial: [result, ...]}, "exploits":
        [...], "best": best Result}`; `reports` holds every result each trial reported, in
        order (see `ReportLog`). An exploit is `{"trial", "iteration", "source",
        "source_iteration", "restored_fingerprint", "weights_match"}`: `trial` loaded,
        before `iteration`, the checkpoint that the trial `source` (another trial) saved
        after its iteration `source_iteration`; `weights_match` says that its weights after
        loading (`restored_fingerprint`) equal the ones `source` saved.
    """
    random.seed(seed)
    np.random.seed(seed)
    pbt = PopulationBasedTraining(
        time_attr="training_iteration", perturbation_interval=perturbation_interval,
        quantile_fraction=0.5, resample_probability=1.0, synch=synch,
        hyperparam_mutations={"lr": tune.loguniform(*LR_RANGE)})
    config = population_config(batch, tune.grid_search(list(range(num_trials))))
    log = ReportLog()
    tuner = tfrl.tune.Tuner(
        TracedPPO, param_space=config,
        tune_config=tune.TuneConfig(metric="episode_reward_mean", mode="max", scheduler=pbt,
                                    reuse_actors=True, time_budget_s=time_budget_s),
        run_config=tune.RunConfig(
            name="pbt_cartpole", verbose=0, stop={"training_iteration": iterations},
            storage_path=storage_path or tempfile.mkdtemp(prefix="pbt_cartpole_"),
            callbacks=[log]))
    results = tuner.fit()
    exploits: List[Dict[str, Any]] = []
    for trial, rows in log.reports.items():
        for row in rows:
            source = row.get("restored_from", "")
            if not source or source == trial or source not in log.reports:
                continue  # no restore, or a paused trial resuming from its own checkpoint
            exploits.append({
                "trial": trial, "iteration": int(row["training_iteration"]),
                "source": source,
                "source_iteration": int(row["restored_source_iteration"]),
                "restored_fingerprint": row["restored_fingerprint"],
                # the weights after loading are the ones the source saved
                "weights_match": fingerprint_in(row["restored_fingerprint"],
                                                [row["saved_fingerprint"]])})
    return {"results": results, "reports": log.reports, "exploits": exploits,
            "best": results.get_best_result(metric="episode_reward_mean", mode="max")}


def _short(trial_id: str) -> str:
    return trial_id.rsplit("_", 1)[-1]  # Tune's trial index


def main() -> None:
    parser = script_parser(__doc__, "4 trials x 3 iterations of 64 steps")
    parser.add_argument("--num_cpus", type=int, default=2, help="CPUs of the local Ray runtime")
    args = parser.parse_args()
    if tune is None:
        print("SKIPPED: Ray Tune is not installed; install it with pip install 'tfrl[tune]'.")
        return
    from tfrl.backends.ray import init_ray

    init_ray(num_cpus=args.num_cpus, log_to_driver=False, configure_logging=False)
    iterations, batch = (3, 64) if args.smoke else (8, 256)
    out = run_pbt(num_trials=4, iterations=iterations, batch=batch)
    for result in sorted(out["results"], key=lambda r: r.metrics.get("trial", "")):
        m = result.metrics
        print(f"trial {_short(m['trial'])}  iter {m['training_iteration']}  "
              f"reward {m['episode_reward_mean']:.1f}  lr {result.config['lr']:.2e}")
    for e in out["exploits"]:
        print(f"exploit: trial {_short(e['trial'])} before iter {e['iteration']} loaded the "
              f"checkpoint of trial {_short(e['source'])} (weights match: {e['weights_match']})")
    best = out["best"]
    print(f"done: {len(out['exploits'])} exploits, best trial "
          f"{_short(best.metrics['trial'])} reward {best.metrics['episode_reward_mean']:.1f}")
    finals = run_without_pbt(num_trials=4, iterations=iterations, batch=batch)
    print(f"without PBT (same trials, lr {START_LR:g} throughout): best reward "
          f"{max(finals.values()):.1f}")

if __name__ == "__main__":
    main()
