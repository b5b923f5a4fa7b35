"""A new user's mistakes on the `tfrl` command line (issue 30), each in a fresh process as
users run it: exit status 2 and exactly one line on stderr that says what to do, never a
traceback. Also: the current directory is importable under the `tfrl` script, config
errors come before TensorFlow loads, `--render` refuses without a display and `--record`
writes videos."""

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap

import pytest

from cli_helpers import run_tfrl

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = shutil.which("tfrl", path=os.path.dirname(sys.executable))
# The console script's entry point, for machines where the script is not installed (it
# imports tfrl.cli.main.run exactly as the script does).
SCRIPT_CODE = "import sys; from tfrl.cli.main import run; sys.argv[0] = 'tfrl'; run()"
TINY = ["--notuned", "--seed=0", "--tf_threads=1", "--config_override=train_batch_size=64",
        "--config_override=rollout_fragment_length=8", "--config_override=sgd_minibatch_size=32",
        "--config_override=num_sgd_iter=1", "--config_override=model.fcnet_hiddens=[8]"]


def _tfrl(*args, cwd, stubs=None, env_update=None, timeout=300):
    """Runs the `tfrl` console script's entry point in a fresh process from `cwd`, with
    this tree (and `stubs`, a folder of stand-in modules, first) on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join(([str(stubs)] if stubs else []) + [REPO_ROOT])
    env.update(env_update or {})
    return subprocess.run([sys.executable, "-c", SCRIPT_CODE, *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=str(cwd))


def _one_error_line(proc):
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]
    return lines[0]


def _stub(folder, module, text):
    """Writes the stand-in module `module` (dotted) with source `text` under `folder`."""
    parts = module.split(".")
    path = folder.joinpath(*parts[:-1])
    path.mkdir(parents=True, exist_ok=True)
    for i in range(len(parts) - 1):
        init = folder.joinpath(*parts[:i + 1], "__init__.py")
        if not init.exists():
            init.write_text("")
    (path / f"{parts[-1]}.py").write_text(textwrap.dedent(text))


GO_TO_GOAL = '''
import gymnasium as gym
import numpy as np


class GoToGoal(gym.Env):
    """A point on a line walks to 0; reward -|x|."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = 5.0, 0
        return np.array([self.x], np.float32), {}

    def step(self, action):
        self.x += 1.0 if action else -1.0
        self.t += 1
        done = self.x == 0.0
        return (np.array([self.x], np.float32), -abs(self.x), done, self.t >= 20, {})


