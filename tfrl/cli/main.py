"""tfrl: train, evaluate and export RL algorithms from the command line.

Usage:

    tfrl list                                       # the algorithms and the tuned files
    tfrl train --algo=ppo --env=CartPole-v1         # uses its tuned file, if there is one
    tfrl train --algo=PPO --env=CartPole-v1 --notuned --stop=timesteps_total=100000
    tfrl train --config=ppo_cartpole [--dry_run]    # a tuned file by name, or a file path
    tfrl train ... --config_override=lr=1e-3 --config_override=model.fcnet_hiddens=[64,64]
    tfrl train ... --logdir=runs/ppo --checkpoint_every=10
    tfrl train --restore=runs/ppo/checkpoint_000050 # continues that run's experiment
    tfrl evaluate --checkpoint=runs/ppo/checkpoint_000050 --episodes=10 [--explore]
    tfrl evaluate ... --render                      # in a window (needs a display)
    tfrl evaluate ... --record=videos               # video files (pip install 'tfrl[video]')
    tfrl export --checkpoint=runs/ppo/checkpoint_000050 [--format=saved_model] [--export_dir=D]
    tfrl export ... --format=tflite                 # or onnx, checkpoint (pip install 'tfrl[export]')
    tfrl tune --config=sweep.yaml [--dry_run]       # a sweep on Ray Tune (pip install 'tfrl[tune]')
    tfrl tune --config=ppo_cartpole --sweep=space.yaml --num_samples=8 --logdir=runs/sweep
    tfrl --version

(`python -m tfrl ...` is the same.) `tfrl <command> --help` lists the flags. Algorithm
names may be given in any case. The current directory is importable, as with
`python -m`: `--env=mypkg.envs:GoToGoal-v0` imports `mypkg.envs` (which registers the
gymnasium id), and `callbacks` or `model.custom_model` may name classes there. TensorFlow's
start-up notices are hidden unless `--verbose` is given or TF_CPP_MIN_LOG_LEVEL is set
below 2.

Tuned files ship inside the package (`tfrl list`): `--config=NAME` finds one by its name,
and `tfrl train --algo=A --env=E` without `--config` uses the tuned file of that pair when
there is one, and says so (`--notuned` keeps the algorithm's defaults).

Experiment files (`--config=FILE`, YAML if the name ends in .yaml/.yml, else JSON) hold
a mapping with four optional keys:

    algo: PPO                  # a registered algorithm (`run:` is accepted, as in RLlib)
    env: CartPole-v1           # a gymnasium id or a name given to register_env
    stop:                      # result key -> threshold; stops when ANY is reached
      timesteps_total: 100000
      episode_reward_mean: 475
    config:                    # the algorithm's RLlib-style config dict
      lr: 1.0e-3               # (1e-3 works too: numbers are read as in YAML 1.2)
      model: {fcnet_hiddens: [64, 64]}

RLlib's tuned-example files (`name: {run: PPO, env: ..., stop: ..., config: ...}`) load
unchanged. Flags override the file, in this order: `--algo`/`--env`; `--num_workers`,
`--num_gpus`, `--seed`; then each `--config_override=KEY=VALUE` in turn (VALUE parsed as
YAML: `0.5`, `[64,64]`, `{a: 1}`, `null`; dotted keys set nested entries). `--stop`
criteria are merged into the file's (a key given again replaces the file's). `callbacks`
and `model: {custom_model: ...}` may be "package.module:ClassName" strings. Stop keys:
`timesteps_total`, `episode_reward_mean`, `training_iteration`, `time_total_s`,
`episodes_total`, ... or a nested key such as `evaluation/episode_reward_mean`.
Stable-Baselines3's names (`learning_rate`, `n_steps`, `batch_size`, `n_epochs`,
`ent_coef`, `net_arch`, ...) are answered with tfrl's keys.

`tfrl train` writes `experiment.json` (the resolved algo, env, stop and config),
`result.json` (one result per line) and `checkpoint_NNNNNN/` directories into
`--logdir` (default `~/tfrl_results/<ALGO>_<env>_<time>`); `evaluate`, `export` and
`train --restore` rebuild the algorithm from the `experiment.json` next to the
checkpoint (flags such as `--config_override` still apply on top). Mistakes exit with
status 2 and one line on stderr saying what to fix; config keys and values are checked
before TensorFlow loads.

`tfrl tune` reads the same files plus a `tune:` section (or `--sweep=FILE` holding it): the
search space (`grid_search`, `choice`, `uniform`, `loguniform`, `randint` per config key),
the search algorithm (random, optuna), the scheduler (fifo, asha, median, pbt with its
mutations), `num_samples`, `metric` and `mode` (see `tfrl.cli.sweep`). Every sampled config is checked
before Ray starts (`--dry_run` stops there); trials run on Ray Tune, a table of them is
printed at the end, and the best trial's config is written as a tuned file
(`--output`, default `<logdir>/best_config.yaml`) that `tfrl train --config=FILE` runs.

Stopping `tfrl train`: Ctrl-C (SIGINT) ends training after writing a final checkpoint
and exits with status 0; SIGTERM (sent by `timeout`, `docker stop`, cluster schedulers)
does the same and exits with status 143 (128 + 15), so the caller can tell the run was
stopped. Later SIGTERMs (during the final save, or while the process exits) are
ignored; SIGKILL is not (checkpoints are written atomically, so the previous one stays
readable).
"""

