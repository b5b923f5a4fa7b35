"""keras.callbacks.BackupAndRestore with Algorithm.fit(): a crashed run resumes exactly.

A first PPO fit crashes at the start of its 4th iteration; a new PPO built from the same
config fits again with the same BackupAndRestore callback. It must restore the state of
the last completed iteration (weights, counters) and run only the remaining iterations.
"""

import json
import os

import keras
import numpy as np
import pytest

from test_fit import STEPS_PER_ITER, make_ppo


class Crash(Exception):
    pass


def _snapshots(store):
    """A LambdaCallback recording weights and counters at each epoch end / train begin."""

    def snapshot(model):
        return {"iteration": model.algorithm.iteration,
                "counters": dict(model.algorithm.shared_metrics.counters),
                "weights": model.get_weights()["default_policy"]}

    cb = keras.callbacks.LambdaCallback()
    cb.on_epoch_end = lambda epoch, logs: store.setdefault("epochs", []).append(
        snapshot(cb.model))
    cb.on_train_begin = lambda logs: store.setdefault("begin", snapshot(cb.model))
    return cb


def _crash_at(epoch_to_crash):
    def on_epoch_begin(epoch, logs):
        if epoch == epoch_to_crash:
            raise Crash(f"simulated crash before iteration {epoch + 1}")
    return keras.callbacks.LambdaCallback(on_epoch_begin=on_epoch_begin)


@pytest.mark.slow
def test_backup_and_restore_resumes_after_a_crash_with_identical_counters(tmp_path):
    backup_dir = str(tmp_path / "backup")
    first = {}
    algo = make_ppo()
    with pytest.raises(Crash):
        algo.fit(iterations=5, verbose=0, callbacks=[
            keras.callbacks.BackupAndRestore(backup_dir), _snapshots(first), _crash_at(3)])
    algo.stop()
    with open(os.path.join(backup_dir, "training_metadata.json")) as f:
        assert json.load(f)["epoch"] == 3
    crashed_at = first["epochs"][-1]
    assert crashed_at["iteration"] == 3

    second = {}
    resumed = make_ppo()
    fresh_weights = resumed.get_weights()["default_policy"]
    assert any(not np.array_equal(a, b) for a, b in zip(fresh_weights, crashed_at["weights"]))
    history = resumed.fit(iterations=5, verbose=0, callbacks=[
        keras.callbacks.BackupAndRestore(backup_dir), _snapshots(second)])

    begin = second["begin"]  # Right after BackupAndRestore.on_train_begin restored.
    assert begin["iteration"] == 3
    assert begin["counters"] == crashed_at["counters"]
    for got, want in zip(begin["weights"], crashed_at["weights"]):
        np.testing.assert_array_equal(got, want)
    assert history.epoch == [3, 4]
    assert history.history["training_iteration"] == [4.0, 5.0]
    assert history.history["timesteps_total"] == [4.0 * STEPS_PER_ITER, 5.0 * STEPS_PER_ITER]
    final = second["epochs"][-1]["counters"]
    assert final["num_env_steps_sampled"] == final["num_env_steps_trained"] == 5 * STEPS_PER_ITER
    assert resumed.iteration == 5
    assert not os.path.exists(backup_dir)  # delete_checkpoint=True after a complete fit.
    resumed.stop()