gym.register("GoToGoal-v0", entry_point=GoToGoal)
'''


# ------------------------------------------------------------- before TensorFlow

def test_sb3_key_names_are_answered_with_tfrls_before_tensorflow_loads(tmp_path):
    # Neither TensorFlow nor Ray (`tfrl tune`'s tracker names come from tfrl.utils, not
    # from tfrl.tune, whose import loads Ray Tune: ~2.5 s more for every mistake).
    code = ("import sys\nfrom tfrl.cli.main import main\ntry:\n"
            "    main(['tfrl', 'train', '--algo=ppo', '--env=CartPole-v1', "
            "'--config_override=n_epochs=4'])\n"
            "except SystemExit as e:\n"
            "    print('exit', e.code, 'tensorflow' in sys.modules, 'ray' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = REPO_ROOT
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env, cwd=str(tmp_path))
    assert proc.stdout.splitlines()[-1] == "exit 2 False False", proc.stderr[-2000:]
    assert proc.stderr == (
        "tfrl train: error: Unknown PPOConfig key 'n_epochs'. n_epochs is Stable-Baselines3's "
        "name; tfrl's key is num_sgd_iter. Fix it in --config or --config_override (run with "
        "--dry_run to see every key).\n")


@pytest.mark.parametrize("args,line", [
    (["train", "--algo=ppo", "--env=CartPole-v1", "--config_override=learning_rate=3e-4"],
     "tfrl train: error: Unknown PPOConfig key 'learning_rate'. learning_rate is "
     "Stable-Baselines3's name; tfrl's key is lr. Fix it in --config or --config_override "
     "(run with --dry_run to see every key)."),
    (["train", "--algo=DQN", "--env=CartPole-v1", "--config_override=batch_size=64"],
     "tfrl train: error: Unknown DQNConfig key 'batch_size'. batch_size is "
     "Stable-Baselines3's name; tfrl's key is train_batch_size. Fix it in --config or "
     "--config_override (run with --dry_run to see every key)."),
    (["train", "--algo=PPO", "--env=CartPole-v1",
      "--config_override=model.fcnet_hidens=[64]"],
     "tfrl train: error: Unknown model config key. Received: 'fcnet_hidens'. Did you mean "
     "'fcnet_hiddens'? Fix it in --config or --config_override (run with --dry_run to see "
     "every key)."),
    (["train", "--algo=PPO", "--env=CartPole-v1",
      "--config_override=model.custom_model=no_such_module:MyModel"],
     "tfrl train: error: custom_model='no_such_module:MyModel' cannot be imported "
     "(ModuleNotFoundError: No module named 'no_such_module'); give "
     "'package.module:ClassName' of a class in the current directory or on PYTHONPATH."),
    (["train", "--algo=PPO", "--env=CartPole-v1", "--config_override=record_env=7"],
     "tfrl train: error: PPOConfig: record_env must be a bool or a folder for the videos (a "
     "non-empty str); received 7 (int). Fix it in --config or --config_override (run with "
     "--dry_run to see every key)."),
    (["train", "--config=examples/tuned/ppo_cartpole.yaml"],
     "tfrl train: error: Config file 'examples/tuned/ppo_cartpole.yaml' does not exist. A "
     "tuned file of that name ships with tfrl: pass --config=ppo_cartpole (tfrl list shows "
     "them)."),
    (["list", "--episodes=3"], "tfrl list: error: --episodes is not a flag of `tfrl list` "
                               "(it belongs to tfrl evaluate); remove it."),
])
def test_config_mistakes_exit_2_with_one_line(tmp_path, args, line):
    proc = _tfrl(*args, cwd=tmp_path)
    assert _one_error_line(proc) == line
    assert proc.stdout == ""


def test_a_module_env_in_the_current_directory_is_importable(tmp_path):
    # Issue 30: `--env=mypkg.envs:GoToGoal-v0` worked with `python -m tfrl` (which puts
    # the current directory on sys.path) and failed with a traceback under `tfrl`.
    _stub(tmp_path, "mypkg.envs", GO_TO_GOAL)
    proc = _tfrl("train", "--algo=PPO", "--env=mypkg.envs:GoToGoal-v0", "--dry_run",
                 cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    assert json.loads(proc.stdout)["env"] == "mypkg.envs:GoToGoal-v0"
    # From another directory the module is not there: one line that says where to run.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    line = _one_error_line(_tfrl("train", "--algo=PPO", "--env=mypkg.envs:GoToGoal-v0",
                                 cwd=elsewhere))
    assert line == ("tfrl train: error: --env='mypkg.envs:GoToGoal-v0': the module "
                    "'mypkg.envs' cannot be imported (ModuleNotFoundError: No module named "
                    "'mypkg'); run tfrl from the directory that holds it, or add that "
                    "directory to PYTHONPATH.")
    line = _one_error_line(_tfrl("train", "--algo=PPO", "--env=mypkg.envs:GoToGoal-v1",
                                 cwd=tmp_path))
    assert line == ("tfrl train: error: --env='mypkg.envs:GoToGoal-v1': importing "
                    "'mypkg.envs' registered no gymnasium id 'GoToGoal-v1'. Did you mean "
                    "'GoToGoal-v0'? Register it in that module with "
                    "gymnasium.register('GoToGoal-v1', entry_point=...).")


@pytest.mark.skipif(SCRIPT is None, reason="the tfrl console script is not installed")
def test_the_installed_script_imports_from_the_current_directory(tmp_path):
    _stub(tmp_path, "mypkg.envs", GO_TO_GOAL)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = REPO_ROOT
    proc = subprocess.run([SCRIPT, "train", "--algo=PPO", "--env=mypkg.envs:GoToGoal-v0",
                           "--notuned", "--config_override=lr=-1"], capture_output=True,
                          text=True, timeout=120, env=env, cwd=str(tmp_path))
    # The env imports (else the error would name the module); the value is then refused.
    assert _one_error_line(proc) == (
        "tfrl train: error: PPOConfig: lr must be a finite float > 0; received -1 (int). Fix "
        "it in --config or --config_override (run with --dry_run to see every key).")


def test_a_missing_suite_package_names_the_extra(tmp_path):
    stubs = tmp_path / "stubs"
    _stub(stubs, "ale_py", "raise ImportError(\"No module named 'ale_py'\", name='ale_py')\n")
    line = _one_error_line(_tfrl("train", "--algo=PPO", "--env=ALE/Pong-v5", cwd=tmp_path,
                                 stubs=stubs))
    assert line == ("tfrl train: error: The env 'ALE/Pong-v5' needs ale_py: pip install "
                    "'tfrl[atari]'.")


# ------------------------------------------------------------- while building

@pytest.mark.slow  # builds the algorithm (imports TensorFlow)
def test_dqn_on_a_box_action_space_is_one_line(tmp_path):
    proc = _tfrl("train", "--algo=dqn", "--env=Pendulum-v1", "--notuned",
                 "--stop=training_iteration=1", f"--logdir={tmp_path / 'run'}", cwd=tmp_path)
    assert _one_error_line(proc) == (
        "tfrl train: error: DQNTFPolicy needs a Discrete action space (one Q-value per "
        "action); received Box(-2.0, 2.0, (1,), float32). For continuous (Box) actions use "
        "SAC or TD3. (--verbose shows the traceback).")
    # --verbose: the traceback, for a bug report.
    proc = _tfrl("train", "--algo=dqn", "--env=Pendulum-v1", "--notuned", "--verbose",
                 "--stop=training_iteration=1", f"--logdir={tmp_path / 'run'}", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1].startswith(
        "ValueError: DQNTFPolicy needs a Discrete action space")


@pytest.mark.slow  # builds the algorithm (imports TensorFlow)
def test_an_unregistered_custom_model_is_one_line(tmp_path):
    proc = _tfrl("train", "--algo=PPO", "--env=CartPole-v1", *TINY,
                 "--config_override=model.custom_model=my_model", "--stop=training_iteration=1",
                 f"--logdir={tmp_path / 'run'}", cwd=tmp_path)
    assert _one_error_line(proc) == (
        "tfrl train: error: No custom_model registered under 'my_model'. Registered: []. "
        "Register it with ModelCatalog.register_custom_model(name, cls), or pass the class "
        "itself (tfrl's command line takes 'package.module:ClassName'). (--verbose shows the "
        "traceback).")


@pytest.mark.slow  # builds the algorithm (imports TensorFlow)
def test_a_custom_model_class_by_module_path_trains(tmp_path):
    _stub(tmp_path, "mymodels", '''
        import keras
        from tfrl.models.tf.fcnet import FullyConnectedNetwork


        class Small(FullyConnectedNetwork):
            """The catalog's MLP with [4] hidden units, as a user's class."""

            def __init__(self, obs_space, action_space, num_outputs, model_config, name):
                super().__init__(obs_space, action_space, num_outputs,
                                 {**model_config, "fcnet_hiddens": [4]}, name)
        ''')
    proc = _tfrl("train", "--algo=PPO", "--env=CartPole-v1", *TINY,
                 "--config_override=model.custom_model=mymodels:Small",
                 "--stop=training_iteration=1", "--quiet", f"--logdir={tmp_path / 'run'}",
                 cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    assert proc.stdout.startswith("Finished (training_iteration=1 >= 1): 1 iterations, 64 env")


@pytest.mark.slow  # builds the algorithm (imports TensorFlow)
def test_a_missing_env_dependency_names_the_extra(tmp_path):
    # MuJoCo's envs are registered by gymnasium itself; without the mujoco package
    # gymnasium raises DependencyNotInstalled when the env is made (while the algorithm
    # is built).
    stubs = tmp_path / "stubs"
    _stub(stubs, "mujoco", "raise ImportError(\"No module named 'mujoco'\", name='mujoco')\n")
    line = _one_error_line(_tfrl("train", "--algo=PPO", "--env=Hopper-v5", *TINY,
                                 "--stop=training_iteration=1", f"--logdir={tmp_path / 'run'}",
                                 cwd=tmp_path, stubs=stubs))
    assert line.startswith("tfrl train: error: ") and line.endswith(
        "(pip install 'tfrl[mujoco]').")
    assert "MuJoCo is not installed" in line


# ------------------------------------------------------------- evaluate: windows, videos

@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("cli_mistakes") / "run"
    run_tfrl("train", "--algo=PPO", "--env=CartPole-v1", *TINY, "--quiet",
             "--stop=training_iteration=1", f"--logdir={logdir}")
    return str(logdir / "checkpoint_000001")


@pytest.mark.slow  # trains one tiny iteration (module fixture)
def test_render_without_a_display_refuses_before_building(checkpoint, tmp_path):
    no_display = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}
    proc = _tfrl("evaluate", f"--checkpoint={checkpoint}", "--render", cwd=tmp_path,
                 env_update=no_display)
    assert _one_error_line(proc) == (
        "tfrl evaluate: error: --render opens a window, but there is no display (DISPLAY "
        "and WAYLAND_DISPLAY are unset); write videos with --record=DIR instead.")
    line = _one_error_line(_tfrl("evaluate", f"--checkpoint={checkpoint}", "--render",
                                 f"--record={tmp_path}", cwd=tmp_path))
    assert line.startswith("tfrl evaluate: error: --render and --record exclude each other")


def _fake_checkpoint(tmp_path):
    """A checkpoint directory as far as the flag checks look (experiment.json and the state
    file), for the checks that refuse before anything is built or restored."""
    run = tmp_path / "fake_run"
    (run / "checkpoint_000001").mkdir(parents=True)
    (run / "checkpoint_000001" / "state.json").write_text("{}")
    (run / "experiment.json").write_text(json.dumps({"algo": "PPO", "env": "CartPole-v1"}))
    return str(run / "checkpoint_000001")


def _closed_tcp_display():
    """DISPLAY=127.0.0.1:N whose X port 6000 + N nobody listens on (right now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert port > 6000
    return f"127.0.0.1:{port - 6000}"


def _unused_x_socket_display():
    return next(f":{n}" for n in range(97, 1000) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))


@pytest.mark.parametrize("display,reason", [
    (_unused_x_socket_display, r"no X server answers at DISPLAY=':\d+' \(socket "
                               r"/tmp/\.X11-unix/X\d+\)"),
    (_closed_tcp_display, r"no X server answers at DISPLAY='127\.0\.0\.1:\d+' \(TCP "
                          r"127\.0\.0\.1:\d+: Connection refused\)"),
    (lambda: "nonsense", r"DISPLAY='nonsense' is not a display name \(expected ':N' or "
                         r"'host:N', e\.g\. ':0'\)"),
])
def test_render_on_a_display_that_does_not_answer_refuses_before_building(tmp_path, display,
                                                                          reason):
    # Issue 30: with DISPLAY set but no X server behind it, pygame crashed the process
    # (SIGSEGV, exit 139) once the env rendered.
    line = _one_error_line(_tfrl("evaluate", f"--checkpoint={_fake_checkpoint(tmp_path)}",
                                 "--render", cwd=tmp_path,
                                 env_update={"DISPLAY": display(), "WAYLAND_DISPLAY": ""}))
    assert re.fullmatch(r"tfrl evaluate: error: --render opens a window, but " + reason
                        + r"; start it \(or fix the variable\), or write videos with "
                        r"--record=DIR instead\.", line), line


@pytest.mark.slow  # trains one tiny iteration (module fixture)
@pytest.mark.skipif(importlib.util.find_spec("moviepy") is not None,
                    reason="moviepy is installed")
def test_record_without_moviepy_names_the_extra(checkpoint, tmp_path):
    line = _one_error_line(_tfrl("evaluate", f"--checkpoint={checkpoint}",
                                 f"--record={tmp_path / 'videos'}", cwd=tmp_path))
    assert line == ("tfrl evaluate: error: --record writes videos with moviepy, which is not "
                    "installed: pip install 'tfrl[video]'.")


# A stand-in for moviepy's ImageSequenceClip: writes the frames' count and shape as JSON
# where the video would go (gymnasium's RecordVideo calls exactly this).
FAKE_CLIP = '''
import json