import os
import sys
from typing import List, Optional, Sequence, Tuple

from absl import app, flags
from absl import logging as absl_logging

import tfrl
from tfrl.algorithms.registry import ALGORITHMS
from tfrl.cli import commands, sweep
from tfrl.cli.experiment import (CliError, check_config, check_names, imports_user_code,
                                 resolve_experiment, tuned_for)
from tfrl.utils.progress import quiet_tensorflow

FLAGS = flags.FLAGS

# Experiment (all commands).
flags.DEFINE_string("algo", None, f"Algorithm, in any case: {', '.join(sorted(ALGORITHMS))} "
                    "(evaluate/export and train --restore: default from the checkpoint's "
                    "experiment.json).")
flags.DEFINE_string("env", None, "Env: a gymnasium id (CartPole-v1), module:id "
                    "(mypkg.envs:GoToGoal-v0) or a registered name (evaluate/export: default "
                    "from the checkpoint's experiment.json).")
flags.DEFINE_string("config", None, "Experiment file: a tuned file's name (ppo_cartpole; "
                    "tfrl list shows them) or a .yaml/.yml/.json path; see tfrl --help.")
flags.DEFINE_multi_string("config_override", [], "KEY=VALUE config setting (repeatable; "
                          "VALUE is YAML; dotted keys for nested dicts: model.fcnet_hiddens=[64]).")
flags.DEFINE_integer("seed", None, "Random seed (config key seed).")
flags.DEFINE_bool("verbose", False, "Show TensorFlow's start-up notices and Python logs "
                  "(hidden unless TF_CPP_MIN_LOG_LEVEL is set below 2).")
flags.DEFINE_integer("tf_threads", 0, "TensorFlow intra/inter-op threads (0: TF's default; "
                     "1 is fastest for small models).")
# train.
flags.DEFINE_bool("tuned", True, "Without --config: use the tuned file of --algo and --env "
                  "if there is one (--notuned: the algorithm's defaults).")
flags.DEFINE_string("stop", None, "Stop criteria KEY=NUMBER,...; stops when any is reached, "
                    "e.g. timesteps_total=100000,episode_reward_mean=475.")
flags.DEFINE_integer("num_workers", None, "Remote rollout workers (config key num_workers).")
flags.DEFINE_float("num_gpus", None, "GPUs for the learner (config key num_gpus).")
flags.DEFINE_string("logdir", None, "Output directory (default ~/tfrl_results/<ALGO>_<env>_<time>).")
flags.DEFINE_integer("checkpoint_every", 0, "Write a checkpoint every N iterations (0: only "
                     "at the end).")
flags.DEFINE_string("restore", None, "Checkpoint directory to continue training from (its "
                    "experiment.json gives the algo, env, config and stop criteria).")
flags.DEFINE_bool("dry_run", False, "Print the resolved experiment and config; do not train.")
flags.DEFINE_bool("quiet", False, "No per-iteration progress lines.")
# evaluate / export.
flags.DEFINE_string("checkpoint", None, "Checkpoint directory (printed by tfrl train).")
flags.DEFINE_integer("episodes", 10, "Episodes to evaluate.")
flags.DEFINE_bool("render", False, "Render the env in a window while evaluating (needs a "
                  "display: DISPLAY or WAYLAND_DISPLAY).")
