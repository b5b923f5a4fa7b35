"""The tuned files inside the package and the commands that find them: `tfrl list`,
`--config=NAME`, `tfrl train --algo=A --env=E` (RL Zoo's habit), `--restore` from the
checkpoint's experiment.json, algorithm names in any case, `--version`, and the
Stable-Baselines3 key table."""

import json
import os
import subprocess
import sys

import pytest

from cli_helpers import run_tfrl
from tfrl import tuned
from tfrl.algorithms.registry import ALGORITHMS, canonical_name, get_config_class
from tfrl.algorithms.sb3_keys import SB3_KEYS, sb3_hints
from tfrl.cli import commands
from tfrl.cli.experiment import (CliError, Experiment, build_config, check_config,
                                 resolve_experiment, tuned_for)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ------------------------------------------------------------------ the package data

def test_tuned_files_live_in_the_package_and_examples_tuned_only_points_there():
    assert tuned.TUNED_DIR == os.path.join(REPO_ROOT, "tfrl", "tuned")
    assert len(tuned.names()) >= 30 and "ppo_cartpole" in tuned.names()
    # A file added to examples/tuned/ (the old place) would not ship with the package.
    assert os.listdir(os.path.join(REPO_ROOT, "examples", "tuned")) == ["README.md"]


@pytest.mark.slow  # runs setuptools' build_py (~10 s)
def test_setup_py_ships_every_tuned_file(tmp_path):
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "-d", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shipped = sorted(os.listdir(tmp_path / "tfrl" / "tuned"))
    assert shipped == sorted(os.listdir(tuned.TUNED_DIR))  # every yaml, README, __init__
    with open(os.path.join(REPO_ROOT, "MANIFEST.in")) as f:  # and the sdist
        assert "recursive-include tfrl/tuned *.yaml *.md" in f.read()


# ------------------------------------------------------------------ finding them

def test_config_takes_a_tuned_files_name():
    by_name = json.loads(run_tfrl("train", "--config=ppo_cartpole", "--dry_run"))
    by_path = json.loads(run_tfrl("train", f"--config={tuned.path('ppo_cartpole')}",
                                  "--dry_run"))
    assert by_name == by_path
    assert by_name["config_file"] == os.path.join(tuned.TUNED_DIR, "ppo_cartpole.yaml")
    assert by_name["stop"] == {"episode_reward_mean": 475, "timesteps_total": 100000}


def test_algo_and_env_use_the_tuned_file_of_the_pair():
    tuned_run = json.loads(run_tfrl("train", "--algo=ppo", "--env=CartPole-v1", "--dry_run"))
    assert tuned_run == json.loads(run_tfrl("train", "--config=ppo_cartpole", "--dry_run"))
    defaults = json.loads(run_tfrl("train", "--algo=ppo", "--env=CartPole-v1", "--notuned",
                                   "--dry_run"))
    assert "config_file" not in defaults and defaults["stop"] == {}
    assert defaults["resolved_config"]["train_batch_size"] == 4000  # RLlib's default
    assert tuned_run["resolved_config"]["train_batch_size"] == 256
    # No tuned file for the pair: the defaults, silently.
    assert "config_file" not in json.loads(run_tfrl("train", "--algo=PG", "--env=Acrobot-v1",
                                                    "--dry_run"))


def test_the_shortest_name_wins_and_the_others_are_named():
    assert tuned_for("dqn", "CartPole-v1") == [
        ("dqn_cartpole", tuned.path("dqn_cartpole")),
        ("dqn_c51_cartpole", tuned.path("dqn_c51_cartpole")),
        ("dqn_cartpole_zoo", tuned.path("dqn_cartpole_zoo")),
        ("dqn_noisy_cartpole", tuned.path("dqn_noisy_cartpole")),
        ("dqn_qrdqn_cartpole", tuned.path("dqn_qrdqn_cartpole")),
        ("dqn_rainbow_cartpole", tuned.path("dqn_rainbow_cartpole")),
        ("dqn_qrdqn_cartpole_zoo", tuned.path("dqn_qrdqn_cartpole_zoo"))]
    assert tuned_for("DQN", "Acrobot-v1") == []


