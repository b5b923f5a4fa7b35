"""Plots the learning curves of bench/curves/*.csv as SVGs for the algorithm pages.

    python tools/plot_curves.py                         # every CSV -> docs/assets/curves/
    python tools/plot_curves.py --pages                 # ... and the pages' sections
    python tools/plot_curves.py --out /tmp/x bench/curves/ppo_CartPole-v1_tfrl_seed0.csv

One SVG per algorithm (`<algo>.svg`, lower case): the mean return against env steps of
every run of that algorithm, one colour per library (tfrl, its peer: Stable-Baselines3,
or RLlib itself for IMPALA, APPO, BC, MARWIL and CQL) and one thin line per seed, with the
mean over the seeds (on the common step grid) drawn thick. The CSVs
come from the benches (`--curves DIR`, bench/curves.py). The output is deterministic
(no date in the file, fixed element ids), so a rerun on the same CSVs changes nothing.

Where a bench runs tfrl beside its peer with the peer's settings and tfrl also has a
tuned file with other settings, the tuned file's runs are kept as library `tfrl-tuned`
(`bench/bench_curve_tuned.py --library tfrl-tuned`; their header names the file, and
the algorithm and settings it ran with if changed, in `source=`): a third, dashed line "tfrl, tuned file", which the caption says is not the
peer's setting.
"""

import argparse
import csv
import glob
import os
import re
import sys
from collections import defaultdict
from typing import Dict, List, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CURVES = os.path.join(REPO, "bench", "curves")
OUT = os.path.join(REPO, "docs", "assets", "curves")
COLOURS = {"tfrl": "#d62728", "sb3": "#1f77b4", "tfrl-tuned": "#ff7f0e", "rllib": "#2ca02c"}
LABELS = {"tfrl": "tfrl", "sb3": "Stable-Baselines3", "tfrl-tuned": "tfrl, tuned file",
          "rllib": "RLlib"}
#: The library of a tuned file's runs drawn beside a tfrl-vs-peer comparison.
TUNED = "tfrl-tuned"
#: Why an algorithm's plot has no peer curve (its caption says so).
NO_PEER = {
    "PG": "Stable-Baselines3 has no vanilla policy gradient (REINFORCE), RLlib 2.60 no PG",
    "A3C": ("Stable-Baselines3 has no asynchronous A3C (its A2C is the synchronous form), "
            "RLlib 2.60 no A3C"),
    "IMPALA": "Stable-Baselines3 has no IMPALA (V-trace) learner",
    "APPO": "Stable-Baselines3 has no asynchronous PPO",
    "CQL_DQN": ("Stable-Baselines3 has no offline algorithms, RLlib 2.60 no discrete CQL "
                "(its CQL is SAC's)"),
    "QMIX": "Stable-Baselines3 has no multi-agent algorithms, RLlib 2.60 no QMIX",
    "MAPPO": ("Stable-Baselines3 has no multi-agent algorithms, RLlib 2.60 no "
              "centralized-critic PPO (an example script only)"),
    "R2D2": "Stable-Baselines3 has no recurrent replay (R2D2), RLlib 2.60 no R2D2",
    "APEX": "Stable-Baselines3 has no distributed replay (Ape-X), RLlib 2.60 no Ape-X",
}
#: What still differs between tfrl's and the peer's settings (the caption says it).
PEER_DIFFERS = {
    "A2C": "except the optimizer (SB3's A2C: RMSprop; tfrl's: Adam)",
    "CQL": ("except that RLlib's CQL policy learns under RLlib's SAC replay step (RLlib "
            "2.60's CQL step has no replay buffer; tfrl's replays, as RLlib 1.x's did) and "
            "reads one logged episode per round, with rollout_fragment_length, "
            "training_intensity and the learning start translated so that both take 50 "
            "gradient steps of 256 rows per 200-row round from the 10,000th row on "
            "(bench/bench_offline_curves.py)"),
}
#: Why the peer's curve looks as it does where that needs saying (the caption says it).
PEER_NOTES: Dict[str, str] = {
    "IMPALA": ("RLlib's mean return climbs, then falls back in every seed, also with its "
               "default lr of 5e-4 or a grad_clip scaled to its summed loss "
               "(bench/RESULTS.md); RLlib's own CartPole examples ask "
               "for 150 within 500k steps (old stack, cartpole-impala.yaml) and 450 within "
               "2M (new stack)"),
    "APPO": ("RLlib's mean return climbs, then falls back in every seed, also with an lr of "
             "5e-4 (bench/RESULTS.md); RLlib's own CartPole examples ask for 150 within "
             "200k steps (old stack, cartpole-appo.yaml, other settings) and 450 within "
             "2M (new stack)"),
}


