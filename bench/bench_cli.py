"""The times a new user waits for the `tfrl` command line's first answers.

    python bench/bench_cli.py                                  # this source tree, 5 runs
    python bench/bench_cli.py --tfrl /path/to/old/checkout --tfrl .   # before/after

Each run is a fresh `tfrl` console-script process (`tfrl.cli.main.run`, as the installed
script calls it) with the source tree first on PYTHONPATH, started from an empty
temporary directory (as a user's project directory), timed from start to exit:

- `help`: `tfrl --help`;
- `key_error`: `tfrl train --algo=PPO --env=CartPole-v1 --config_override=learning_rate=3e-4`
  (an SB3 key name: exit status 2 and one line);
- `list`: `tfrl list` (the algorithms and tuned files; a tree without the command
  answers with its unknown-command error, timed all the same and marked so).

Rounds interleave the trees and the commands (the machine's load changes); the parent
prints per tree and command the median and range of the wall times, the exit status and
the first line of stderr (or stdout).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = {
    "help": ["--help"],
    "key_error": ["train", "--algo=PPO", "--env=CartPole-v1",
                  "--config_override=learning_rate=3e-4"],
    "list": ["list"],
}
SCRIPT = "import sys; from tfrl.cli.main import run; sys.argv[0] = 'tfrl'; run()"


def _once(tree: str, args: List[str], cwd: str) -> Tuple[float, int, str]:
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = os.path.abspath(tree)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)
    wall = time.perf_counter() - start
    first = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[:1]
    return wall, proc.returncode, first[0][:110] if first else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tfrl", action="append", help="source tree (repeatable)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    trees = args.tfrl or [ROOT]
    times: Dict[Tuple[str, str], List[float]] = {}
    answers: Dict[Tuple[str, str], Tuple[int, str]] = {}
    with tempfile.TemporaryDirectory(prefix="tfrl_cli_bench_") as cwd:
        for _ in range(args.runs):
            for name, command in COMMANDS.items():
                for tree in trees:
                    wall, status, first = _once(tree, command, cwd)
                    times.setdefault((tree, name), []).append(wall)
                    answers[(tree, name)] = (status, first)
    for tree in trees:
        print(f"== {tree}")
        for name in COMMANDS:
            walls = times[(tree, name)]
            status, first = answers[(tree, name)]
            print(f"  {name:10s} median {statistics.median(walls):5.2f} s  (range "
                  f"{min(walls):.2f}-{max(walls):.2f}, {len(walls)} runs)  exit {status}: "
                  f"{first}")


if __name__ == "__main__":
    main()
