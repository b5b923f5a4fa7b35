"""MkDocs hooks (mkdocs.yml `hooks:`): put the generated parts into the pages.

A page asks for a generated part with a marker on a line of its own:

    <!-- tfrl:config PPO -->     the keys PPO's config class adds or changes
    <!-- tfrl:common-config -->  the keys every algorithm shares
    <!-- tfrl:tuned PPO -->      PPO's tuned experiment files
    <!-- tfrl:results PPO -->    bench/RESULTS.md's numbers for PPO beside its peer, as plots
    <!-- tfrl:cli -->            the command line's flags

The parts come from `tools/docs_gen.py`; the plots are added to the site as generated
files (`assets/results/*.png`), so nothing generated is written into docs/. An unknown
marker fails the build.
"""

import os
import posixpath
import re
import sys
from typing import Any, Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
_TOOLS = os.path.dirname(os.path.abspath(__file__))
for _path in (_TOOLS, os.path.dirname(_TOOLS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import docs_gen  # noqa: E402  (tools/ is put on the path just above)
import tfrl  # noqa: E402,F401  (first: hides TensorFlow's start-up notices in the build log)
from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402

_MARKER = re.compile(r"^<!-- tfrl:([\w-]+)(?: (\w+))? -->$", re.MULTILINE)
_PLOTS: Dict[str, List[Any]] = {}  # algorithm -> [(panel, site path of its PNG)]


def on_files(files: Files, config: Any) -> Files:
    _PLOTS.clear()
    for algo in docs_gen.RESULT_SPECS:
        try:
            panels = docs_gen.result_panels(algo)
        except ValueError as e:
            raise PluginError(str(e)) from e
        for i, panel in enumerate(panels):
            path = f"assets/results/{algo.lower()}_{i}.png"
            files.append(File.generated(config, path, content=docs_gen.plot_panel(panel)))
            _PLOTS.setdefault(algo, []).append((panel, path))
    return files


def _results(algo: str, page_path: str) -> str:
    plots = _PLOTS.get(algo)
    if not plots:
        return (f"`bench/RESULTS.md` records no run of {algo} beside a peer's yet, so this "
                "page has no plot. The algorithm's learning test (see its tuned files above) "
                "is what checks that it learns.\n")
    out = ["`bench/RESULTS.md` records, for each run, the numbers at the end of training "
           "(per seed, tfrl beside its peer under the same settings), not whole learning "
           "curves; the plots below are drawn from those numbers at build time. Step "
           "counts depend on the CPU's float math (AVX-512 or AVX2), so another machine "
           "gives other numbers for the same seed.", ""]
    base = posixpath.dirname(page_path)
    for panel, path in plots:
        rel = posixpath.relpath(path, base or ".")
        better = "higher is better" if panel.higher_is_better else "lower is better"
        out += [f"![{panel.title}]({rel})", "",
                f"*{panel.metric} ({better}); from the table under "
                f"\"{docs_gen._cell(panel.source)}\" in `bench/RESULTS.md`.*", ""]
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    page_path = page.file.src_uri

    def replace(match: "re.Match[str]") -> str:
        kind, arg = match.group(1), match.group(2)
        try:
            if kind == "config" and arg:
                return docs_gen.config_keys(arg)
            if kind == "common-config":
                return docs_gen.common_config_keys()
            if kind == "tuned" and arg:
                return docs_gen.tuned_files(arg)
            if kind == "results" and arg:
                return _results(arg, page_path)
            if kind == "cli":
                return docs_gen.cli_reference()
            if kind == "rllib-compat":
                return docs_gen.rllib_compat_table()
        except (ValueError, FileNotFoundError) as e:
            raise PluginError(f"{page_path}: {match.group(0)}: {e}") from e
        raise PluginError(f"{page_path}: unknown marker {match.group(0)!r}; see "
                          "tools/docs_hooks.py for the markers.")

    return _MARKER.sub(replace, markdown)