class ImageSequenceClip:
    def __init__(self, frames, fps):
        self.frames, self.fps = frames, fps

    def write_videofile(self, path, logger=None):
        with open(path, "w") as f:
            json.dump({"frames": len(self.frames), "shape": list(self.frames[0].shape),
                       "fps": self.fps}, f)
'''


@pytest.mark.slow  # trains one tiny iteration (module fixture), evaluates in a process
def test_record_writes_one_video_per_scheduled_episode(checkpoint, tmp_path):
    stubs = tmp_path / "stubs"
    _stub(stubs, "moviepy.video.io.ImageSequenceClip", FAKE_CLIP)
    videos = tmp_path / "videos"
    proc = _tfrl("evaluate", f"--checkpoint={checkpoint}", "--episodes=3",
                 f"--record={videos}", cwd=tmp_path, stubs=stubs)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Evaluated 3 episodes of CartPole-v1") and len(lines) == 2
    # gymnasium's schedule records episodes 0 and 1 of 3 (then 8, 27, ...); the worker
    # seeds its env with a reset before recording starts, so no video holds one frame.
    assert lines[1] == f"Videos: 2 in {videos}"
    names = sorted(os.listdir(videos))
    assert [n for n in names if n.endswith(".mp4")] == ["rl-video-episode-0.mp4",
                                                         "rl-video-episode-1.mp4"]
    for name in names:
        with open(videos / name) as f:
            clip = json.load(f)
        assert clip["shape"] == [400, 600, 3] and clip["frames"] >= 2


def test_every_extra_the_cli_names_is_in_setup_py():
    import re

    from tfrl.cli.commands import EXTRAS

    with open(os.path.join(REPO_ROOT, "setup.py"), encoding="utf-8") as f:
        setup_py = f.read()
    extras = set(re.findall(r'^    "([a-z]+)": ', setup_py, re.M))
    assert set(EXTRAS.values()) <= extras, set(EXTRAS.values()) - extras
    assert {"video", "atari", "mujoco", "ray"} <= extras
