"""The generated parts of the documentation site, computed from the code and the repository.

`tools/docs_hooks.py` (an MkDocs hook) replaces markers in the pages with these, at build
time, so no page keeps a copy that could drift:

- `config_keys(algo)`: the keys an algorithm's config class adds or changes (name as in
  RLlib dicts, type, default, allowed values, description), from the frozen dataclass,
  its `_RANGES` tables and the `Attributes:` sections of the class docstrings;
  `common_config_keys()`: the keys every algorithm shares (`AlgorithmConfig`,
  `PolicyConfig`).
- `tuned_files(algo)`: the tuned experiment files of an algorithm, their row in the tuned
  files' README and their contents.
- `cli_reference()`: `tfrl --help` and a table of each command's absl flags.
- `rllib_compat_table()` / `rllib_compat_folder_table()`: the counts of RLlib's ported
  tests (tests/rllib_compat/), per file (the docs) or per RLlib folder (README.md).
- `result_panels(algo)` / `plot_panels(panels)`: the numbers `bench/RESULTS.md` records for
  an algorithm beside its peer (per seed), as matplotlib bar charts (PNG bytes).

Run it to print a part: `python tools/docs_gen.py config PPO`, `... tuned SAC`, `... cli`,
`... results DQN`, `... rllib-compat [folders]`.
"""

import ast
import dataclasses
import glob
import io
import math
import os
import re
import sys
import textwrap
import typing
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_MD = os.path.join(ROOT, "bench", "RESULTS.md")
# Where tuned experiment files live: inside the package (tfrl.tuned.TUNED_DIR).
TUNED_DIRS = (os.path.join(ROOT, "tfrl", "tuned"),)


# --------------------------------------------------------------------------- config keys


def _cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    if annotation is Any:
        return "Any"
    origin = typing.get_origin(annotation)
    if origin is typing.Union:
        args = typing.get_args(annotation)
        names = [_type_name(a) for a in args if a is not type(None)]
        inner = " or ".join(names)  # no "|": it would split a Markdown table cell
        return f"{inner} or None" if type(None) in args else inner
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(annotation))
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{args}]" if args else name
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _default_text(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        value = field.default_factory()  # type: ignore[misc]
    else:
        return "(required)"
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value)


_ATTR_LINE = re.compile(r"^(\s*)([A-Za-z_][\w()]*(?:\s*,\s*[A-Za-z_][\w()]*)*)\s*:\s*(.*)$")


def _expand_names(names: str) -> List[str]:
    """"kl_coeff, kl_target" -> both; "entropy_coeff(_schedule)" -> both spellings."""
    out = []
    for name in (n.strip() for n in names.split(",")):
        match = re.fullmatch(r"(\w+)\((\w+)\)", name)
        out.extend([match.group(1), match.group(1) + match.group(2)] if match else [name])
    return out


def attribute_docs(cls: type) -> Dict[str, str]:
    """Field name -> the text of its entry in the `Attributes:` sections of `cls`'s MRO
    (the most derived class that documents a field wins)."""
    docs: Dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        text = vars(klass).get("__doc__") or ""
        lines = text.expandtabs().splitlines()
        in_section, entry_indent, current = False, None, None
        for line in lines:
            if line.strip() == "Attributes:":
                in_section, entry_indent, current = True, None, None
                continue
            if not in_section:
                continue
            if not line.strip():
                current = None
                continue
            indent = len(line) - len(line.lstrip())
            if entry_indent is None:
                entry_indent = indent
            if indent < entry_indent:
                in_section = False
                continue
            match = _ATTR_LINE.match(line)
            if indent == entry_indent and match:
                current = _expand_names(match.group(2))
                for name in current:
                    docs[name] = match.group(3).strip()
            elif indent > entry_indent and current:
                for name in current:
                    docs[name] = (docs[name] + " " + line.strip()).strip()
            elif indent == entry_indent:
                in_section = False
    return docs


def _declaring_class(cls: type, name: str) -> type:
    for klass in cls.__mro__:
        if name in vars(klass).get("__annotations__", {}):
            return klass
    return cls


