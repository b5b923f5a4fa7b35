"""The CLI commands as plain functions: `train`, `evaluate`, `export`, `dry_run`,
`list_all`.

They take an `Experiment` (see `tfrl.cli.experiment`) and plain arguments, never flags,
and report user mistakes as `CliError`. `train` writes into its logdir:

- `experiment.json`: the experiment (algo, env, stop, the config keys set), which
  `evaluate` and `export` read to rebuild the algorithm a checkpoint belongs to;
- `result.json`: one JSON line per training iteration (the result dict);
- `checkpoint_<iteration>/`: checkpoints (`Algorithm.save`), every `checkpoint_every`
  iterations and at the end;
- TensorBoard event files (`tensorboard --logdir <logdir>`): every numeric result metric
  grouped by prefix, `hist_stats` histograms, and the policy graphs under `graphs/`
  (see `tfrl.utils.tensorboard.TensorBoardLogger`).
"""

import contextlib
import datetime
import glob
import importlib.util
import json
import os
import re
import signal
import socket
import sys
import threading
from typing import Any, Dict, Iterator, List, Optional, TextIO, Tuple

import gymnasium as gym
import numpy as np

from tfrl import tuned
from tfrl.algorithms.checkpoints import STATE_FILE, CheckpointError, resolve_checkpoint
from tfrl.algorithms.registry import ALGORITHMS, canonical_name, get_algorithm_class
from tfrl.cli.experiment import CliError, Experiment, build_config, load_experiment_file
from tfrl.env.registry import _ENV_CREATORS
from tfrl.utils.progress import DEFAULT_COLUMNS