flags.DEFINE_string("record", None, "Write videos of the evaluation episodes into this "
                    "directory (gymnasium's RecordVideo, its schedule: episodes 0, 1, 8, 27, "
                    "...; needs pip install 'tfrl[video]').")
flags.DEFINE_bool("explore", False, "Evaluate with stochastic (exploring) actions.")
flags.DEFINE_enum("format", "saved_model", list(commands.FORMATS), "Export format.")
flags.DEFINE_string("export_dir", None, "Export directory (default <checkpoint>_<format>).")
flags.DEFINE_string("policy_id", "default_policy", "Policy to export.")
# tune.
flags.DEFINE_string("sweep", None, "YAML file with the tune: section (space, search, "
                    "scheduler, ...), merged over the --config file's.")
flags.DEFINE_integer("num_samples", None, "Samples of the search space (tune.num_samples).")
flags.DEFINE_string("output", None, "The best config file (default <logdir>/best_config.yaml).")
flags.DEFINE_integer("num_cpus", None, "CPUs of the Ray runtime tfrl tune starts (default: all).")

_COMMON = ("algo", "env", "config", "config_override", "seed", "tf_threads", "verbose")
COMMANDS = {
    "train": _COMMON + ("tuned", "stop", "num_workers", "num_gpus", "logdir",
                        "checkpoint_every", "restore", "dry_run", "quiet"),
    "evaluate": _COMMON + ("checkpoint", "episodes", "render", "record", "explore"),
    "export": _COMMON + ("checkpoint", "format", "export_dir", "policy_id"),
    "list": ("algo", "env"),
    "tune": ("algo", "env", "config", "config_override", "seed", "verbose", "stop", "logdir",
             "dry_run", "quiet", "sweep", "num_samples", "output", "num_cpus"),
}
_OUR_FLAGS = {name for names in COMMANDS.values() for name in names}
_HELP = ("-h", "--help", "help", "-help")


def _fail(message: str, command: Optional[str] = None) -> None:
    prefix = f"tfrl {command}" if command else "tfrl"
    sys.stderr.write(f"{prefix}: error: {' '.join(message.split())}\n")
    sys.stderr.flush()
    sys.exit(2)


def _help(command: Optional[str]) -> int:
    sys.stdout.write(__doc__.strip() + "\n\n")
    names = COMMANDS.get(command, sorted(_OUR_FLAGS))
    sys.stdout.write(f"Flags{' of tfrl ' + command if command in COMMANDS else ''}:\n")
    for name in names:
        flag = FLAGS[name]
        sys.stdout.write(f"  --{name}: {flag.help} (default: {flag.default!r})\n")
    return 0


def _early_answer(argv: Sequence[str]) -> Optional[int]:
    """`--help` and `--version`, answered before any flag is parsed; else None."""
    if any(a in _HELP for a in argv[1:]):
        return _help(next((a for a in argv[1:] if a in COMMANDS), None))
    if "--version" in argv[1:]:
        sys.stdout.write(f"tfrl {tfrl.__version__}\n")
        return 0
    return None


# Output-directory flags users bring from elsewhere: RLlib's and Tune's `--local_dir`
# (absl would suggest its own `--log_dir`), and absl's `--log_dir`, which absl accepts
# for its logging files while the run's output still goes to the default directory.
_OUTPUT_DIR_NAMES = {
    "local_dir": "RLlib's and Ray Tune's name for the output directory",
    "local-dir": "RLlib's and Ray Tune's name for the output directory",
    "log_dir": "absl's directory for its logging files, not the run's output directory",
    "log-dir": "not a flag",
}


def _refuse_other_output_dir_flags(argv: Sequence[str]) -> None:
    for arg in argv[1:]:
        if arg == "--":
            return
        name = arg[2:].split("=", 1)[0] if arg.startswith("--") else None
        if name in _OUTPUT_DIR_NAMES:
            _fail(f"--{name} is {_OUTPUT_DIR_NAMES[name]}; tfrl's output directory flag is "
                  "--logdir (e.g. --logdir=results/ppo).")


def parse_argv(argv: Sequence[str]) -> List[str]:
    """Parses `argv` (program name first) into FLAGS; returns the positional arguments.

    Flag errors exit with status 2 and one line on stderr.
    """
    argv = list(argv)
    _refuse_other_output_dir_flags(argv)
    for name in _OUR_FLAGS:  # each call starts from the defaults (in-process reuse)
        FLAGS[name].unparse()
    try:
        return FLAGS(argv)
    except flags.Error as e:
        _fail(f"{e}. Run `tfrl --help` for the flags.")
    return []  # unreachable