def _config_rows(cls: type, names: Sequence[str]) -> List[str]:
    from tfrl.algorithms.algorithm_config import FIELD_KEYS
    from tfrl.utils.config_values import merged_ranges

    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    ranges = merged_ranges(cls)
    docs = attribute_docs(cls)
    rows = ["| Key | Type | Default | Allowed | Description |", "|---|---|---|---|---|"]
    for name in names:
        field = fields[name]
        bound = ranges.get(name)
        allowed = bound.describe() if hasattr(bound, "describe") else (bound or "")
        key = FIELD_KEYS.get(name, name)
        rows.append(f"| `{key}` | `{_cell(_type_name(hints.get(name, field.type)))}` | "
                    f"`{_cell(_default_text(field))}` | {_cell(allowed)} | "
                    f"{_cell(docs.get(name, ''))} |")
    return rows


def config_class(algo: str) -> type:
    from tfrl.algorithms.registry import get_algorithm_class

    return get_algorithm_class(algo, return_config=True)[1]


def config_keys(algo: str) -> str:
    """The keys `algo`'s config class declares below `AlgorithmConfig` (its own keys and
    the common defaults it changes), as a Markdown table."""
    from tfrl.algorithms.algorithm_config import AlgorithmConfig

    cls = config_class(algo)
    common = set(AlgorithmConfig.__mro__)
    names = [f.name for f in dataclasses.fields(cls)
             if _declaring_class(cls, f.name) not in common]
    bases = [k.__name__ for k in cls.__mro__[1:] if k not in common and dataclasses.is_dataclass(k)]
    intro = (f"Generated from `{cls.__module__}.{cls.__qualname__}`"
             + (f" (with {', '.join(f'`{b}`' for b in bases)})" if bases else "")
             + f": the {len(names)} keys it adds or whose default it changes. Every other key "
             "is one of the [common keys](common-config.md) with its default there.")
    return "\n".join([intro, ""] + _config_rows(cls, names)) + "\n"


def common_config_keys() -> str:
    """The keys of `AlgorithmConfig` (and `PolicyConfig`) with their common defaults."""
    from tfrl.algorithms.algorithm_config import AlgorithmConfig

    names = [f.name for f in dataclasses.fields(AlgorithmConfig)]
    intro = (f"Generated from `tfrl.algorithms.algorithm_config.AlgorithmConfig` and "
             f"`tfrl.policy.policy_config.PolicyConfig`: {len(names)} keys.")
    return "\n".join([intro, ""] + _config_rows(AlgorithmConfig, names)) + "\n"


# --------------------------------------------------------------------------- tuned files


def tuned_dir() -> str:
    for folder in TUNED_DIRS:
        if glob.glob(os.path.join(folder, "*.yaml")):
            return folder
    raise FileNotFoundError(f"No tuned files in any of {TUNED_DIRS}.")


def _experiment(data: Dict[str, Any]) -> Dict[str, Any]:
    """The experiment mapping of a tuned file (RLlib's `name: {run: ...}` layout too)."""
    if "algo" in data or "run" in data:
        return data
    if len(data) == 1:
        (inner,) = data.values()
        if isinstance(inner, dict):
            return inner
    return data


def _tuned_readme_rows() -> Dict[str, Tuple[str, str]]:
    """File name -> (what, stops at) from the tuned files' README table."""
    rows: Dict[str, Tuple[str, str]] = {}
    path = os.path.join(tuned_dir(), "README.md")
    if not os.path.exists(path):
        return rows
    for line in open(path, encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([\w.]+\.yaml)`", cells[0]):
            rows[name] = (cells[1], cells[2])
    return rows


def tuned_files(algo: str) -> str:
    folder = tuned_dir()
    readme = _tuned_readme_rows()
    rel = os.path.relpath(folder, ROOT)
    found = []
    for path in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
        text = open(path, encoding="utf-8").read()
        exp = _experiment(yaml.safe_load(text) or {})
        if str(exp.get("algo", exp.get("run", ""))).upper() == algo.upper():
            found.append((os.path.basename(path), text, exp))
    if not found:
        return f"No tuned file for {algo} in `{rel}/` yet.\n"
    out = ["| File | What | Stops at |", "|---|---|---|"]
    for name, _, exp in found:
        what, stops = readme.get(name, (f"{algo}, {exp.get('env', '')}", ", ".join(
            f"{k} {v}" for k, v in (exp.get("stop") or {}).items())))
        out.append(f"| `{name}` | {_cell(what)} | {_cell(stops)} |")
    out.append("")
    out.append(f"Run one by name with `tfrl train --config=<name>` (the file name without "
               f"`.yaml`; the files ship inside the package, in `{rel}/`). The files:")
    out.append("")
    for name, text, _ in found:
        out.append(f'??? example "{name}"')
        out.append("")
        out.append("    ```yaml")
        out.extend(("    " + line).rstrip() for line in text.rstrip().splitlines())
        out.append("    ```")
        out.append("")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- the CLI


RLLIB_COMPAT_DIR = os.path.join(ROOT, "tests", "rllib_compat")
#: Files of tests/rllib_compat/ that test the folder itself, not a port of an RLlib file.
RLLIB_COMPAT_SELF = {"test_rllib_compat_helpers.py", "test_rllib_compat_table.py"}


def _xfail_keywords(decorator: Any) -> Optional[Dict[str, Any]]:
    """The keywords of an `xfail` mark (`pytest.mark.xfail(...)`), or None."""
    if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute) \
            and decorator.func.attr == "xfail":
        return {kw.arg: kw.value for kw in decorator.keywords}
    if isinstance(decorator, ast.Attribute) and decorator.attr == "xfail":
        return {}
    return None