#: The progress columns of `tfrl train` (then steps/s, elapsed time and ETA).
PROGRESS_COLUMNS = {**DEFAULT_COLUMNS, "episodes": ("episodes_total", "5d")}
EXPERIMENT_FILE = "experiment.json"
RESULT_FILE = "result.json"
#: `tfrl export --format`: a SavedModel, a policy checkpoint, TFLite, ONNX.
FORMATS = ("saved_model", "checkpoint", "tflite", "onnx")
#: The exit status of `tfrl train` ended by SIGTERM (128 + 15, the shell's convention).
SIGTERM_EXIT_STATUS = 128 + signal.SIGTERM
#: Optional packages (the top-level module, or a word of gymnasium's "... is not
#: installed" message) -> the extra of setup.py that installs them.
EXTRAS = {"ale_py": "atari", "cv2": "atari", "mujoco": "mujoco", "minatar": "minatar",
          "pettingzoo": "pettingzoo", "mpe2": "pettingzoo", "ray": "ray", "lz4": "offline",
          "moviepy": "video", "tensorflow_probability": "tfp", "tf_keras": "tfp"}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread while `sigterm_as_interrupt` is active.

    A `KeyboardInterrupt`, so that `train` ends on it as on Ctrl-C (and no
    `except Exception` on the way swallows it).
    """


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[List[int]]:
    """Within the block, the first SIGTERM raises `Terminated` in the main thread; later
    ones are ignored (so the final checkpoint is written), also after the block: the
    process is then on its way out with status 143, and a SIGTERM during its exit must
    not end it by the signal instead. Without a SIGTERM the previous handler is put back.

    Yields a list that receives the signal number of each SIGTERM. Outside the main
    thread (where Python cannot install signal handlers) it does nothing.
    """
    received: List[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)
        if len(received) == 1:
            raise Terminated(f"received signal {signum} (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN if received else previous)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return repr(value)


def default_logdir(exp: Experiment) -> str:
    """`~/tfrl_results/<ALGO>_<env>_<timestamp>`."""
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    env = "".join(c if c.isalnum() or c in "-_" else "_" for c in str(exp.env))
    return os.path.join(os.path.expanduser("~"), "tfrl_results", f"{exp.algo}_{env}_{stamp}")


def check_checkpoint(path: str, flag: str = "--checkpoint") -> str:
    """The absolute path of a checkpoint directory written by `tfrl train` / `save()`.

    Raises:
        CliError: If there is no checkpoint at `path`.
    """
    if not path:
        raise CliError(f"{flag} is required; pass {flag}=<logdir>/checkpoint_NNNNNN as "
                       "printed by `tfrl train`.")
    if not os.path.isfile(os.path.join(resolve_checkpoint(path), STATE_FILE)):
        what = "is not a tfrl checkpoint" if os.path.isdir(path) else "does not exist"
        raise CliError(f"{flag}={path!r} {what}; pass the checkpoint_NNNNNN directory "
                       "printed by `tfrl train` (or returned by Algorithm.save()).")
    return os.path.abspath(path)


def experiment_of_checkpoint(path: str) -> Experiment:
    """The experiment saved with a checkpoint (its `experiment.json`, in the checkpoint
    directory or its parent); else one naming only the algorithm from its metadata."""
    for directory in (path, os.path.dirname(os.path.abspath(path))):
        file = os.path.join(directory, EXPERIMENT_FILE)
        if os.path.isfile(file):
            with open(file) as f:
                doc = json.load(f)
            return Experiment(algo=doc.get("algo"), env=doc.get("env"),
                              config=doc.get("config") or {}, stop=doc.get("stop") or {})
    with open(os.path.join(resolve_checkpoint(path), STATE_FILE)) as f:
        algo = json.load(f).get("metadata", {}).get("algorithm")
    return Experiment(algo=algo)


def dry_run(exp: Experiment, stream: Optional[TextIO] = None) -> Dict[str, Any]:
    """Checks `exp` and prints it with the full resolved config as JSON; returns it."""
    algo_config = build_config(exp)
    resolved = {**exp.to_json(), "resolved_config": algo_config.to_dict()}
    (stream or sys.stdout).write(json.dumps(resolved, indent=2, sort_keys=True,
                                            default=_jsonable) + "\n")
    return resolved


def list_all(algo: Optional[str] = None, env: Optional[str] = None,
             stream: Optional[TextIO] = None) -> List[Tuple[str, str, str, str]]:
    """Prints the registered algorithms and the tuned files (those of `algo` and `env`
    if given); returns the tuned files' rows (name, algo, env, stop criteria)."""
    stream = stream or sys.stdout
    rows = []
    for name in tuned.names():
        exp = load_experiment_file(tuned.path(name) or name)
        if (algo and exp.algo != canonical_name(algo)) or (env and exp.env != env):
            continue
        stop = ", ".join(f"{k}={v}" for k, v in exp.stop.items())
        rows.append((name, str(exp.algo), str(exp.env), stop))
    stream.write(f"Algorithms (--algo, any case): {', '.join(sorted(ALGORITHMS))}\n\n")
    if not rows:
        stream.write("No tuned file matches; tfrl list shows them all.\n")
        return rows
    stream.write(f"Tuned files (--config=NAME; in {tuned.TUNED_DIR}):\n")
    widths = [max(len(row[i]) for row in rows + [("NAME", "ALGO", "ENV", "")])
              for i in range(3)]
    for row in [("NAME", "ALGO", "ENV", "STOPS AT")] + rows:
        stream.write("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths))
                     + f"  {row[3]}\n")
    return rows


def check_display(render: bool, record: Optional[str]) -> None:
    """Checks `tfrl evaluate`'s `--render` and `--record` before anything is built:
    rendering in a window needs a display (on Linux: DISPLAY or WAYLAND_DISPLAY naming a
    display that answers, see `display_problem`; without one pygame may crash the
    process), recording needs moviepy.

    Raises:
        CliError: For both flags at once, a window without a display, or a missing
            moviepy.
    """
    if render and record:
        raise CliError("--render and --record exclude each other (an env renders either "
                       "to a window or to frames); pass one.")
    if (render and sys.platform.startswith("linux")
            and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))):
        raise CliError("--render opens a window, but there is no display (DISPLAY and "
                       "WAYLAND_DISPLAY are unset); write videos with --record=DIR instead.")
    if render and sys.platform.startswith("linux"):
        problem = display_problem(os.environ)
        if problem:
            raise CliError(f"--render opens a window, but {problem}; start it (or fix the "
                           "variable), or write videos with --record=DIR instead.")
    if record and importlib.util.find_spec("moviepy") is None:
        raise CliError("--record writes videos with moviepy, which is not installed: pip "
                       "install 'tfrl[video]'.")


