"""Algorithm.fit(): History, stock Keras callbacks, RL hooks, budgets and errors.

One tiny PPO run (3 iterations of 64 env steps) with many callbacks at once is shared by
the tests that inspect its outputs; later tests continue training the same algorithm and
assert relative to its iteration.
"""

import csv
import os

import keras
import numpy as np
import pytest

from tfrl.algorithms.fit_callbacks import (Callback, ProgressLogger, StopOnCriteria,
                                           wants_rl_hooks)
from tfrl.algorithms.fit_loop import _resume_epoch, fit, flatten_result
from tfrl.algorithms.fit_model import AlgorithmModel
from tfrl.utils.tensorboard import TensorBoard

TINY_PPO = dict(env="CartPole-v1", train_batch_size=64, rollout_fragment_length=8,
                num_envs_per_worker=2, sgd_minibatch_size=32, num_sgd_iter=2,
                model={"fcnet_hiddens": [16]}, seed=0, num_workers=0)
STEPS_PER_ITER = 64
LOSS_KEY = "info/learner/default_policy/learner_stats/total_loss"


def make_ppo(**overrides):
    from tfrl.algorithms.ppo import PPO

    return PPO(config={**TINY_PPO, **overrides})


class Recorder(Callback):
    """Records every hook call (Keras and RL) and the algorithm state after each epoch."""

    def __init__(self):
        super().__init__()
        self.calls, self.episodes, self.samples, self.learns, self.weights = [], [], [], [], []
        self.counters, self.hist_rewards = [], []

    def on_train_begin(self, logs=None):
        self.calls.append(("train_begin",))

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(("epoch_begin", epoch))

    def on_train_batch_end(self, batch, logs=None):
        self.calls.append(("batch_end", batch))

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(("epoch_end", epoch))
        self.weights.append(self.model.get_weights())
        self.counters.append(dict(self.model.algorithm.shared_metrics.counters))
        self.hist_rewards.append(list(self.model.last_result["hist_stats"]["episode_reward"]))

    def on_train_end(self, logs=None):
        self.calls.append(("train_end",))

    def on_episode_end(self, episode, logs=None):
        self.episodes.append(logs)

    def on_sample_end(self, samples, logs=None):
        self.samples.append(logs)

    def on_learn_end(self, policy_id, logs=None):
        self.learns.append((policy_id, logs))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fit")
    algo = make_ppo()
    original_callbacks_class = type(algo.workers.local_worker().callbacks)
    recorder = Recorder()
    lambda_logs = []
    callbacks = [
        keras.callbacks.CSVLogger(str(out / "log.csv")),
        recorder,
        keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: lambda_logs.append(
            (e, dict(logs)))),
        keras.callbacks.TensorBoard(str(out / "keras_tb"), histogram_freq=1),
        TensorBoard(str(out / "tb")),
        keras.callbacks.ModelCheckpoint(str(out / "ckpt_{epoch}.keras")),
        keras.callbacks.ProgbarLogger(),
    ]
    history = algo.fit(iterations=3, callbacks=callbacks, verbose=1)
    yield dict(algo=algo, out=out, history=history, recorder=recorder,
               lambda_logs=lambda_logs, original_callbacks_class=original_callbacks_class)
    algo.stop()


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_history_has_each_numeric_key_per_iteration(run):
    history = run["history"]
    assert isinstance(history, keras.callbacks.History)
    assert history.epoch == [0, 1, 2]
    assert history.history["training_iteration"] == [1.0, 2.0, 3.0]
    assert history.history["timesteps_total"] == [64.0, 128.0, 192.0]
    assert history.history["counters/num_env_steps_trained"] == [64.0, 128.0, 192.0]
    assert len(history.history[LOSS_KEY]) == 3
    assert all(np.isfinite(history.history[LOSS_KEY]))
    assert not any(k.startswith("hist_stats") or k == "done" for k in history.history)
    assert run["algo"].iteration == 3


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_callbacks_see_the_keras_protocol(run):
    recorder = run["recorder"]
    assert recorder.calls == [("train_begin",),
                              ("epoch_begin", 0), ("batch_end", 0), ("epoch_end", 0),
                              ("epoch_begin", 1), ("batch_end", 0), ("epoch_end", 1),
                              ("epoch_begin", 2), ("batch_end", 0), ("epoch_end", 2),
                              ("train_end",)]
    assert recorder.params["epochs"] == 3 and recorder.params["steps"] == 1
    assert isinstance(recorder.model, AlgorithmModel)
    assert recorder.model.algorithm is run["algo"]


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_lambda_callback_gets_the_flattened_logs(run):
    logs = run["lambda_logs"]
    assert [e for e, _ in logs] == [0, 1, 2]
    for e, entry in logs:
        assert entry["timesteps_total"] == run["history"].history["timesteps_total"][e]
        assert entry[LOSS_KEY] == run["history"].history[LOSS_KEY][e]


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_csv_logger_writes_one_row_per_iteration(run):
    with open(run["out"] / "log.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2]
    assert [float(r["timesteps_total"]) for r in rows] == [64.0, 128.0, 192.0]
    assert [float(r[LOSS_KEY]) for r in rows] == pytest.approx(run["history"].history[LOSS_KEY])


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_rl_hooks_reach_callbacks_and_are_removed_after_fit(run):
    recorder, history = run["recorder"], run["history"].history
    assert len(recorder.episodes) == history["episodes_total"][-1]
    assert all(e["episode_length"] >= 1 and e["episode_reward"] == e["episode_length"]
               for e in recorder.episodes)  # CartPole: reward 1 per step.
    assert sum(s["env_steps"] for s in recorder.samples) == 3 * STEPS_PER_ITER
    assert [pid for pid, _ in recorder.learns] == ["default_policy"] * 3
    assert [stats["total_loss"] for _, stats in recorder.learns] == history[LOSS_KEY]
    assert type(run["algo"].workers.local_worker().callbacks) is run["original_callbacks_class"]


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_model_checkpoint_files_restore_the_algorithm(run):
    for epoch in (1, 2, 3):
        assert os.path.isfile(run["out"] / f"ckpt_{epoch}.keras")
    algo, recorder = run["algo"], run["recorder"]
    AlgorithmModel(algo).load_weights(str(run["out"] / "ckpt_2.keras"))
    assert algo.iteration == 2
    assert dict(algo.shared_metrics.counters) == recorder.counters[1]
    restored = algo.get_weights()["default_policy"]
    for got, want in zip(restored, recorder.weights[1]["default_policy"]):
        np.testing.assert_array_equal(got, want)
    history = algo.fit(iterations=1, verbose=0)  # Continues at iteration 3 again.
    assert history.epoch == [2]
    assert history.history["timesteps_total"] == [192.0]


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_early_stopping_stops_when_the_monitored_metric_stalls(run):
    algo = run["algo"]
    start = algo.iteration
    stall = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda e, logs: logs.update(episode_reward_mean=10.0))
    stopper = keras.callbacks.EarlyStopping(monitor="episode_reward_mean", mode="max",
                                            patience=2)
    history = algo.fit(iterations=20, callbacks=[stall, stopper], verbose=0)
    # Epoch 1 sets the best value; 2 epochs without improvement exhaust the patience.
    assert history.epoch == [start, start + 1, start + 2]
    assert stopper.stopped_epoch == start + 2
    assert algo.iteration == start + 3


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_early_stopping_on_a_constant_result_key(run):
    algo = run["algo"]
    start = algo.iteration
    stopper = keras.callbacks.EarlyStopping(monitor="num_healthy_workers", mode="max",
                                            patience=1)
    history = algo.fit(iterations=20, callbacks=[stopper], verbose=0)
    assert history.epoch == [start, start + 1]


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_early_stopping_restores_the_best_weights_through_the_adapter(run):
    algo = run["algo"]
    start = algo.iteration
    snapshots = []
    falling = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: (
        logs.update(score=float(start - e)), snapshots.append(algo.get_weights())))
    stopper = keras.callbacks.EarlyStopping(monitor="score", mode="max", patience=2,
                                            restore_best_weights=True)
    history = algo.fit(iterations=20, callbacks=[falling, stopper], verbose=0)
    assert history.epoch == [start, start + 1, start + 2]
    assert stopper.best_epoch == start
    restored = algo.get_weights()["default_policy"]
    for got, best, last in zip(restored, snapshots[0]["default_policy"],
                               snapshots[-1]["default_policy"]):
        np.testing.assert_array_equal(got, best)
    assert any(not np.array_equal(b, l) for b, l in zip(snapshots[0]["default_policy"],
                                                        snapshots[-1]["default_policy"]))


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_backup_and_restore_with_batch_level_saves(run, tmp_path):
    algo = run["algo"]
    start = algo.iteration
    backup_dir = str(tmp_path / "backup")
    algo.fit(iterations=2, verbose=0, callbacks=[keras.callbacks.BackupAndRestore(
        backup_dir, save_freq=1, delete_checkpoint=False)])
    counters = dict(algo.shared_metrics.counters)
    assert algo.iteration == start + 2
    algo.train()  # Past the backup; the next fit goes back to it.
    restored = []
    history = algo.fit(iterations=1, verbose=0, callbacks=[
        keras.callbacks.BackupAndRestore(backup_dir),
        keras.callbacks.LambdaCallback(on_train_begin=lambda logs: restored.append(
            dict(algo.shared_metrics.counters)))])
    assert restored == [counters]
    # The budget is "until iteration start + 3 + 1": the rewound iteration runs again.
    assert history.epoch == [start + 2, start + 3]


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_total_timesteps_budget_and_one_line_per_iteration(run, capsys):
    algo = run["algo"]
    before = int(algo.shared_metrics.counters["num_env_steps_sampled"])
    start = algo.iteration
    history = algo.fit(total_timesteps=100, verbose=2)
    assert history.history["timesteps_total"] == [before + 64.0, before + 128.0]
    lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("iter")]
    assert [l.split("  reward")[0] for l in lines] == [
        f"iter {start + 1:3d}  steps {before + 64:6d}",
        f"iter {start + 2:3d}  steps {before + 128:6d}"]
    rewards = [float(l.split("reward")[1].split()[0]) for l in lines]
    assert rewards == [round(r, 2) for r in history.history["episode_reward_mean"]]
    # ETA against the budget: 0 after the last iteration.
    assert all("steps/s  elapsed " in l for l in lines) and lines[-1].endswith("ETA 0:00:00")


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_stop_on_criteria_replaces_the_budget(run):
    algo = run["algo"]
    counters = algo.shared_metrics.counters
    start, steps = algo.iteration, int(counters["num_env_steps_sampled"])
    stop = StopOnCriteria({"training_iteration": start + 2})
    history = algo.fit(callbacks=[stop], verbose=0)
    assert history.epoch == [start, start + 1] and algo.iteration == start + 2
    assert stop.reason == f"training_iteration={start + 2} >= {start + 2}"
    assert history.params["epochs"] == start + 2
    # With a budget too, whichever comes first: the step criterion after one iteration.
    stop = StopOnCriteria({"timesteps_total": steps + 2 * STEPS_PER_ITER + 1})
    history = algo.fit(iterations=5, callbacks=[stop], verbose=0)
    assert history.history["timesteps_total"] == [steps + 3.0 * STEPS_PER_ITER]
    assert stop.reason == (f"timesteps_total={steps + 3 * STEPS_PER_ITER} >= "
                           f"{steps + 2 * STEPS_PER_ITER + 1}")


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_train_until_runs_fit_and_returns_the_last_result(run, capsys):
    from tfrl.utils.progress_callbacks import train_until

    algo = run["algo"]
    start = algo.iteration
    result = train_until(algo, {"training_iteration": start + 1},
                         extra={"loss": (LOSS_KEY, ".3f")})
    assert result["training_iteration"] == start + 1 and algo.iteration == start + 1
    loss = result["info"]["learner"]["default_policy"]["learner_stats"]["total_loss"]
    assert capsys.readouterr().out == (
        f"iter {start + 1:3d}  steps {result['timesteps_total']:6d}  reward "
        f"{result['episode_reward_mean']:7.2f}  loss {loss:.3f}\n")