@pytest.mark.slow  # trains one tiny iteration
def test_train_says_which_tuned_file_it_uses(tmp_path):
    out = run_tfrl("train", "--algo=dqn", "--env=CartPole-v1", "--quiet",
                   "--stop=training_iteration=1", "--config_override=timesteps_per_iteration=32",
                   "--config_override=num_steps_sampled_before_learning_starts=32",
                   "--config_override=train_batch_size=16", f"--logdir={tmp_path}")
    lines = out.splitlines()
    assert lines[0] == (f"Using the tuned file dqn_cartpole ({tuned.path('dqn_cartpole')}); "
                        "also tuned: dqn_c51_cartpole, dqn_cartpole_zoo, dqn_noisy_cartpole, "
                        "dqn_qrdqn_cartpole, dqn_rainbow_cartpole, dqn_qrdqn_cartpole_zoo. --notuned "
                        "for the algorithm's defaults.")
    assert lines[1].startswith("Finished (training_iteration=1 >= 1): 1 iterations")
    with open(tmp_path / "experiment.json") as f:
        assert json.load(f)["config_file"] == tuned.path("dqn_cartpole")


def test_list_shows_the_algorithms_and_every_tuned_file(capsys):
    out = run_tfrl("list")
    lines = out.splitlines()
    assert lines[0] == f"Algorithms (--algo, any case): {', '.join(sorted(ALGORITHMS))}"
    assert lines[2] == f"Tuned files (--config=NAME; in {tuned.TUNED_DIR}):"
    rows = [line.split() for line in lines[4:]]
    assert [row[0] for row in rows] == tuned.names()
    assert rows[tuned.names().index("sac_pendulum")][:4] == [
        "sac_pendulum", "SAC", "Pendulum-v1", "episode_reward_mean=-250,"]
    only_sac = run_tfrl("list", "--algo=sac", "--env=Pendulum-v1").splitlines()[4:]
    assert [line.split()[0] for line in only_sac] == ["sac_pendulum"]
    assert run_tfrl("list", "--algo=PG", "--env=Acrobot-v1").splitlines()[2] == (
        "No tuned file matches; tfrl list shows them all.")


