"""Learning curves of bench runs: small CSV files under bench/curves/, one per run.

A run appends `(env steps, mean episode return, wall seconds)` after every iteration
(tfrl) or rollout/episode (the peer); the header's `smoothing=N` says over how many of the
latest training episodes that mean is taken; `write()` thins the rows to at most `MAX_ROWS`
(evenly spaced, the first and last kept) and writes
`bench/curves/<algo>_<env>_<library>_seed<k>.csv` with a `#`-comment header naming the
budget, machine and date. `tools/plot_curves.py` turns them into the SVGs of the
documentation's algorithm pages.

The benches write curves when `TFRL_BENCH_CURVES` names a folder (their `--curves DIR`
flag sets it for the child runs); `bench/bench_curve_tuned.py` records tfrl-only curves
from a tuned file.
"""

import datetime
import math
import os
import platform
from typing import Dict, List, Optional, Tuple

MAX_ROWS = 60
CURVES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "curves")
ENV_VAR = "TFRL_BENCH_CURVES"


def machine() -> str:
    """The CPU model (from /proc/cpuinfo) and core count, e.g. 'Intel Xeon ... x2'."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{' '.join(model.split())}, {os.cpu_count()} cores"


def file_name(algo: str, env: str, library: str, seed: int) -> str:
    env = env.replace("/", "-").replace(":", "-")  # no "/" or ":" in a file name
    return f"{algo.lower()}_{env}_{library}_seed{seed}.csv"


class Curve:
    """The rows of one run; `add()` after each iteration, `write()` at the end."""

    def __init__(self, algo: str, env: str, library: str, seed: int, budget: int,
                 note: str = "", smoothing: Optional[int] = None, source: str = "",
                 fields: Optional[Dict[str, str]] = None):
        # smoothing: over how many of the latest training episodes the run's mean return
        # is taken (tfrl's metrics_smoothing_episodes; SB3's stats_window_size, 100).
        # source: where the run's settings come from (a path, no spaces), e.g. a tuned file.
        # fields: more `key=value` header fields, e.g. a peer's version, framework and
        # API stack (version=2.60.0 framework=torch stack=old).
        fields = dict(fields or {})
        for key, value in {"source": source, **fields}.items():
            if " " in str(value):
                raise ValueError(f"Curve {key} must have no spaces (a header field); "
                                 f"received {value!r}")
        self.algo, self.env, self.library, self.seed = algo, env, library, seed
        self.budget, self.note, self.smoothing = budget, note, smoothing
        self.source, self.fields = source, fields
        self.rows: List[Tuple[int, float, float]] = []

    def add(self, steps: int, mean_return: Optional[float], wall_s: float) -> None:
        if mean_return is None or (isinstance(mean_return, float) and math.isnan(mean_return)):
            return  # no episode has ended yet
        self.rows.append((int(steps), float(mean_return), float(wall_s)))

    def write(self, folder: Optional[str] = None) -> Optional[str]:
        """Writes the thinned CSV into `folder` (default: `$TFRL_BENCH_CURVES`; nothing
        is written when neither is set); returns its path."""
        folder = folder or os.environ.get(ENV_VAR)
        if not folder:
            return None
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, file_name(self.algo, self.env, self.library, self.seed))
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"# algo={self.algo} env={self.env} library={self.library} "
                    f"seed={self.seed} budget={self.budget}"
                    + (f" smoothing={int(self.smoothing)}" if self.smoothing else "")
                    + (f" source={self.source}" if self.source else "")
                    + "".join(f" {k}={v}" for k, v in self.fields.items()) + "\n")
            f.write(f"# machine={machine()} date={datetime.date.today().isoformat()}\n")
            if self.note:
                f.write(f"# note={self.note}\n")
            f.write("env_steps,mean_return,wall_s\n")
            for steps, ret, wall in thin(self.rows, MAX_ROWS):
                f.write(f"{steps},{ret:.2f},{wall:.1f}\n")
        return path


def thin(rows: list, limit: int) -> list:
    """At most `limit` of `rows`, evenly spaced, the first and last kept."""
    if len(rows) <= limit:
        return list(rows)
    picks = sorted({round(i * (len(rows) - 1) / (limit - 1)) for i in range(limit)})
    return [rows[i] for i in picks]


def train_until(algo, curve: "Curve", steps: int, target: float):
    """Trains the tfrl `algo` for `steps` env steps, adding each iteration's mean return
    to `curve` (written at the end); returns `(last result, env steps at which the mean
    first reached target or None, wall s, process CPU s)`."""
    import time

    start, cpu = time.time(), time.process_time()
    solved = None
    result = {"timesteps_total": 0, "episode_reward_mean": float("nan")}
    while result["timesteps_total"] < steps:
        result = algo.train()
        curve.add(result["timesteps_total"], result["episode_reward_mean"], time.time() - start)
        if solved is None and result["episode_reward_mean"] >= target:
            solved = result["timesteps_total"]
    wall, cpu = time.time() - start, time.process_time() - cpu
    curve.write()
    return result, solved, wall, cpu