def test_flatten_result_keeps_numeric_leaves():
    result = {"a": 1, "b": {"c": np.float32(2.5), "d": [1, 2], "e": {"f": np.array(3)}},
              "done": True, "s": "x", "n": None, 7: 1.5}
    assert flatten_result(result) == {"a": 1.0, "b/c": 2.5, "b/e/f": 3.0, "7": 1.5}


@pytest.mark.parametrize("kwargs, match", [
    (dict(), "exactly one budget"),
    (dict(total_timesteps=10, iterations=1), "exactly one budget"),
    (dict(iterations=0), "positive integer"),
    (dict(total_timesteps=2.5), "positive integer"),
    (dict(iterations=True), "positive integer"),
])
def test_fit_budget_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit(object(), **kwargs)


def test_fit_rejects_non_keras_callbacks():
    with pytest.raises(TypeError, match="LambdaCallback"):
        fit(object(), iterations=1, callbacks=[lambda epoch, logs: None])


def test_resume_epoch_mismatch_is_an_error():
    class Stub:
        iteration = 3

    model = AlgorithmModel(Stub())
    model._initial_epoch = 5
    with pytest.raises(RuntimeError, match="initial epoch to 5 but the algorithm is at "
                                           "iteration 3"):
        _resume_epoch(Stub(), model)
    model._initial_epoch = 2  # A batch-level backup's metadata lags by one epoch.
    assert _resume_epoch(Stub(), model) == 3