def test_list_help_and_version_do_not_import_tensorflow(tmp_path):
    code = ("import sys; from tfrl.cli.main import main; main(['tfrl', 'list']); "
            "main(['tfrl', '--version']); main(['tfrl', 'train', '--help']); "
            "print('tensorflow' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = REPO_ROOT
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[-1] == "False" and "tfrl 0." in proc.stdout


def test_version(capsys):
    import tfrl
    from tfrl.cli.main import main

    assert main(["tfrl", "--version"]) == 0
    assert capsys.readouterr().out == f"tfrl {tfrl.__version__}\n"


def test_algo_help_lists_every_registered_algorithm(capsys):
    from tfrl.cli.main import main

    assert main(["tfrl", "train", "--help"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("  --algo:"))
    assert f"Algorithm, in any case: {', '.join(sorted(ALGORITHMS))} " in line


@pytest.mark.parametrize("given,name", [("ppo", "PPO"), ("Impala", "IMPALA"),
                                        ("cql-dqn", "CQL_DQN"), ("td3", "TD3")])
def test_algorithm_names_in_any_case(given, name):
    assert canonical_name(given) == name
    exp = resolve_experiment(algo=given, env="CartPole-v1")
    check_config(exp)
    assert exp.algo == name


def test_config_file_algo_in_any_case(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("algo: a2c\nenv: CartPole-v1\nconfig: {lr: 0.001}\n")
    config = build_config(resolve_experiment(str(path)))
    assert type(config).__name__ == "A2CConfig" and config.lr == 0.001


def test_custom_model_by_module_path_in_yaml(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("algo: PPO\nenv: CartPole-v1\nconfig:\n  model:\n"
                    "    custom_model: tfrl.models.tf.fcnet:FullyConnectedNetwork\n")
    from tfrl.models.tf.fcnet import FullyConnectedNetwork

    assert build_config(resolve_experiment(str(path))).model["custom_model"] is \
        FullyConnectedNetwork
    # A registered name stays a name (the catalog looks it up when the model is built).
    exp = Experiment(algo="PPO", env="CartPole-v1", config={"model": {"custom_model": "m"}})
    assert check_config(exp).model["custom_model"] == "m"


# ------------------------------------------------------------------ --restore

@pytest.mark.slow  # trains two tiny runs
def test_restore_reads_the_checkpoints_experiment(tmp_path):
    tiny = ["--seed=0", "--config_override=train_batch_size=64",
            "--config_override=sgd_minibatch_size=32", "--config_override=num_sgd_iter=1",
            "--config_override=model.fcnet_hiddens=[8]", "--quiet"]
    run_tfrl("train", "--algo=PG", "--env=Acrobot-v1", *tiny, "--stop=training_iteration=1",
             f"--logdir={tmp_path / 'first'}")
    # No --algo, --env or overrides: all from first/experiment.json.
    out = run_tfrl("train", f"--restore={tmp_path / 'first' / 'checkpoint_000001'}",
                   "--stop=training_iteration=2", "--quiet", f"--logdir={tmp_path / 'more'}")
    # PG samples complete episodes (Acrobot's last 500 steps with a random policy).
    assert out.startswith("Finished (training_iteration=2 >= 2): 2 iterations, 1000 env "
                          "steps, 2 episodes")
    with open(tmp_path / "more" / "experiment.json") as f:
        exp = json.load(f)
    assert (exp["algo"], exp["env"], exp["stop"]) == ("PG", "Acrobot-v1",
                                                      {"training_iteration": 2})
    assert exp["config"]["model"] == {"fcnet_hiddens": [8]}


# ------------------------------------------------------------------ SB3's names

@pytest.mark.parametrize("algo,key,answer", [
    ("PPO", "learning_rate", "tfrl's key is lr."),
    ("PPO", "n_steps", "tfrl's key is rollout_fragment_length (per environment; set "
                       "train_batch_size = n_steps * number of envs)."),
    ("PPO", "batch_size", "tfrl's key is sgd_minibatch_size."),
    ("PPO", "n_epochs", "tfrl's key is num_sgd_iter."),
    ("PPO", "ent_coef", "tfrl's key is entropy_coeff."),
    ("PPO", "gae_lambda", "tfrl's key is lambda."),
    ("PPO", "clip_range", "tfrl's key is clip_param."),
    ("PPO", "net_arch", "tfrl's key is model: {fcnet_hiddens: [...]}."),
    ("PPO", "target_kl", "tfrl has no such key: tfrl has RLlib's adaptive KL penalty "
                         "instead (kl_coeff, kl_target; kl_coeff: 0 is SB3's loss)."),
    ("DQN", "batch_size", "tfrl's key is train_batch_size."),
    ("DQN", "buffer_size", "tfrl's key is replay_buffer_config: {capacity: N}."),
    ("DQN", "target_update_interval", "tfrl's key is target_network_update_freq."),
    ("SAC", "learning_rate", "tfrl's key is optimization: {actor_learning_rate, "
                             "critic_learning_rate, entropy_learning_rate}."),
    ("SAC", "ent_coef", "tfrl's key is initial_alpha (alpha is always tuned toward "
                        "target_entropy, as SB3's 'auto')."),
    ("SAC", "net_arch", "tfrl's key is policy_model_config and q_model_config: "
                        "{fcnet_hiddens: [...]}."),
    ("TD3", "net_arch", "tfrl's key is actor_hiddens and critic_hiddens."),
])
def test_sb3_names_are_answered_by_the_unknown_key_error(algo, key, answer):
    with pytest.raises(CliError) as error:
        check_config(Experiment(algo=algo, env="CartPole-v1", config={key: 1}))
    assert str(error.value).startswith(
        f"Unknown {algo}Config key {key!r}. {key} is Stable-Baselines3's name; {answer} Fix "
        "it in --config or --config_override")


@pytest.mark.parametrize("algo", sorted(ALGORITHMS))
def test_every_sb3_answer_names_keys_the_algorithm_has(algo):
    # The table is one source: the key an answer names (its first word) must exist in
    # the config class it is given for, and SB3 names that are valid keys get no hint.
    config_class = get_config_class(algo)
    valid = config_class.valid_keys()
    for name, hint in sb3_hints(valid).items():
        assert name not in valid
        answer = hint.split("tfrl's key is ", 1)[-1] if "tfrl's key is " in hint else None
        if answer is None:
            continue  # "tfrl has no such key"
        first = answer.rstrip(".").replace(":", " ").split()[0]
        assert first in valid, (algo, name, hint)
    assert "gamma" not in sb3_hints(valid) and "seed" not in sb3_hints(valid)


def test_sb3_table_covers_the_issue_names():
    assert {"learning_rate", "n_steps", "batch_size", "n_epochs", "ent_coef", "net_arch",
            "gae_lambda", "clip_range"} <= set(SB3_KEYS)


# ------------------------------------------------------------------ commands module

def test_list_all_returns_the_rows():
    rows = commands.list_all(algo="td3", stream=open(os.devnull, "w"))
    assert [row[:3] for row in rows] == [("td3_halfcheetah", "TD3", "HalfCheetah-v5"),
                                         ("td3_hopper", "TD3", "Hopper-v5"),
                                         ("td3_pendulum", "TD3", "Pendulum-v1")]