def rllib_compat_files(folder: str = RLLIB_COMPAT_DIR) -> Dict[str, Tuple[str, int, int]]:
    """{file name: (RLlib path, tests ported, strict xfails)} of the ported RLlib test
    files (`test_rllib_*.py`), read from their `RLLIB_PATH` constant, their `test_*`
    functions and methods, and their `xfail` marks."""
    files: Dict[str, Tuple[str, int, int]] = {}
    for name in sorted(os.listdir(folder)):
        if not (name.startswith("test_rllib_") and name.endswith(".py")) \
                or name in RLLIB_COMPAT_SELF:
            continue
        tree = ast.parse(open(os.path.join(folder, name), encoding="utf-8").read())
        constants = {target.id: node.value.value for node in tree.body
                     if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                     for target in node.targets if isinstance(target, ast.Name)}
        functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
        functions += [item for node in tree.body if isinstance(node, ast.ClassDef)
                      for item in node.body if isinstance(item, ast.FunctionDef)]
        tests = [fn for fn in functions if fn.name.startswith("test_")]
        xfails = sum(1 for fn in tests for decorator in fn.decorator_list
                     if _xfail_keywords(decorator) is not None)
        path = constants.get("RLLIB_PATH")
        if not isinstance(path, str):
            raise ValueError(f"tests/rllib_compat/{name} has no RLLIB_PATH constant")
        files[name] = (path, len(tests), xfails)
    return files


def rllib_compat_table(folder: str = RLLIB_COMPAT_DIR) -> str:
    """The count table of RLlib's ported tests, one row per ported file (the docs' Coming
    from RLlib page; tests/rllib_compat/test_rllib_compat_table.py checks it)."""
    files = rllib_compat_files(folder)
    out = ["| file | RLlib file | ported | passing | strict xfail |",
           "|---|---|---:|---:|---:|"]
    for name, (path, tests, xfails) in files.items():
        out.append(f"| `{name}` | `{path}` | {tests} | {tests - xfails} | {xfails} |")
    tests = sum(f[1] for f in files.values())
    xfails = sum(f[2] for f in files.values())
    out.append(f"| `total` |  | {tests} | {tests - xfails} | {xfails} |")
    return "\n".join(out)


def rllib_compat_folder_table(folder: str = RLLIB_COMPAT_DIR) -> str:
    """The same counts summed per RLlib folder (README.md's table, between its
    `rllib-compat-table` markers)."""
    folders: Dict[str, List[int]] = {}
    for path, tests, xfails in rllib_compat_files(folder).values():
        counts = folders.setdefault(os.path.dirname(path), [0, 0, 0])
        counts[0] += 1
        counts[1] += tests
        counts[2] += xfails
    out = ["| RLlib folder | files | ported | passing | strict xfail |",
           "|---|---:|---:|---:|---:|"]
    for name, (n, tests, xfails) in sorted(folders.items()):
        out.append(f"| `{name}/` | {n} | {tests} | {tests - xfails} | {xfails} |")
    n, tests, xfails = (sum(c[i] for c in folders.values()) for i in range(3))
    out.append(f"| `total` | {n} | {tests} | {tests - xfails} | {xfails} |")
    return "\n".join(out)