def _command(positional: Sequence[str]) -> str:
    import difflib

    names = ", ".join(COMMANDS)
    if len(positional) != 1:
        got = "no command" if not positional else f"{list(positional)!r}"
        _fail(f"expected one command ({names}); received {got}. Run e.g. "
              "`tfrl train --algo=PPO --env=CartPole-v1`, or `tfrl --help`.")
    command = positional[0]
    if command not in COMMANDS:
        close = difflib.get_close_matches(command, list(COMMANDS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        _fail(f"unknown command {command!r}.{hint} Commands: {names}.")
    for name in sorted(_OUR_FLAGS - set(COMMANDS[command])):
        if FLAGS[name].present:
            users = [c for c, names in COMMANDS.items() if name in names]
            _fail(f"--{name} is not a flag of `tfrl {command}` (it belongs to "
                  f"{' and '.join('tfrl ' + u for u in users)}); remove it.", command)
    return command


def _quiet_python_logs() -> None:
    if not FLAGS["verbosity"].present:  # absl's --verbosity / -v still turns logs on
        absl_logging.set_verbosity(absl_logging.WARNING)


def _set_threads(n: int) -> None:
    if n > 0:
        import tensorflow as tf

        try:
            tf.config.threading.set_intra_op_parallelism_threads(n)
            tf.config.threading.set_inter_op_parallelism_threads(n)
        except RuntimeError:  # in-process use after TensorFlow started
            sys.stderr.write(f"tfrl: warning: --tf_threads={n} ignored: TensorFlow is "
                             "already initialized in this process.\n")


def dispatch(positional: Sequence[str]) -> int:
    """Runs the command named in `positional` with the parsed FLAGS; returns 0, or
    `commands.SIGTERM_EXIT_STATUS` if a SIGTERM stopped it."""
    command = _command(positional[1:])
    status = 0
    with commands.sigterm_as_interrupt() as received:
        try:
            status = _run_command(command)
        except commands.Terminated:  # before training started: nothing to save
            pass
    return commands.SIGTERM_EXIT_STATUS if received else status


def _tuned_file(command: str) -> Tuple[Optional[str], str]:
    """The tuned file `tfrl train --algo=A --env=E` uses (without --config or --restore)
    and the line that announces it; else (None, "")."""
    if not (command == "train" and FLAGS.tuned and FLAGS.algo and FLAGS.env
            and not FLAGS.config and not FLAGS.restore):
        return None, ""
    found = tuned_for(FLAGS.algo, FLAGS.env)
    if not found:
        return None, ""
    name, path = found[0]
    others = f"; also tuned: {', '.join(n for n, _ in found[1:])}" if found[1:] else ""
    return path, (f"Using the tuned file {name} ({path}){others}. --notuned for the "
                  "algorithm's defaults.\n")


def _tune() -> int:
    """`tfrl tune`: checks the experiment and every sampled config, then runs the sweep."""
    exp = resolve_experiment(FLAGS.config, FLAGS.algo, FLAGS.env, {"seed": FLAGS.seed},
                             FLAGS.config_override, FLAGS["stop"].value)
    if FLAGS.sweep:
        exp.sweep.update(sweep.load_sweep_file(FLAGS.sweep))
    if imports_user_code(exp):  # a user's module may import TensorFlow: quietly
        quiet_tensorflow(verbose=FLAGS.verbose)
    check_names(exp)
    spec = sweep.parse_sweep(exp.sweep, FLAGS.num_samples)
    if FLAGS.dry_run:
        sweep.dry_run(exp, spec)
        return 0
    sweep.check_sweep(exp, spec)  # every sampled config, before Ray starts
    if not exp.stop:
        raise CliError("tfrl tune needs stop criteria (trials would run forever): set stop: "
                       "in the file or pass e.g. --stop=training_iteration=20.")
    quiet_tensorflow(verbose=FLAGS.verbose)
    if not FLAGS.verbose:
        _quiet_python_logs()
    try:
        # Deferred: imports Ray Tune (the tune extra), which `tfrl train` never needs.
        from tfrl.cli.sweep_run import run_sweep
    except ImportError as e:
        raise CliError(f"tfrl tune runs its trials on Ray Tune, which cannot be imported "
                       f"({e}); pip install 'tfrl[tune]'.") from None
    default = commands.default_logdir(exp)  # ~/tfrl_results/tune_<ALGO>_<env>_<time>
    logdir = FLAGS.logdir or os.path.join(os.path.dirname(default),
                                          "tune_" + os.path.basename(default))
    with commands.user_errors(verbose=FLAGS.verbose):
        run_sweep(exp, spec, logdir, output=FLAGS.output, num_cpus=FLAGS.num_cpus,
                            verbose=0 if FLAGS.quiet else 1)
    return 0


def _run_command(command: str) -> int:
    try:
        if command == "list":
            commands.list_all(algo=FLAGS.algo, env=FLAGS.env)
            return 0
        if command == "tune":
            return _tune()
        settings = {"seed": FLAGS.seed}
        base = None
        if command == "train":
            settings.update(num_workers=FLAGS.num_workers, num_gpus=FLAGS.num_gpus)
            if FLAGS.restore:
                base = commands.experiment_of_checkpoint(
                    commands.check_checkpoint(FLAGS.restore, "--restore"))
        else:
            base = commands.experiment_of_checkpoint(
                commands.check_checkpoint(FLAGS.checkpoint))
        tuned_file, announcement = _tuned_file(command)
        exp = resolve_experiment(FLAGS.config or tuned_file, FLAGS.algo, FLAGS.env,
                                 settings, FLAGS.config_override, FLAGS["stop"].value
                                 if command == "train" else None, base=base)
        if imports_user_code(exp):  # a user's module may import TensorFlow: quietly
            quiet_tensorflow(verbose=FLAGS.verbose)
        check_names(exp)
        check_config(exp)  # keys and values, before TensorFlow loads
        if command == "evaluate":
            commands.check_display(FLAGS.render, FLAGS.record)
        if not FLAGS.dry_run:  # a dry run's JSON names the file (config_file)
            sys.stdout.write(announcement)
        # Imports TensorFlow (quietly unless --verbose) before anything else does.
        quiet_tensorflow(verbose=FLAGS.verbose)
        if not FLAGS.verbose:
            _quiet_python_logs()
        if command == "train" and FLAGS.dry_run:
            commands.dry_run(exp)
            return 0
        _set_threads(FLAGS.tf_threads)
        with commands.user_errors(verbose=FLAGS.verbose):
            if command == "train":
                commands.train(exp, logdir=FLAGS.logdir,
                               checkpoint_every=FLAGS.checkpoint_every, restore=FLAGS.restore,
                               quiet=FLAGS.quiet)
            elif command == "evaluate":
                commands.evaluate(exp, FLAGS.checkpoint, episodes=FLAGS.episodes,
                                  explore=FLAGS.explore, render=FLAGS.render,
                                  record=FLAGS.record)
            else:
                commands.export(exp, FLAGS.checkpoint, export_dir=FLAGS.export_dir,
                                fmt=FLAGS.format, policy_id=FLAGS.policy_id)
    except CliError as e:
        _fail(str(e), command)
    return 0


def main(argv: Sequence[str]) -> int:
    """Runs the CLI in-process: `main(["tfrl", "train", "--algo=PPO", ...])`.

    Flags are parsed explicitly from `argv` into `absl.flags.FLAGS` (call
    `FLAGS.unparse_flags()` before parsing another argv). Returns 0 (143 if a SIGTERM
    stopped `train`: see "Stopping" in the module docstring); user mistakes raise
    `SystemExit(2)` after printing one line on stderr.
    """
    argv = list(argv)
    answer = _early_answer(argv)
    if answer is not None:
        return answer
    return dispatch(parse_argv(argv))


def run() -> None:
    """The `tfrl` console script (absl `app.run`).

    The current directory joins the import path (as with `python -m tfrl`, but last,
    so that a file such as `yaml.py` there cannot shadow an installed module), so that
    `--env=mypkg.envs:GoToGoal-v0` and `callbacks: mypkg.cb:MyCallbacks` find a package
    in the directory the user runs `tfrl` from.
    """
    argv = sys.argv
    answer = _early_answer(argv)
    if answer is not None:
        sys.exit(answer)
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    app.run(dispatch, argv=argv, flags_parser=parse_argv)


if __name__ == "__main__":
    run()