def read_curve(path: str) -> Tuple[Dict[str, str], List[Tuple[float, float, float]]]:
    """A CSV's header fields (`# key=value ...` lines) and its rows (steps, return, wall s)."""
    meta: Dict[str, str] = {}
    rows = []
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    body = []
    for line in lines:
        if line.startswith("#"):
            text = line[1:].strip()
            if text.startswith(("machine=", "note=")):  # values with spaces: one per line
                key, _, value = text.partition(" date=") if text.startswith("machine=") \
                    else (text, "", "")
                k, _, v = key.partition("=")
                meta[k] = v
                if value:
                    meta["date"] = value
            else:
                for field in text.split():
                    k, _, v = field.partition("=")
                    meta[k] = v
        else:
            body.append(line)
    reader = csv.DictReader(body)
    for row in reader:
        rows.append((float(row["env_steps"]), float(row["mean_return"]), float(row["wall_s"])))
    if not rows:
        raise ValueError(f"{path}: no rows (expected env_steps,mean_return,wall_s lines)")
    for key in ("algo", "env", "library", "seed"):
        if key not in meta:
            raise ValueError(f"{path}: the header names no {key}= (see bench/curves.py)")
    return meta, rows


def _by_library(runs: list, key: str) -> Dict[str, set]:
    """{library: the set of the runs' header values of `key` (None where missing)}."""
    by_library: Dict[str, set] = {}
    for meta, _ in runs:
        by_library.setdefault(meta["library"], set()).add(meta.get(key))
    return dict(sorted(by_library.items()))


def _per_library(values: Dict[str, str]) -> str:
    """"A (lib1, lib2) / B (lib3)": each distinct value with the libraries that have it."""
    groups: Dict[str, list] = {}
    for lib, value in values.items():
        groups.setdefault(value, []).append(lib)
    return " / ".join(f"{value} ({', '.join(libs)})" for value, libs in groups.items())


def _smoothing_text(runs: list) -> str:
    """"mean return of the last N training episodes", N from the CSVs' `smoothing=`
    (per library where they differ)."""
    by_library = _by_library(runs, "smoothing")
    counts = {lib: next(iter(values)) for lib, values in by_library.items()
              if len(values) == 1 and None not in values}
    if len(counts) != len(by_library):
        return "mean return of the latest training episodes"
    if len(set(counts.values())) == 1:
        return f"mean return of the last {next(iter(counts.values()))} training episodes"
    return f"mean return of the last {_per_library(counts)} training episodes"


def _seed_text(seeds: List[int]) -> str:
    return (f"seeds {', '.join(map(str, seeds))}" if len(seeds) > 1
            else f"one seed ({seeds[0]}; more did not fit the run's time)")


def _source_text(source: str) -> str:
    """A header's `source` read out: `f.yaml+algo=DDPG+a=1+b=2` -> "f.yaml run as DDPG
    with a=1, b=2" (bench/bench_curve_tuned.py writes it)."""
    path, *changes = source.split("+")
    algo = [c.partition("=")[2] for c in changes if c.startswith("algo=")]
    settings = [c for c in changes if not c.startswith("algo=")]
    return (path + (f" run as {algo[0]}" if algo else "")
            + (f" with {', '.join(settings)}" if settings else ""))