def cli_reference() -> str:
    """`tfrl --help`'s text and one table of flags per command, from the absl flags."""
    from absl import flags

    import tfrl.cli.main as cli_main

    flag_values = flags.FLAGS
    ours: Dict[str, Any] = {}
    for module, module_flags in flag_values.flags_by_module_dict().items():
        if module.startswith("tfrl.") or module.startswith("tfrl/"):
            for flag in module_flags:
                ours[flag.name] = flag
    commands: Dict[str, Sequence[str]] = dict(getattr(cli_main, "COMMANDS", {}) or {})
    if not commands:
        commands = {"(all commands)": sorted(ours)}
    out = ["```text", (cli_main.__doc__ or "").strip(), "```", ""]
    out += ["Flags of every command, by command (`tfrl <command> --help` prints the same).", ""]
    for command, names in commands.items():
        out += [f"### `tfrl {command}`", "",
                "| Flag | Type | Default | Help |", "|---|---|---|---|"]
        for name in names:
            flag = ours[name] if name in ours else flag_values[name]
            kind = flag.flag_type()
            if getattr(flag, "enum_values", None):
                kind += ": " + ", ".join(flag.enum_values)
            out.append(f"| `--{name}` | {_cell(kind)} | `{_cell(repr(flag.default))}` | "
                       f"{_cell(flag.help)} |")
        out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------- benchmark plots


def _heading_tables(text: str) -> List[Tuple[str, List[Dict[str, str]]]]:
    """(the last `#` heading above it, rows as {column: cell}) for every Markdown table."""
    tables: List[Tuple[str, List[Dict[str, str]]]] = []
    heading, header, rows = "", None, None
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header, rows = cells, []
            elif set("".join(cells)) <= set("-: "):
                continue
            else:
                rows.append(dict(zip(header, cells)))  # type: ignore[union-attr]
        elif header is not None:
            tables.append((heading, rows or []))
            header, rows = None, None
    return tables


def _numbers(cell: str) -> List[float]:
    """"−295.9 / −298.6 / −318.6" -> three floats; "65,792" -> 65792; "—" -> nan."""
    out = []
    for part in cell.replace("*", "").split("/"):
        part = part.strip().replace("−", "-").replace(",", "")
        match = re.match(r"^-?\d+(\.\d+)?", part)
        out.append(float(match.group(0)) if match else math.nan)
    return out


@dataclasses.dataclass
class Panel:
    """One chart: a metric per seed for tfrl and its peer, from one RESULTS.md table."""

    title: str
    metric: str
    source: str  # the heading of the table in bench/RESULTS.md
    series: Dict[str, List[float]]
    higher_is_better: bool = True


@dataclasses.dataclass
class _RowSpec:
    """Rows whose first cell starts with `prefix` (and pass `keep`), column `column`."""

    label: str
    prefix: str
    column: str
    keep: Callable[[Dict[str, str]], bool] = lambda row: True


@dataclasses.dataclass
class _PanelSpec:
    title: str
    metric: str
    heading: str  # a substring of the table's heading
    rows: Sequence[_RowSpec]
    higher_is_better: bool = True
    first_column: Optional[str] = None  # default: the table's first column


def _two_threads(row: Dict[str, str]) -> bool:
    return row.get("threads", "2") == "2"


def _seed_row(row: Dict[str, str]) -> bool:
    return row.get("seed", "").isdigit()


