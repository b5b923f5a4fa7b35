"""The `tfrl` CLI in-process: `main(argv)` with flags parsed explicitly (reset after each
test). Trains PPO a few tiny iterations, restores, evaluates, exports; every user mistake
exits 2 with one line on stderr."""

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest
import tensorflow as tf
from absl import flags
from ai_edge_litert.interpreter import Interpreter

from cli_helpers import run_tfrl
from tfrl.algorithms.callbacks import DefaultCallbacks
from tfrl.algorithms.registry import ALGORITHMS, get_algorithm_class
from tfrl.cli import commands
from tfrl.cli.experiment import build_config
from tfrl.cli.main import main

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["--algo=PPO", "--env=CartPole-v1", "--notuned", "--seed=0",
        "--config_override=train_batch_size=64", "--config_override=rollout_fragment_length=8",
        "--config_override=num_envs_per_worker=2", "--config_override=sgd_minibatch_size=32",
        "--config_override=num_sgd_iter=2", "--config_override=model.fcnet_hiddens=[16]"]


@pytest.fixture(autouse=True)
def _reset_flags():
    yield
    flags.FLAGS.unparse_flags()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """`tfrl train` of 2 tiny PPO iterations with a checkpoint after each."""
    logdir = str(tmp_path_factory.mktemp("cli") / "run")
    out = run_tfrl("train", *TINY, "--stop=training_iteration=2", f"--logdir={logdir}",
                "--checkpoint_every=1")
    return logdir, out


def _fails(capsys, *args):
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["tfrl", *args])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.mark.parametrize("flag,says", [
    ("--local_dir=out", "--local_dir is RLlib's and Ray Tune's name for the output directory"),
    ("--log_dir=out", "--log_dir is absl's directory for its logging files, not the run's "
                      "output directory"),
])
def test_other_libraries_output_dir_flags_name_logdir(capsys, flag, says):
    # absl accepts its own --log_dir silently and answers --local_dir with "Did you mean:
    # log_dir?": both would send the run's output to the default directory.
    line = _fails(capsys, "train", *TINY, flag)
    assert line == (f"tfrl: error: {says}; tfrl's output directory flag is --logdir "
                    "(e.g. --logdir=results/ppo).")


# -------------------------------------------------------------------------- train

@pytest.mark.slow  # trains (or reuses the module's 20 s training run)
def test_train_prints_progress_and_writes_checkpoints_and_results(trained):
    logdir, out = trained
    lines = out.splitlines()
    rows = [re.fullmatch(r"iter +(\d+)  steps +(\d+)  reward +(\d+\.\d\d)  episodes +(\d+) +"
                         r"\d+ steps/s  elapsed \d:\d\d:\d\d  ETA \d:\d\d:\d\d", line)
            for line in lines[:2]]
    assert all(rows), lines
    assert [(int(r[1]), int(r[2])) for r in rows] == [(1, 64), (2, 128)]
    assert lines[2].startswith("Finished (training_iteration=2 >= 2): 2 iterations, 128 env "
                               "steps, ")
    assert lines[3] == f"Checkpoint: {logdir}/checkpoint_000002"
    assert len(lines) == 4
    files = sorted(os.listdir(logdir))
    events = [f for f in files if f.startswith("events.out.tfevents.")]
    assert len(events) == 1, files
    assert sorted(set(files) - set(events)) == [
        "checkpoint_000001", "checkpoint_000002", "experiment.json", "graphs", "result.json"]
    # TensorBoard: scalars per iteration at the env-step count, and the policy graph.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    accumulator = EventAccumulator(logdir)
    accumulator.Reload()
    rewards = accumulator.Tensors("sampler/episode_reward_mean")
    assert [event.step for event in rewards] == [64, 128]
    iterations = accumulator.Tensors("counters/training_iteration")
    assert [float(tf.make_ndarray(e.tensor_proto)) for e in iterations] == [1.0, 2.0]
    assert os.listdir(os.path.join(logdir, "graphs")) == ["default_policy"]
    with open(os.path.join(logdir, "result.json")) as f:
        results = [json.loads(line) for line in f]
    assert [(r["training_iteration"], r["timesteps_total"]) for r in results] == [(1, 64),
                                                                                 (2, 128)]
    # The progress lines show the results' numbers.
    assert [(float(r[3]), int(r[4])) for r in rows] == [
        (round(r["episode_reward_mean"], 2), r["episodes_total"]) for r in results]
    with open(os.path.join(logdir, "experiment.json")) as f:
        experiment = json.load(f)
    assert experiment == {"algo": "PPO", "env": "CartPole-v1",
                          "stop": {"training_iteration": 2}, "config": {
                              "seed": 0, "train_batch_size": 64, "rollout_fragment_length": 8,
                              "num_envs_per_worker": 2, "sgd_minibatch_size": 32,
                              "num_sgd_iter": 2, "model": {"fcnet_hiddens": [16]}}}