def test_algorithm_model_file_errors(tmp_path):
    model = AlgorithmModel(algorithm=None)
    with pytest.raises(FileNotFoundError, match="No fit checkpoint file"):
        model.load_weights(str(tmp_path / "missing.weights.h5"))
    bogus = tmp_path / "bogus.keras"
    bogus.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a tfrl fit checkpoint"):
        model.load_weights(str(bogus))
    with pytest.raises(FileExistsError, match="overwrite=True"):
        model.save_weights(str(bogus), overwrite=False)


def test_fit_without_budget_runs_until_the_stop_criterion():
    class Counting:
        """What fit reads of an algorithm: `iteration`, the step counter and `train()`."""

        def __init__(self):
            self.iteration = 0
            self.shared_metrics = type("Metrics", (), {"counters": {}})()

        def train(self):
            self.iteration += 1
            return {"training_iteration": self.iteration,
                    "episode_reward_mean": 2.0 ** self.iteration}

    stop = StopOnCriteria({"episode_reward_mean": 10})
    history = fit(Counting(), callbacks=[stop], verbose=0)
    assert history.history["episode_reward_mean"] == [2.0, 4.0, 8.0, 16.0]
    assert stop.reason == "episode_reward_mean=16 >= 10" and history.params["epochs"] is None