# Which RESULTS.md tables hold per-seed results of an algorithm beside its peer's.
RESULT_SPECS: Dict[str, List[_PanelSpec]] = {
    "PPO": [
        _PanelSpec("PPO CartPole-v1 (bench_ppo_cartpole.py, the issue's settings)",
                   "env steps to a mean return of 475 (missing: not reached in 100k)",
                   "bench_ppo_cartpole.py` (issue settings, 3 seeds, tfrl vs SB3, after this",
                   [_RowSpec("tfrl", "tfrl s0", "steps to 475"),
                    _RowSpec("Stable-Baselines3", "SB3 s0", "steps to 475")],
                   higher_is_better=False),
        _PanelSpec("PPO + LSTM, stateless CartPole (bench_recurrent.py)",
                   "env steps to a mean return of 150",
                   "bench_recurrent.py --seeds 0 1 2` (issue 18; stateless CartPole, 100k steps",
                   [_RowSpec("tfrl", "tfrl s", "steps to 150"),
                    _RowSpec("SB3-contrib RecurrentPPO", "SB3-contrib s", "steps to 150")],
                   higher_is_better=False),
        _PanelSpec("PPO ALE/Breakout-v5 from pixels, 200k steps (bench_atari.py)",
                   "mean one-life score, last 100 episodes",
                   "bench_atari.py --seeds 0`, then `--seeds 1`",
                   [_RowSpec("tfrl", "tfrl s", "R at end (last 100 one-life episodes)"),
                    _RowSpec("Stable-Baselines3", "SB3 s",
                             "R at end (last 100 one-life episodes)")]),
    ],
    "DQN": [
        _PanelSpec("DQN CartPole-v1, 50k steps, RL Zoo settings (bench_offpolicy.py)",
                   "greedy evaluation return (10 episodes)",
                   "bench_offpolicy.py` (issue 15; RL Zoo's",
                   [_RowSpec("tfrl", "", "tfrl eval R", _seed_row),
                    _RowSpec("Stable-Baselines3", "", "SB3 eval R", _seed_row)]),
        _PanelSpec("DQN CartPole-v1, 50k steps, RL Zoo settings (bench_offpolicy.py)",
                   "mean training return, last 100 episodes",
                   "bench_offpolicy.py` (issue 15; RL Zoo's",
                   [_RowSpec("tfrl", "", "tfrl final R", _seed_row),
                    _RowSpec("Stable-Baselines3", "", "SB3 final R", _seed_row)]),
    ],
    "SAC": [
        _PanelSpec("SAC Pendulum-v1, 20k steps, RL Zoo settings (bench_offpolicy.py)",
                   "greedy evaluation return", "bench_offpolicy.py --algos SAC TD3 --seeds 0 1 2",
                   [_RowSpec("tfrl", "tfrl SAC", "greedy eval R"),
                    _RowSpec("Stable-Baselines3", "SB3 SAC", "greedy eval R")]),
        _PanelSpec("SAC HalfCheetah-v5, 30k steps, RL Zoo settings (bench_mujoco.py)",
                   "greedy evaluation return (5 episodes)",
                   "bench_mujoco.py` (issue 19; SAC HalfCheetah",
                   [_RowSpec("tfrl", "tfrl s", "greedy eval R (5 ep.)", _two_threads),
                    _RowSpec("Stable-Baselines3", "SB3 s", "greedy eval R (5 ep.)", _two_threads)]),
    ],
    "TD3": [
        _PanelSpec("TD3 Pendulum-v1, 20k steps, RL Zoo settings (bench_offpolicy.py)",
                   "greedy evaluation return", "bench_offpolicy.py --algos SAC TD3 --seeds 0 1 2",
                   [_RowSpec("tfrl", "tfrl TD3", "greedy eval R"),
                    _RowSpec("Stable-Baselines3", "SB3 TD3", "greedy eval R")]),
    ],
    "A2C": [
        _PanelSpec("A2C CartPole-v1, 100k steps, RL Zoo settings (bench_a2c_cartpole.py)",
                   "mean training return, last 100 episodes", "bench_a2c_cartpole.py --seeds 0",
                   [_RowSpec("tfrl", "tfrl A2C", "last-100 mean R"),
                    _RowSpec("Stable-Baselines3", "SB3 A2C", "last-100 mean R")]),
        _PanelSpec("A2C CartPole-v1, 100k steps, RL Zoo settings (bench_a2c_cartpole.py)",
                   "greedy evaluation return (10 episodes)", "bench_a2c_cartpole.py --seeds 0",
                   [_RowSpec("tfrl", "tfrl A2C", "greedy eval R"),
                    _RowSpec("Stable-Baselines3", "SB3 A2C", "greedy eval R")]),
    ],
    "DDPG": [
        _PanelSpec("DDPG Pendulum-v1, 20k steps, RL Zoo settings (bench_offpolicy.py)",
                   "greedy evaluation return (10 episodes)",
                   "and `--algos DDPG --seeds 0`",
                   [_RowSpec("tfrl", "tfrl DDPG", "greedy eval R"),
                    _RowSpec("Stable-Baselines3", "SB3 DDPG", "greedy eval R")]),
    ],
    "IMPALA": [
        _PanelSpec("IMPALA CartPole-v1, 2 Ray workers, seed 0 (bench_async.py)",
                   "env steps to a mean return of 150", "bench_async.py --algos IMPALA APPO",
                   [_RowSpec("tfrl", "tfrl IMPALA", "steps to 150"),
                    _RowSpec("RLlib 2.60", "RLlib 2.60 IMPALA", "steps to 150")],
                   higher_is_better=False),
    ],
    "APPO": [
        _PanelSpec("APPO CartPole-v1, 2 Ray workers, seed 0 (bench_async.py)",
                   "env steps to a mean return of 150", "bench_async.py --algos IMPALA APPO",
                   [_RowSpec("tfrl", "tfrl APPO", "steps to 150"),
                    _RowSpec("RLlib 2.60", "RLlib 2.60 APPO", "steps to 150")],
                   higher_is_better=False),
    ],
}