@pytest.mark.slow  # trains (or reuses the module's 20 s training run)
def test_restore_continues_from_the_checkpoint(trained, tmp_path):
    logdir, _ = trained
    out = run_tfrl("train", *TINY, "--stop=training_iteration=3", f"--logdir={tmp_path}",
                f"--restore={logdir}/checkpoint_000002", "--quiet")
    assert out.splitlines() == [
        out.splitlines()[0], f"Checkpoint: {tmp_path}/checkpoint_000003"]
    assert out.startswith("Finished (training_iteration=3 >= 3): 3 iterations, 192 env steps")
    with open(tmp_path / "result.json") as f:
        (result,) = [json.loads(line) for line in f]
    assert (result["training_iteration"], result["timesteps_total"]) == (3, 192)


@pytest.mark.slow  # trains (or reuses the module's 20 s training run)
def test_ctrl_c_ends_training_with_a_checkpoint(tmp_path):
    out = run_tfrl("train", *TINY, f"--logdir={tmp_path}", "--quiet",
                "--config_override=callbacks=test_cli:InterruptOnSecondResult")
    assert out.splitlines() == [
        "No stop criteria (--stop): training until interrupted; Ctrl-C writes a final "
        "checkpoint.",
        out.splitlines()[1], f"Checkpoint: {tmp_path}/checkpoint_000002"]
    # The checkpoint holds the state at the interruption (during iteration 2, after its
    # result was computed), and the summary counts what it holds (issue 29: it used to say
    # 1 iteration, the last one shown).
    assert out.splitlines()[1].startswith("Finished (interrupted): 2 iterations, 128 env steps")


def test_sigterm_summary_counts_the_iterations_it_saved(tmp_path):
    # Issue 29: the summary said one iteration fewer than the checkpoint held.
    out = run_tfrl("train", *TINY, f"--logdir={tmp_path}", "--quiet",
                   "--config_override=callbacks=test_cli:TerminateOnSecondResult")
    lines = out.splitlines()
    assert lines[1].startswith("Finished (terminated by SIGTERM): 2 iterations, 128 env "
                               "steps"), lines
    assert lines[2] == f"Checkpoint: {tmp_path}/checkpoint_000002"


class TerminateOnSecondResult(DefaultCallbacks):
    """As SIGTERM arriving after iteration 2 counted itself (`sigterm_as_interrupt`'s
    handler raises `Terminated` in the main thread)."""

    def on_train_result(self, *, algorithm, result, **kwargs):
        if result["training_iteration"] == 2:
            raise commands.Terminated("received signal 15 (SIGTERM)")


@pytest.mark.parametrize("content", [b"algo: PPO\nenv: \xff\xfeCartPole\n",
                                     bytes(range(256)) * 4])