def display_problem(environ: Any) -> Optional[str]:
    """Why no window can open on the display `environ` names (Linux), or None: a
    Wayland socket (`$XDG_RUNTIME_DIR/$WAYLAND_DISPLAY`) that exists, or an X server that
    accepts a connection at `DISPLAY` (`:N` is the socket /tmp/.X11-unix/XN, `host:N` is
    TCP port 6000 + N). pygame crashes the process (SIGSEGV) on a display that does not
    answer, so this is asked before anything is built.
    """
    wayland, display = environ.get("WAYLAND_DISPLAY"), environ.get("DISPLAY")
    if wayland:
        path = wayland if os.path.isabs(wayland) else os.path.join(
            environ.get("XDG_RUNTIME_DIR") or "", wayland)
        if os.path.exists(path):
            return None
        if not display:
            return f"the Wayland display WAYLAND_DISPLAY={wayland!r} has no socket at {path}"
    if not display:
        return "there is no display (DISPLAY and WAYLAND_DISPLAY are unset)"
    match = re.fullmatch(r"(?P<host>[^:]*):(?P<n>\d+)(\.\d+)?", display)
    if match is None:
        return (f"DISPLAY={display!r} is not a display name (expected ':N' or "
                "'host:N', e.g. ':0')")
    host, number = match.group("host"), int(match.group("n"))
    if host in ("", "unix") or host.startswith("/"):
        path = host if host.startswith("/") else f"/tmp/.X11-unix/X{number}"
        for address in (path, "\0" + path):  # the file, then Linux's abstract socket
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(2.0)
                sock.connect(address)
                return None
        return f"no X server answers at DISPLAY={display!r} (socket {path})"
    try:
        with socket.create_connection((host, 6000 + number), timeout=2.0):
            return None
    except OSError as e:
        return (f"no X server answers at DISPLAY={display!r} (TCP {host}:{6000 + number}: "
                f"{e.strerror or e})")


class BuildError(Exception):
    """A `ValueError` or `TypeError` raised while an algorithm was built from a config
    that passed `check_config`: the config does not fit the env (or names something
    that does not exist). Its message is the original's, on one line."""


def _missing_extra(error: BaseException) -> Optional[str]:
    """`pip install 'tfrl[<extra>]'` advice for an error that names a missing optional
    package, or None."""
    if isinstance(error, ImportError):
        named = {(error.name or "").split(".")[0]}
    else:  # gymnasium: "MuJoCo is not installed, run `pip install "gymnasium[mujoco]"`"
        named = set(re.findall(r"[a-z_0-9]+", str(error).lower()))
    extra = next((extra for module, extra in EXTRAS.items() if module in named), None)
    return f"pip install 'tfrl[{extra}]'" if extra else None


@contextlib.contextmanager
def user_errors(verbose: bool = False) -> Iterator[None]:
    """Turns the errors a user's config or env causes while an algorithm is built or run
    into one-line `CliError`s (with `verbose`, the original traceback instead): a
    missing optional package (naming the extra to install) and the `ValueError` /
    `TypeError` an algorithm raises for an env it cannot learn on (e.g. DQN on a Box
    action space) or a model it cannot build (an unregistered `custom_model`).
    """
    try:
        yield
    except (ImportError, gym.error.DependencyNotInstalled) as e:
        advice = _missing_extra(e)
        if verbose or advice is None:
            raise
        raise CliError(f"{' '.join(str(e).split())} ({advice}).") from None
    except BuildError as e:
        if verbose:
            raise e.__cause__ or e
        raise CliError(f"{e} (--verbose shows the traceback).") from None


def _build(exp: Experiment, extra: Optional[Dict[str, Any]] = None) -> Any:
    config = build_config(exp, extra)
    try:
        return get_algorithm_class(exp.algo)(config=config)
    except (ValueError, TypeError) as e:
        raise BuildError(" ".join(str(e).split())) from e


def _restore(algo: Any, checkpoint: str) -> None:
    try:
        algo.restore(checkpoint)
    except (CheckpointError, FileNotFoundError) as e:
        raise CliError(" ".join(str(e).split())) from None
    except ValueError as e:  # another algorithm's checkpoint
        raise CliError(f"{' '.join(str(e).split())} Pass --algo to match it.") from None
    except KeyError as e:  # different policies or model layout
        raise CliError(f"{checkpoint!r} does not match the configured model or policies "
                       f"(missing {e}); restore with the config it was trained with.") from None