def result_panels(algo: str, results_md: str = RESULTS_MD) -> List[Panel]:
    """The panels of `algo` read from RESULTS.md (the first matching table of each spec,
    i.e. the newest, as the file lists sessions newest first).

    Raises:
        ValueError: When a spec's table or column is not in the file any more (so the
            build fails instead of silently dropping a plot).
    """
    tables = _heading_tables(open(results_md, encoding="utf-8").read())
    panels = []
    for spec in RESULT_SPECS.get(algo, []):
        match = next(((h, rows) for h, rows in tables
                      if spec.heading in h and rows
                      and all(r.column in rows[0] for r in spec.rows)),
                     None)
        if match is None:
            raise ValueError(f"bench/RESULTS.md has no table under a heading containing "
                             f"{spec.heading!r} with columns {[r.column for r in spec.rows]}; "
                             "update RESULT_SPECS in tools/docs_gen.py.")
        heading, rows = match
        series = {}
        for row_spec in spec.rows:
            values: List[float] = []
            for row in rows:
                first = next(iter(row.values()))
                if first.replace("*", "").startswith(row_spec.prefix) and row_spec.keep(row):
                    values += _numbers(row[row_spec.column])
            if not values:
                raise ValueError(f"bench/RESULTS.md, table {heading!r}: no row starts with "
                                 f"{row_spec.prefix!r}; update RESULT_SPECS in tools/docs_gen.py.")
            series[row_spec.label] = values
        panels.append(Panel(spec.title, spec.metric, heading, series, spec.higher_is_better))
    return panels


def plot_panel(panel: Panel) -> bytes:
    """A grouped bar chart (one group per seed) of `panel`, as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(len(v) for v in panel.series.values())
    width = 0.8 / len(panel.series)
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=100)
    for i, (label, values) in enumerate(panel.series.items()):
        xs = [s + (i - (len(panel.series) - 1) / 2) * width for s in range(len(values))]
        bars = ax.bar(xs, [0 if math.isnan(v) else v for v in values], width, label=label)
        for bar, value in zip(bars, values):
            text = ("not reached" if math.isnan(value)
                    else f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}")
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom" if bar.get_height() >= 0 else "top",
                        fontsize=7)
    ax.set_xticks(range(n), [f"seed {s}" for s in range(n)])
    ax.set_ylabel("\n".join(textwrap.wrap(panel.metric, 30)), fontsize=8)
    ax.set_title(panel.title, fontsize=9)
    ax.axhline(0, color="black", linewidth=0.5)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    # Fixed metadata: the same numbers give the same bytes.
    fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def main(argv: Sequence[str]) -> int:
    sys.path.insert(0, ROOT)
    usage = ("usage: docs_gen.py config ALGO | common | tuned ALGO | cli | results ALGO | "
             "rllib-compat [folders]")
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    part, args = argv[0], list(argv[1:])
    if part == "config" and args:
        print(config_keys(args[0]))
    elif part == "common":
        print(common_config_keys())
    elif part == "tuned" and args:
        print(tuned_files(args[0]))
    elif part == "cli":
        print(cli_reference())
    elif part == "rllib-compat":
        print(rllib_compat_folder_table() if args == ["folders"] else rllib_compat_table())
    elif part == "results" and args:
        for panel in result_panels(args[0]):
            print(panel)
    else:
        print(usage, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