def test_hook_detection():
    class Duck(keras.callbacks.Callback):
        def on_sample_end(self, samples, logs=None):
            pass

    assert wants_rl_hooks(Duck(), "on_sample_end")
    assert not wants_rl_hooks(Duck(), "on_episode_end")
    assert not wants_rl_hooks(keras.callbacks.History(), "on_learn_end")
    assert not wants_rl_hooks(ProgressLogger(), "on_episode_end")


def _tensors(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return {tag: [(e.step, _value(e.tensor_proto)) for e in acc.Tensors(tag)]
            for tag in acc.Tags()["tensors"]}


def _as_float32(values):
    """Python floats of `values` rounded to float32 (as TensorBoard stores scalars)."""
    return [float(v) for v in np.asarray(values, np.float32)]


def _value(proto):
    import tensorflow as tf

    array = tf.make_ndarray(proto)
    return float(array) if array.ndim == 0 else array


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_tfrl_tensorboard_events_have_grouped_tags_and_values(run):
    tensors = _tensors(run["out"] / "tb")
    history = run["history"].history
    steps = [64, 128, 192]
    # (TensorBoard keeps float32 scalars: the history's values rounded to float32.)
    assert tensors["sampler/episode_reward_mean"] == list(zip(
        steps, _as_float32(history["episode_reward_mean"])))
    assert [v for _, v in tensors["learner/default_policy/total_loss"]] == pytest.approx(
        history[LOSS_KEY])
    assert [v for _, v in tensors[
        "debug/learner/default_policy/num_traces/learn_on_batch"]] == [
        1.0, 1.0, 1.0]  # The retrace counter: one trace, never retraced.
    assert [v for _, v in tensors["debug/counters/num_env_steps_trained"]] == [
        64.0, 128.0, 192.0]
    # The curves users read stay at the top; tfrl's internals are one debug/ group.
    assert "counters/timesteps_total" in tensors and "debug/misc/timestamp" in tensors
    assert not any(tag.startswith(("misc/", "learner/default_policy/num_traces"))
                   for tag in tensors)
    assert "timers/learn_time_ms" in tensors and "timers/time_this_iter_s" in tensors
    # Histogram buckets ([left, right, count] rows): the counts sum to the number of
    # episodes in each iteration's metrics window, the edges span their rewards.
    hist = tensors["hist_stats/episode_reward"]
    assert [s for s, _ in hist] == steps
    for (_, buckets), rewards in zip(hist, run["recorder"].hist_rewards):
        assert buckets[:, 2].sum() == len(rewards)
        assert (buckets[0, 0], buckets[-1, 1]) == (min(rewards), max(rewards))
    assert all(k.split("/")[0] in {"sampler", "learner", "timers", "counters", "debug",
                                   "hist_stats"} for k in tensors)


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_tfrl_tensorboard_writes_the_policy_graph(run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run["out"] / "tb" / "graphs" / "default_policy"))
    acc.Reload()
    names = [node.name for node in acc.Graph().node]
    assert any(n.endswith("MatMul") for n in names)


@pytest.mark.slow  # trains (or reuses) the module\'s tiny PPO run
def test_stock_keras_tensorboard_works_with_the_adapter(run):
    tensors = _tensors(run["out"] / "keras_tb" / "train")
    history = run["history"].history
    assert tensors["epoch_episode_reward_mean"] == list(enumerate(
        _as_float32(history["episode_reward_mean"])))
    loss = tensors["epoch_" + LOSS_KEY]
    assert [step for step, _ in loss] == [0, 1, 2]
    assert [v for _, v in loss] == pytest.approx(history[LOSS_KEY], rel=1e-6)
    # histogram_freq=1: the default policy model's weights (AlgorithmModel.layers).
    weight_hists = [t for t in tensors if t.endswith("/histogram")]
    assert weight_hists and all(len(tensors[t]) == 3 for t in weight_hists)