def train(exp: Experiment, logdir: Optional[str] = None, checkpoint_every: int = 0,
          restore: Optional[str] = None, quiet: bool = False,
          stream: Optional[TextIO] = None) -> Tuple[Dict[str, Any], str]:
    """Trains with `Algorithm.fit` until a stop criterion is met (or Ctrl-C, or SIGTERM
    inside `sigterm_as_interrupt`); returns the last result and the final checkpoint's
    path.

    Prints one progress line per iteration (rewritten in place on a terminal; none if
    `quiet`) and a summary to `stream` (default stdout).

    Raises:
        CliError: For a bad experiment or `restore` path.
    """
    build_config(exp)  # fail fast, before any directory is made
    if restore:
        restore = check_checkpoint(restore, "--restore")
    logdir = os.path.abspath(logdir or default_logdir(exp))
    os.makedirs(logdir, exist_ok=True)
    with open(os.path.join(logdir, EXPERIMENT_FILE), "w") as f:
        json.dump(exp.to_json(), f, indent=2, default=_jsonable)
    stream = stream or sys.stdout
    if not exp.stop:
        stream.write("No stop criteria (--stop): training until interrupted; Ctrl-C "
                     "writes a final checkpoint.\n")
    algo = _build(exp)
    # Deferred: Keras callbacks import TensorFlow, which tfrl.cli.main imports quietly
    # after it parsed the flags (and which `import tfrl.cli.commands` must not load).
    from tfrl.cli.train_callbacks import PeriodicCheckpoint, ResultLog  # TensorFlow
    from tfrl.utils.progress_callbacks import ProgressLogger, StopOnCriteria  # TensorFlow
    from tfrl.utils.tensorboard import TensorBoard  # TensorFlow

    stop = StopOnCriteria(exp.stop)
    tensorboard = TensorBoard(logdir)
    progress = ProgressLogger(stop=exp.stop, columns=PROGRESS_COLUMNS, refresh=None,
                              quiet=quiet, stream=stream)
    try:
        if restore:
            _restore(algo, restore)
        with open(os.path.join(logdir, RESULT_FILE), "a") as results:
            # The stop criterion first: the periodic checkpoint skips the last iteration.
            callbacks = [stop, ResultLog(results, default=_jsonable), tensorboard,
                         PeriodicCheckpoint(logdir, checkpoint_every), progress]
            try:
                algo.fit(callbacks=callbacks, verbose=0)
                reason = stop.reason or "stopped by a callback"
            except Terminated:
                reason = "terminated by SIGTERM"
            except KeyboardInterrupt:
                reason = "interrupted"
        checkpoint = algo.save(logdir)
        progress.summary(reason, checkpoint, saved=_saved_counts(algo))
        return progress.last, checkpoint
    finally:
        if tensorboard.logger is not None:  # fit closes it, unless interrupted
            tensorboard.logger.close()
        algo.stop()


def _saved_counts(algo: Any) -> Dict[str, int]:
    """The iteration, env steps and episodes the algorithm's checkpoint holds: an
    iteration interrupted (Ctrl-C, SIGTERM) after it counted itself is saved, though its
    result never reached the progress line."""
    counters = algo.shared_metrics.counters
    return {"training_iteration": int(algo.iteration),
            "timesteps_total": int(counters.get("num_env_steps_sampled", 0)),
            "episodes_total": int(algo._episodes_total)}  # what save() writes