def _rllib_text(runs: list) -> str:
    """"peer: RLlib 2.60.0 (torch, old API stack) with the same settings as tfrl
    (tfrl/tuned/x.yaml)", from the rllib CSVs' `version`, `framework`, `stack` and `source`
    (bench/bench_async.py writes them), plus the algorithm's PEER_DIFFERS and
    PEER_NOTES."""
    rllib = [m for m, _ in runs if m["library"] == "rllib"]
    versions = ", ".join(sorted({m.get("version", "?") for m in rllib}))
    setups = ", ".join(sorted({f"{m.get('framework', '?')}, {m.get('stack', '?')} API stack"
                               for m in rllib}))
    ours = {m.get("source") for m, _ in runs if m["library"] != "rllib"}
    theirs = {m.get("source") for m in rllib}
    if None not in theirs and theirs == ours:
        settings = f"with the same settings as tfrl ({', '.join(sorted(theirs))})"
    else:
        settings = ("with settings from " + ", ".join(sorted(s or "?" for s in theirs)))
    algo = rllib[0]["algo"]
    differs = PEER_DIFFERS.get(algo)
    note = PEER_NOTES.get(algo)
    return (f"peer: RLlib {versions} ({setups}) {settings}"
            + (f", {differs}" if differs else "") + (f"; {note}" if note else ""))


def caption(runs: list) -> str:
    """The one-line caption of an algorithm's plot: env, seeds, budget, peer, machine, date
    (`runs`: the (header, rows) pairs of its CSVs)."""
    meta = runs[0][0]
    libs = sorted({m["library"] for m, _ in runs})
    offline = any("note" in m for m, _ in runs)
    unit = "iterations" if offline else "env steps"
    seeds = {lib: sorted(int(s) for s in values)
             for lib, values in _by_library(runs, "seed").items()}
    if len({tuple(v) for v in seeds.values()}) == 1:
        seed_text = _seed_text(next(iter(seeds.values())))
    else:  # e.g. "seeds 0 (sb3, tfrl) / 0, 1, 2 (tfrl-tuned)"
        seed_text = "seeds " + _per_library({lib: ", ".join(map(str, v))
                                             for lib, v in seeds.items()})
    budgets = {lib: ", ".join(f"{int(b):,}" for b in sorted(values, key=int))
               for lib, values in _by_library(runs, "budget").items()}
    if len(set(budgets.values())) == 1:
        budget = f"{next(iter(budgets.values()))} {unit} per run"
    else:
        budget = f"{_per_library(budgets)} {unit} per run"
    if "sb3" in libs:
        differs = PEER_DIFFERS.get(meta["algo"])
        peer = ("peer: Stable-Baselines3 with the same settings"
                + (" as tfrl" if TUNED in libs else "") + (f", {differs}" if differs else ""))
        if TUNED in libs:
            sources = sorted({_source_text(m.get("source", "a tuned file"))
                              for m, _ in runs if m["library"] == TUNED})
            peer += f"; {LABELS[TUNED]} ({TUNED}): {', '.join(sources)}, other settings"
    elif "rllib" in libs:
        peer = _rllib_text(runs)
    else:
        peer = f"no peer curve: {NO_PEER.get(meta['algo'], 'no peer run yet')}"
    what = ("mean greedy return of the evaluation episodes after each iteration"
            if offline else _smoothing_text(runs))
    dates = sorted({m.get("date", "?") for m, _ in runs})
    date = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    return (f"{meta['algo']} on {meta['env']}, {seed_text}, {budget}; {what}; "
            f"{peer}; {meta.get('machine', '?')}, {date}.")


def load(paths: List[str]) -> Dict[str, list]:
    """The runs of `paths` by algorithm: {algo: [(header, rows), ...]}."""
    by_algo: Dict[str, list] = defaultdict(list)
    for path in sorted(paths):
        meta, rows = read_curve(path)
        by_algo[meta["algo"]].append((meta, rows))
    return by_algo