def test_a_config_file_that_is_not_utf8_exits_2_with_one_line(capsys, tmp_path, content):
    # Issue 29: it used to end in a 25-line UnicodeDecodeError traceback (status 1).
    path = tmp_path / "config.yaml"
    path.write_bytes(content)
    line = _fails(capsys, "train", f"--config={path}")
    assert re.fullmatch(rf"tfrl train: error: Config file '{re.escape(str(path))}' is not "
                        r"UTF-8 text \(byte 0x[0-9a-f]{2} at offset \d+\); pass a YAML or "
                        r"JSON file saved as UTF-8\.", line), line


class InterruptOnSecondResult(DefaultCallbacks):
    """Imported by name through --config_override=callbacks=test_cli:...; acts as Ctrl-C."""

    def on_train_result(self, *, algorithm, result, **kwargs):
        if result["training_iteration"] == 2:
            raise KeyboardInterrupt


def test_dry_run_prints_the_learning_test_config():
    from test_ppo_learning import cartpole_config

    out = run_tfrl("train", f"--config={REPO_ROOT}/tfrl/tuned/ppo_cartpole.yaml", "--dry_run")
    resolved = json.loads(out)
    # The CLI prints what JSON cannot hold (the callbacks class) as its repr.
    expected = json.loads(json.dumps(cartpole_config(0).to_dict(), default=repr))
    assert resolved["resolved_config"] == expected
    assert (resolved["algo"], resolved["env"]) == ("PPO", "CartPole-v1")
    assert resolved["stop"] == {"episode_reward_mean": 475, "timesteps_total": 100000}


def test_help_lists_the_flags_of_a_command(capsys):
    assert main(["tfrl", "train", "--help"]) == 0
    out = capsys.readouterr().out
    assert "tfrl train --algo=PPO --env=CartPole-v1" in out and "--stop:" in out
    assert "--checkpoint_every:" in out and "--episodes:" not in out


def test_resource_flags_and_seed_go_into_the_config():
    out = run_tfrl("train", "--algo=A2C", "--env=CartPole-v1", "--num_workers=2",
                "--num_gpus=0.5", "--seed=4", "--config_override=num_workers=3", "--dry_run")
    config = json.loads(out)["resolved_config"]
    assert (config["num_workers"], config["num_gpus"], config["seed"]) == (3, 0.5, 4)


def test_each_call_starts_from_default_flags():
    run_tfrl("train", "--algo=PG", "--env=CartPole-v1", "--notuned", "--seed=3", "--dry_run")
    out = run_tfrl("train", "--algo=PG", "--env=CartPole-v1", "--notuned", "--dry_run")
    assert json.loads(out)["resolved_config"]["seed"] is None


# ---------------------------------------------------------------- evaluate, export

@pytest.mark.slow  # trains (or reuses the module's 20 s training run)
def test_evaluate_runs_deterministic_episodes(trained, capsys):
    logdir, _ = trained
    out = run_tfrl("evaluate", f"--checkpoint={logdir}/checkpoint_000002", "--episodes=3")
    match = re.fullmatch(r"Evaluated 3 episodes of CartPole-v1 \(deterministic actions\): "
                         r"return mean (\S+), min (\S+), max (\S+); length mean (\S+)\n", out)
    assert match, out
    mean, low, high, length = map(float, match.groups())
    assert 8 <= low <= mean <= high <= 500
    assert length == pytest.approx(mean, abs=0.06)  # CartPole: reward 1 per step
    out = run_tfrl("evaluate", f"--checkpoint={logdir}/checkpoint_000002", "--episodes=2",
                "--explore")
    assert out.startswith("Evaluated 2 episodes of CartPole-v1 (stochastic actions): return")