def evaluate(exp: Experiment, checkpoint: str, episodes: int = 10, explore: bool = False,
             render: bool = False, record: Optional[str] = None,
             stream: Optional[TextIO] = None) -> Dict[str, Any]:
    """Restores `checkpoint` and runs `episodes` episodes (deterministic actions unless
    `explore`); prints and returns the evaluation metrics.

    Args:
        render: Show the episodes in a window (`render_mode="human"`).
        record: Write videos of the episodes into this directory (`record_env` with
            `render_mode="rgb_array"`; gymnasium's RecordVideo and its episode schedule).

    Raises:
        CliError: For a bad checkpoint or episode count, `--render` without a display,
            a missing moviepy, or an env that recorded no video.
    """
    if episodes < 1:
        raise CliError(f"--episodes={episodes} must be >= 1.")
    check_display(render, record)
    checkpoint = check_checkpoint(checkpoint)
    eval_config: Dict[str, Any] = {"explore": explore, "render_env": render,
                                   "num_envs_per_worker": 1}
    render_mode = "human" if render else "rgb_array" if record else None
    if render_mode and isinstance(exp.env, str) and exp.env not in _ENV_CREATORS:
        eval_config["env_config"] = {**exp.config.get("env_config", {}),
                                     "render_mode": render_mode}
    if record:
        record = os.path.abspath(record)
        eval_config["record_env"] = record
        # Frames are drawn off-screen: pygame needs no display (and SDL does not complain
        # on stderr about a missing XDG_RUNTIME_DIR on a headless machine).
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    algo = _build(exp, {"num_workers": 0, "evaluation_num_workers": 0,
                        "evaluation_interval": None, "evaluation_parallel_to_training": False,
                        "evaluation_duration": int(episodes),
                        "evaluation_duration_unit": "episodes",
                        "evaluation_config": eval_config})
    try:
        _restore(algo, checkpoint)
        metrics = algo.evaluate()["evaluation"]
    except gym.error.DependencyNotInstalled as e:  # e.g. pygame, for render_mode="human"
        raise CliError(f"{' '.join(str(e).split())} (needed by --render), or evaluate "
                       "without --render.") from None
    finally:
        algo.stop()
    returns = metrics.get("hist_stats", {}).get("episode_reward", [])
    videos = sorted(glob.glob(os.path.join(record, "*.mp4"))) if record else []
    if record and not videos:
        raise CliError(f"--record={record!r}: no video was written; the env must render "
                       "frames (render_mode='rgb_array'): a gymnasium id does, an env made "
                       "by register_env must pass env_config's render_mode on.")
    (stream or sys.stdout).write(
        f"Evaluated {len(returns)} episodes of {exp.env} "
        f"({'stochastic' if explore else 'deterministic'} actions): return mean "
        f"{metrics['episode_reward_mean']:.2f}, min {metrics['episode_reward_min']:.2f}, "
        f"max {metrics['episode_reward_max']:.2f}; length mean "
        f"{metrics['episode_len_mean']:.1f}\n")
    if videos:
        (stream or sys.stdout).write(f"Videos: {len(videos)} in {record}\n")
    return metrics


def export(exp: Experiment, checkpoint: str, export_dir: Optional[str] = None,
           fmt: str = "saved_model", policy_id: str = "default_policy",
           stream: Optional[TextIO] = None) -> str:
    """Restores `checkpoint` and writes policy `policy_id` as a SavedModel (`fmt=
    "saved_model"`), a TF policy checkpoint (`"checkpoint"`), `model.tflite` (`"tflite"`)
    or `model.onnx` and `model_stochastic.onnx` (`"onnx"`); returns the directory."""
    if fmt not in FORMATS:
        raise CliError(f"--format={fmt!r} is not supported; pass --format= one of "
                       f"{', '.join(FORMATS)}.")
    checkpoint = check_checkpoint(checkpoint)
    export_dir = os.path.abspath(export_dir or f"{checkpoint.rstrip(os.sep)}_{fmt}")
    algo = _build(exp, {"num_workers": 0, "evaluation_interval": None,
                        "evaluation_parallel_to_training": False})
    try:
        _restore(algo, checkpoint)
        policies = sorted(algo.workers.local_worker().policy_map)
        if policy_id not in policies:
            raise CliError(f"--policy_id={policy_id!r} is not a policy of this checkpoint; "
                           f"pass one of {policies}.")
        try:
            if fmt == "saved_model":
                algo.export_policy_model(export_dir, policy_id)
            elif fmt == "onnx":
                algo.get_policy(policy_id).export_onnx(export_dir)
            elif fmt == "tflite":
                algo.get_policy(policy_id).export_tflite(export_dir)
            else:
                algo.export_policy_checkpoint(export_dir, policy_id)
        except (ImportError, ValueError) as e:  # a missing converter, an unsupported op
            raise CliError(str(e)) from None
    finally:
        algo.stop()
    (stream or sys.stdout).write(f"Exported {policy_id} ({fmt}) to {export_dir}\n")
    return export_dir