def plot(paths: List[str], out_dir: str) -> List[str]:
    """Writes one SVG per algorithm found in `paths` into `out_dir`; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    matplotlib.rcParams["svg.hashsalt"] = "tfrl-curves"
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: small files
    by_algo = load(paths)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for algo, runs in sorted(by_algo.items()):
        fig, ax = plt.subplots(figsize=(6.4, 3.6))
        by_lib: Dict[str, list] = defaultdict(list)
        for meta, rows in runs:
            by_lib[meta["library"]].append(rows)
        for lib, curves in sorted(by_lib.items(), key=lambda kv: kv[0] != "tfrl"):
            colour = COLOURS.get(lib, "#2ca02c")
            style = "--" if lib == TUNED else "-"
            for rows in curves:
                ax.plot([r[0] for r in rows], [r[1] for r in rows], color=colour,
                        alpha=0.35, linewidth=0.8, linestyle=style)
            grid = np.linspace(max(c[0][0] for c in curves), min(c[-1][0] for c in curves), 50)
            mean = np.mean([np.interp(grid, [r[0] for r in c], [r[1] for r in c])
                            for c in curves], axis=0)
            ax.plot(grid, mean, color=colour, linewidth=2.0, linestyle=style,
                    label=f"{LABELS.get(lib, lib)} ({len(curves)} seed"
                          f"{'s' if len(curves) > 1 else ''})")
        offline = any("note" in meta for meta, _ in runs)
        ax.set_xlabel("logged steps read" if offline else "env steps")
        ax.set_ylabel("greedy evaluation return" if offline else "mean episode return")
        ax.set_title(f"{algo} on {runs[0][0]['env']}")
        ax.grid(True, alpha=0.3)
        # Lower right, unless a run ends in the plot's lower third (a peer that fell back),
        # where the legend would hide it.
        bottom, top = ax.get_ylim()
        ends_low = any(rows[-1][1] < bottom + (top - bottom) / 3 for _, rows in runs)
        ax.legend(loc="upper left" if ends_low else "lower right", fontsize="small")
        fig.tight_layout()
        path = os.path.join(out_dir, f"{algo.lower()}.svg")
        fig.savefig(path, format="svg", metadata={"Date": None})
        plt.close(fig)
        written.append(path)
    return written


PAGES = os.path.join(REPO, "docs", "algorithms")
SECTION = "## Learning curves\n"


def page_section(algo: str, runs: list, alt: str = "") -> str:
    """The "Learning curves" section of an algorithm page: the SVG (with `alt` as its alt
    text, by default "<ALGO> learning curves on <env>") and its caption."""
    meta = runs[0][0]
    alt = alt or f"{algo} learning curves on {meta['env']}"
    return (f"{SECTION}\n![{alt}]"
            f"(../assets/curves/{algo.lower()}.svg)\n\n*{caption(runs)}*\n\n")


def update_pages(by_algo: Dict[str, list], pages: str = PAGES) -> List[str]:
    """Writes each algorithm's section into `pages/<algo>.md` (replacing the old one, or
    before "## Results beside a peer"); returns the pages changed."""
    changed = []
    for algo, runs in sorted(by_algo.items()):
        path = os.path.join(pages, f"{algo.lower()}.md")
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if SECTION in text:
            start = text.index(SECTION)
            end = text.find("\n## ", start + len(SECTION))
            end = len(text) if end < 0 else end + 1
            kept = re.search(r"^!\[([^\]]+)\]", text[start:end], re.MULTILINE)  # its alt text
            new = page_section(algo, runs, kept.group(1) if kept else "")
            updated = text[:start] + new + text[end:]
        elif "## Results beside a peer" in text:
            new = page_section(algo, runs)
            at = text.index("## Results beside a peer")
            updated = text[:at] + new + text[at:]
        else:
            updated = text.rstrip("\n") + "\n\n" + page_section(algo, runs)
        updated = updated.rstrip("\n") + "\n"
        if updated != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(updated)
            changed.append(path)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csvs", nargs="*", help=f"CSV files (default: {CURVES}/*.csv)")
    parser.add_argument("--out", default=OUT, help=f"folder of the SVGs (default: {OUT})")
    parser.add_argument("--pages", action="store_true",
                        help="also write each plot and caption into its page, "
                             "docs/algorithms/<algo>.md (section 'Learning curves')")
    parser.add_argument("--captions", action="store_true",
                        help="print each algorithm's caption line (for its page) instead")
    args = parser.parse_args(argv)
    paths = args.csvs or sorted(glob.glob(os.path.join(CURVES, "*.csv")))
    if not paths:
        print(f"plot_curves.py: error: no CSV files (looked in {CURVES})", file=sys.stderr)
        return 2
    if args.captions:
        for algo, runs in sorted(load(paths).items()):
            print(f"{algo}: {caption(runs)}")
        return 0
    for path in plot(paths, args.out):
        print(path)
    if args.pages:
        for path in update_pages(load(paths)):
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