@pytest.mark.slow  # trains (or reuses the module's 20 s training run)
def test_export_writes_a_saved_model_that_serves_the_policy_actions(trained, tmp_path):
    logdir, _ = trained
    checkpoint = f"{logdir}/checkpoint_000002"
    out = run_tfrl("export", f"--checkpoint={checkpoint}", f"--export_dir={tmp_path}/model",
                "--tf_threads=1")
    assert out == f"Exported default_policy (saved_model) to {tmp_path}/model\n"
    obs = np.random.RandomState(0).uniform(-0.2, 0.2, size=(6, 4)).astype(np.float32)
    script = (
        "import sys, json, numpy as np, tensorflow as tf\n"
        "m = tf.saved_model.load(sys.argv[1])\n"
        "obs = tf.constant(json.loads(sys.argv[2]), tf.float32)\n"
        "out = m.signatures['deterministic_action'](obs=obs)\n"
        "out2 = m.signatures['serving_default'](obs=obs)\n"
        "print(json.dumps({'actions': out['actions'].numpy().tolist(),\n"
        "                  'same': bool(np.array_equal(out['actions'], out2['actions'])),\n"
        "                  'keys': sorted(out)}))\n")
    proc = subprocess.run([sys.executable, "-c", script, f"{tmp_path}/model",
                           json.dumps(obs.tolist())], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    served = json.loads(proc.stdout.strip().splitlines()[-1])
    assert served["same"] and served["keys"] == ["action_dist_inputs", "actions", "vf_preds"]
    exp = commands.experiment_of_checkpoint(checkpoint)
    algo = get_algorithm_class(exp.algo)(config=build_config(exp, {"num_workers": 0}))
    algo.restore(checkpoint)
    expected = [int(algo.compute_single_action(o, explore=False)) for o in obs]
    algo.stop()
    assert served["actions"] == expected


@pytest.mark.slow  # trains (or reuses the module's 20 s training run)
def test_export_policy_checkpoint_format(trained):
    logdir, _ = trained
    checkpoint = f"{logdir}/checkpoint_000001"
    out = run_tfrl("export", f"--checkpoint={checkpoint}", "--format=checkpoint")
    assert out == f"Exported default_policy (checkpoint) to {checkpoint}_checkpoint\n"
    assert os.path.isfile(f"{checkpoint}_checkpoint/policy.index")


@pytest.mark.slow  # trains (or reuses the module's 20 s training run), converts twice
def test_export_tflite_and_onnx_formats_act_as_the_checkpoint(trained):
    logdir, _ = trained
    checkpoint = f"{logdir}/checkpoint_000001"
    out = run_tfrl("export", f"--checkpoint={checkpoint}", "--format=tflite")
    assert out == f"Exported default_policy (tflite) to {checkpoint}_tflite\n"
    out = run_tfrl("export", f"--checkpoint={checkpoint}", "--format=onnx")
    assert out == f"Exported default_policy (onnx) to {checkpoint}_onnx\n"
    obs = np.random.default_rng(0).uniform(-0.2, 0.2, (16, 4)).astype(np.float32)
    tflite = Interpreter(model_path=f"{checkpoint}_tflite/model.tflite").get_signature_runner(
        "deterministic_action")(obs=obs)["actions"]
    session = ort.InferenceSession(f"{checkpoint}_onnx/model.onnx")
    onnx = session.run(["actions"], {"obs": obs})[0]
    assert os.path.isfile(f"{checkpoint}_onnx/model_stochastic.onnx")
    exp = commands.experiment_of_checkpoint(checkpoint)
    algo = get_algorithm_class(exp.algo)(config=build_config(exp, {"num_workers": 0}))
    algo.restore(checkpoint)
    expected = [int(algo.compute_single_action(o, explore=False)) for o in obs]
    algo.stop()
    assert tflite.tolist() == expected and onnx.tolist() == expected


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("args,message", [
    (["train", "--algo=PPX", "--env=CartPole-v1"],
     "tfrl train: error: Unknown algorithm 'PPX'. Did you mean 'PPO'? Pass --algo with one of "
     f"{', '.join(sorted(ALGORITHMS))}."),
    (["train", "--algo=PPO", "--env=CartPol-v1"],
     "tfrl train: error: Unknown env 'CartPol-v1': it is neither registered with "
     "tfrl.env.registry.register_env nor a gymnasium id. Did you mean 'CartPole-v1'"),
    (["train", "--algo=PPO", "--env=CartPole-v1", "--config_override=foo"],
     "tfrl train: error: --config_override='foo' is not KEY=VALUE; write e.g. "
     "--config_override=lr=0.001 or --config_override=model.fcnet_hiddens=[64,64]."),
    (["train", "--algo=PPO", "--env=CartPole-v1", "--config_override=rollout_fragment_lenght=8"],
     "tfrl train: error: Unknown PPOConfig key 'rollout_fragment_lenght'. Did you mean "
     "'rollout_fragment_length'? Fix it in --config or --config_override (run with --dry_run "
     "to see every key)."),
    (["evaluate", "--checkpoint=/no/such/checkpoint_000001"],
     "tfrl evaluate: error: --checkpoint='/no/such/checkpoint_000001' does not exist; pass the "
     "checkpoint_NNNNNN directory printed by `tfrl train` (or returned by Algorithm.save())."),
    (["export"], "tfrl export: error: --checkpoint is required; pass "
                 "--checkpoint=<logdir>/checkpoint_NNNNNN as printed by `tfrl train`."),
    (["train", "--algo=PPO", "--env=CartPole-v1", "--restore=/no/such/dir"],
     "tfrl train: error: --restore='/no/such/dir' does not exist; pass the checkpoint_NNNNNN"),
    (["train", "--algo=PPO", "--env=CartPole-v1", "--stop=reward=1"],
     "tfrl train: error: Unknown stop criterion 'reward' in --stop."),
    (["train", "--config=no_such.yaml"],
     "tfrl train: error: Config file 'no_such.yaml' does not exist."),
    (["train", "--env=CartPole-v1"], "tfrl train: error: No algorithm given; pass --algo=PPO"),
    (["train", "--algo=PPO", "--env=CartPole-v1", "--config_override=lr=abc", "--dry_run"],
     "tfrl train: error: PPOConfig: lr must be a finite float > 0; received 'abc' (str). Fix "
     "it in --config or --config_override (run with --dry_run to see every key)."),
    (["train", "--algo=PPO", "--env=CartPole-v1", "--config_override=clip_param=-1"],
     "tfrl train: error: PPOConfig: clip_param must be a finite float > 0; received -1 (int)."),
    (["train", "--algo=A2C", "--env=CartPole-v1", "--config_override=lr=.nan", "--dry_run"],
     "tfrl train: error: A2CConfig: lr must be a finite float > 0; received nan (float)."),
    (["trian", "--algo=PPO"], "tfrl: error: unknown command 'trian'. Did you mean 'train'? "
                              "Commands: train, evaluate, export, list, tune."),
    ([], "tfrl: error: expected one command (train, evaluate, export, list, tune); received no "
         "command. Run e.g. `tfrl train --algo=PPO --env=CartPole-v1`, or `tfrl --help`."),
    (["train", "--episodes=3"], "tfrl train: error: --episodes is not a flag of `tfrl train` "
                                "(it belongs to tfrl evaluate); remove it."),
    (["train", "--algo=PPO", "--num_wrkers=2"],
     "tfrl: error: Unknown command line flag 'num_wrkers'. Did you mean: num_workers ?"),
    (["export", "--format=pb"], "tfrl: error: flag --format=pb: value should be one of "
                                "<saved_model|checkpoint|tflite|onnx>. Run `tfrl --help` for "
                                "the flags."),
])
def test_mistakes_exit_2_with_one_line(capsys, args, message):
    line = _fails(capsys, *args)
    assert line.startswith(message), line


@pytest.mark.slow  # trains (or reuses the module's 20 s training run)
def test_checkpoint_errors(trained, tmp_path, capsys, monkeypatch):
    logdir, _ = trained
    checkpoint = f"{logdir}/checkpoint_000001"
    assert _fails(capsys, "evaluate", f"--checkpoint={tmp_path}") == (
        f"tfrl evaluate: error: --checkpoint='{tmp_path}' is not a tfrl checkpoint; pass the "
        "checkpoint_NNNNNN directory printed by `tfrl train` (or returned by Algorithm.save()).")
    assert _fails(capsys, "evaluate", f"--checkpoint={checkpoint}", "--episodes=0") == (
        "tfrl evaluate: error: --episodes=0 must be >= 1.")
    assert _fails(capsys, "export", f"--checkpoint={checkpoint}", "--policy_id=p1") == (
        "tfrl export: error: --policy_id='p1' is not a policy of this checkpoint; pass one of "
        "['default_policy'].")
    # Without pygame (hidden here if installed), render_mode="human" reaches the env. A
    # listening socket stands in for the X server, past the display check (see
    # test_cli_mistakes).
    monkeypatch.setitem(sys.modules, "pygame", None)
    with socket.socket() as x_server:
        x_server.bind(("127.0.0.1", 0))
        x_server.listen(4)
        monkeypatch.setenv("DISPLAY", f"127.0.0.1:{x_server.getsockname()[1] - 6000}")
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        assert _fails(capsys, "evaluate", f"--checkpoint={checkpoint}", "--render",
                      "--episodes=1") == (
            "tfrl evaluate: error: pygame is not installed, run `pip install "
            "\"gymnasium[classic-control]\"` (needed by --render), or evaluate without "
            "--render.")
    # A checkpoint without experiment.json: the algorithm comes from its metadata, the env
    # and config from flags.
    bare = tmp_path / "bare"
    shutil.copytree(checkpoint, bare)
    assert _fails(capsys, "evaluate", f"--checkpoint={bare}").startswith(
        "tfrl evaluate: error: No env given; pass --env=CartPole-v1")
    line = _fails(capsys, "evaluate", f"--checkpoint={bare}", "--algo=PG", "--env=CartPole-v1")
    assert line.startswith("tfrl evaluate: error: restore(): ") and line.endswith(
        "holds a PPO checkpoint; this is a PG. Restore it into a PPO. Pass --algo to match it.")


@pytest.mark.slow  # trains TD3 for two short iterations (~15 s)
def test_train_td3_with_its_tuned_file(tmp_path):
    logdir = str(tmp_path / "td3")
    out = run_tfrl("train", "--algo=TD3", f"--config={REPO_ROOT}/tfrl/tuned/td3_pendulum.yaml",
                "--stop=training_iteration=2", "--config_override=timesteps_per_iteration=400",
                "--config_override=num_steps_sampled_before_learning_starts=200",
                f"--logdir={logdir}")
    lines = out.splitlines()
    assert lines[2].startswith("Finished (training_iteration=2 >= 2): 2 iterations, 800 env "
                               "steps, 4 episodes, "), lines
    with open(os.path.join(logdir, "result.json")) as f:
        results = [json.loads(line) for line in f]
    stats = results[-1]["info"]["learner"]["default_policy"]["learner_stats"]
    # One 200-step learning phase per 200-step episode from the first on (training
    # intensity 256 with batches of 256): 4 phases, one compiled call each.
    assert stats["num_grad_updates"] == 800 and stats["num_traces"] == 1
    assert np.isfinite(stats["critic_loss"]) and np.isfinite(stats["actor_loss"])
    with open(os.path.join(logdir, "experiment.json")) as f:
        assert json.load(f)["algo"] == "TD3"


def test_after_a_sigterm_later_ones_stay_ignored_after_the_block():
    # Issue 29: the block put the default handler back, so a second SIGTERM while the
    # process exited (with status 143) killed it by the signal.
    import signal
    import time

    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(commands.Terminated):
            with commands.sigterm_as_interrupt() as received:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # the handler raises in the main thread first
        assert received == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGTERM)  # ignored: this process goes on
        signal.signal(signal.SIGTERM, previous)
        with commands.sigterm_as_interrupt() as received:  # no SIGTERM: handler put back
            pass
        assert signal.getsignal(signal.SIGTERM) == previous and received == []
    finally:
        signal.signal(signal.SIGTERM, previous)
