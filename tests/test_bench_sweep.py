"""bench/sweep_work.py (bench/bench_sweep.py's) count of the work each sweep did (minibatch SGD steps, trial
seconds, early stops), from files of the shape `tfrl tune` and the Zoo write. No sweep,
no Ray, no SB3."""

import importlib
import json
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, os.path.join(REPO, "bench"))
    try:
        yield importlib.import_module("sweep_work")
    finally:
        sys.path.remove(os.path.join(REPO, "bench"))


def _trial(root, name, params, timesteps, seconds):
    directory = root / name
    directory.mkdir()
    (directory / "params.json").write_text(json.dumps(params))
    lines = [{"timesteps_total": t, "time_total_s": s} for t, s in zip(timesteps, seconds)]
    (directory / "result.json").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_tfrl_work_counts_one_learning_phase_per_train_batch(bench, tmp_path):
    # 20 batches of 1024 x 20 epochs x 64 minibatches of 16; one batch of 8192 x 5
    # epochs x 2048 minibatches of 4 (stopped at 8192 < 20000 steps).
    _trial(tmp_path, "a", {"train_batch_size": 1024, "sgd_minibatch_size": 16,
                           "num_sgd_iter": 20}, [5120, 20480], [20.0, 90.0])
    _trial(tmp_path, "b", {"train_batch_size": 8192, "sgd_minibatch_size": 4,
                           "num_sgd_iter": 5}, [8192], [30.5])
    (tmp_path / "experiment_state.json").write_text("{}")  # not a trial
    work = bench.tfrl_work(str(tmp_path), 20000)
    assert work == {"trials": 2, "sgd_steps": 20 * 20 * 64 + 5 * 2048, "trial_s": 120.5,
                    "stopped": 1}


def test_zoo_work_reads_the_report_csv(bench, tmp_path):
    report = tmp_path / "report.csv"
    report.write_text(
        ",number,value,duration,params_batch_size_pow,params_n_epochs,params_n_steps_pow,"
        "state\n"
        "0,0,157.0,0 days 00:09:05.5,2,10,8,COMPLETE\n"
        "1,1,9.0,0 days 00:00:03.25,10,20,7,PRUNED\n")
    work = bench.zoo_work(str(report))
    # Complete: rollouts of 256 x 8 = 2048 steps, 10 updates for 20k steps, each 10
    # epochs of 512 minibatches of 4. Pruned: rollouts of 1024, minibatch 1024 (one a
    # epoch, 20 epochs); 4 updates before the first evaluation (5k), 14 before the last.
    assert work == {"trials": 2, "sgd_steps": 51200 + 4 * 20, "sgd_steps_max": 51200 + 14 * 20,
                    "trial_s": pytest.approx(548.75), "pruned": 1}
