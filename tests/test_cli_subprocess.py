"""The `tfrl` CLI as users run it: `python -m tfrl` and the installed `tfrl` script, in
fresh processes (exit codes, stdout, and stderr holding exactly the one error line)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tree

from tfrl.algorithms.registry import get_algorithm_class
from tfrl.cli.commands import EXPERIMENT_FILE, experiment_of_checkpoint
from tfrl.cli.experiment import build_config

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = shutil.which("tfrl", path=os.path.dirname(sys.executable))
TINY = ["--algo=PPO", "--env=CartPole-v1", "--notuned", "--seed=0", "--tf_threads=1",
        "--config_override=train_batch_size=64", "--config_override=rollout_fragment_length=8",
        "--config_override=num_envs_per_worker=2", "--config_override=sgd_minibatch_size=32",
        "--config_override=num_sgd_iter=2", "--config_override=model.fcnet_hiddens=[16]"]


def _run(*args, script=False, timeout=240):
    command = [SCRIPT] if script else [sys.executable, "-m", "tfrl"]
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = REPO_ROOT
    return subprocess.run(command + list(args), capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO_ROOT)


# Markers of TensorFlow's C++ start-up notices (oneDNN, CPU features, CUDA).
NOTICES = ("oneDNN", "cpu_feature_guard", "TF_ENABLE_ONEDNN_OPTS", "cuda_", "cudart",
           "absl::InitializeLog")


def _notices(text):
    return [line for line in text.splitlines() if any(n in line for n in NOTICES)]


def _one_error_line(proc):
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.slow
def test_train_then_evaluate_in_fresh_processes(tmp_path):
    logdir = tmp_path / "run"
    proc = _run("train", *TINY, "--stop=training_iteration=2", f"--logdir={logdir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert [line.split("  steps")[0] for line in lines[:2]] == ["iter   1", "iter   2"]
    assert lines[2].startswith("Finished (training_iteration=2 >= 2): 2 iterations, 128 env")
    assert lines[3] == f"Checkpoint: {logdir}/checkpoint_000002" and len(lines) == 4
    assert proc.stderr == ""  # TensorFlow's C++ start-up messages are hidden too
    assert _notices(proc.stdout) == []
    proc = _run("evaluate", f"--checkpoint={logdir}/checkpoint_000002", "--episodes=2",
                script=SCRIPT is not None)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    assert re.fullmatch(r"Evaluated 2 episodes of CartPole-v1 \(deterministic actions\): return "
                        r"mean \d+\.\d\d, min \d+\.\d\d, max \d+\.\d\d; length mean \d+\.\d\n",
                        proc.stdout), proc.stdout


@pytest.mark.parametrize("args,message", [
    (["train", "--algo=PPX", "--env=CartPole-v1"],
     "tfrl train: error: Unknown algorithm 'PPX'. Did you mean 'PPO'?"),
    (["train", "--algo=PPO", "--env=NoSuchEnv-v0"], "tfrl train: error: Unknown env 'NoSuchEnv-v0'"),
    (["train", "--algo=PPO", "--env=CartPole-v1", "--config_override=foo"],
     "tfrl train: error: --config_override='foo' is not KEY=VALUE"),
    (["evaluate", "--checkpoint=/no/such/dir"],
     "tfrl evaluate: error: --checkpoint='/no/such/dir' does not exist"),
    (["train", "--bogus"], "tfrl: error: Unknown command line flag 'bogus'"),
    (["train", "--algo=PPO", "--env=CartPole-v1", "--config_override=lr=abc", "--dry_run"],
     "tfrl train: error: PPOConfig: lr must be a finite float > 0; received 'abc' (str)."),
    (["train", "--algo=PPO", "--env=CartPole-v1", "--config_override=train_batch_size=abc"],
     "tfrl train: error: PPOConfig: train_batch_size must be an int >= 1; received 'abc' (str)."),
])
def test_fast_mistakes_exit_2_with_one_line_from_python_m(args, message):
    assert _one_error_line(_run(*args)).startswith(message)


def test_a_config_file_that_is_not_utf8_exits_2_with_one_line(tmp_path):
    # Issue 29: a 25-line UnicodeDecodeError traceback and status 1.
    path = tmp_path / "random.yaml"
    path.write_bytes(bytes(range(128, 256)) * 8)
    line = _one_error_line(_run("train", f"--config={path}"))
    assert line == (f"tfrl train: error: Config file '{path}' is not UTF-8 text (byte 0x80 at "
                    "offset 0); pass a YAML or JSON file saved as UTF-8.")


@pytest.mark.skipif(SCRIPT is None, reason="the tfrl console script is not installed")
def test_console_script_reports_mistakes_and_help():
    line = _one_error_line(_run("export", "--checkpoint=/nope", script=True))
    assert line.startswith("tfrl export: error: --checkpoint='/nope' does not exist")
    proc = _run("--help", script=True)
    assert proc.returncode == 0 and "Experiment files (`--config=FILE`" in proc.stdout


# Runs the CLI in a fresh interpreter, then prints TF_CPP_MIN_LOG_LEVEL as tfrl left it.
LEVEL_PROBE = ("import os, sys; from tfrl.cli.main import main; main(sys.argv[1:]); "
               "print('TF_CPP_MIN_LOG_LEVEL', os.environ.get('TF_CPP_MIN_LOG_LEVEL'))")


@pytest.mark.slow  # two fresh interpreters import TensorFlow
@pytest.mark.parametrize("verbose", [False, True])
def test_verbose_keeps_tensorflow_notices_on(verbose):
    args = ["tfrl", "train", *TINY, "--dry_run"] + (["--verbose"] if verbose else [])
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = REPO_ROOT
    proc = subprocess.run([sys.executable, "-c", LEVEL_PROBE, *args], capture_output=True,
                          text=True, timeout=240, env=env, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Without --verbose tfrl sets the level (TensorFlow then logs only errors) and hides
    # the notices; with it, TensorFlow keeps its default level and prints what it prints
    # on this machine (not asserted: it differs between machines).
    assert proc.stdout.splitlines()[-1] == ("TF_CPP_MIN_LOG_LEVEL None" if verbose
                                            else "TF_CPP_MIN_LOG_LEVEL 3")
    assert '"algo": "PPO"' in proc.stdout  # the dry run's resolved experiment
    if not verbose:
        assert proc.stderr == "" and _notices(proc.stdout) == []


@pytest.mark.slow  # trains in a fresh interpreter, then restores in this one
def test_sigterm_writes_a_final_checkpoint_and_exits_143(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(PYTHONPATH=REPO_ROOT, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "tfrl", "train", *TINY,
                             f"--logdir={tmp_path}"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT)
    try:
        lines = []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # no --stop: it trains until stopped
            line = proc.stdout.readline()
            assert line, f"tfrl train ended early: {proc.wait()} {proc.stderr.read()[-2000:]}"
            lines.append(line.rstrip("\n"))
            if line.startswith("iter "):
                break
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err[-3000:]
    lines += out.splitlines()
    assert lines[0].startswith("No stop criteria (--stop): training until interrupted")
    finished = [line for line in lines if line.startswith("Finished (")]
    assert len(finished) == 1 and finished[0].startswith("Finished (terminated by SIGTERM): ")
    checkpoint = lines[-1].removeprefix("Checkpoint: ")
    assert lines[-1].startswith("Checkpoint: ") and os.path.dirname(checkpoint) == str(tmp_path)
    # The final checkpoint restores into the algorithm of the run's experiment.json.
    with open(tmp_path / EXPERIMENT_FILE) as f:
        assert json.load(f)["algo"] == "PPO"
    exp = experiment_of_checkpoint(checkpoint)
    algo = get_algorithm_class(exp.algo)(config=build_config(exp))
    try:
        algo.restore(checkpoint)
        assert algo.iteration == int(checkpoint.rsplit("_", 1)[1]) >= 1
        weights = algo.get_policy().get_weights()
        assert weights and all(np.all(np.isfinite(w)) for w in tree.flatten(weights))
    finally:
        algo.stop()


@pytest.mark.slow  # trains in a fresh interpreter
def test_sigterms_during_the_final_save_and_exit_still_exit_143(tmp_path):
    # Issue 29: a second SIGTERM while the process saved and exited killed it by the
    # signal (status -15) instead of 143. Here SIGTERMs keep coming every 20 ms from the
    # first one until the process ends.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(PYTHONPATH=REPO_ROOT, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "tfrl", "train", *TINY,
                             f"--logdir={tmp_path}"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, f"tfrl train ended early: {proc.wait()} {proc.stderr.read()[-2000:]}"
            if line.startswith("iter "):
                break
        while proc.poll() is None and time.monotonic() < deadline:
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.02)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, (proc.returncode, err[-3000:])
    lines = out.splitlines()
    assert lines[-2].startswith("Finished (terminated by SIGTERM): "), lines
    checkpoint = lines[-1].removeprefix("Checkpoint: ")
    assert os.path.isfile(os.path.join(checkpoint, "arrays.npz")), lines
