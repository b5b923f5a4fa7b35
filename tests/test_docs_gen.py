"""The documentation site's generated parts (tools/docs_gen.py) stay in step with the code.

Quick checks that need no MkDocs: every registered algorithm has a page that asks for its
generated parts and is in the site's navigation; the config tables list exactly the keys
a config class declares; the benchmark tables the plots read still parse (so an edit of
bench/RESULTS.md that breaks a plot fails here, not only in the docs build).
"""

import dataclasses
import os
import sys

import pytest
import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))

import docs_gen  # noqa: E402  (tools/ is not a package)

from tfrl.algorithms.algorithm_config import FIELD_KEYS, AlgorithmConfig  # noqa: E402
from tfrl.algorithms.registry import ALGORITHMS  # noqa: E402


def _nav_pages():
    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml may hold Python tags (!!python/name:...); they do not matter here.
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *args: None)
    with open(os.path.join(REPO_ROOT, "mkdocs.yml"), encoding="utf-8") as f:
        config = yaml.load(f, Loader=Loader)
    pages = []

    def walk(node):
        if isinstance(node, str):
            pages.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    walk(config["nav"])
    return pages


@pytest.mark.parametrize("algo", sorted(ALGORITHMS))
def test_every_algorithm_has_a_page(algo):
    page = f"algorithms/{algo.lower()}.md"
    with open(os.path.join(REPO_ROOT, "docs", page), encoding="utf-8") as f:
        text = f.read()
    for marker in ("config", "tuned", "results"):
        assert f"<!-- tfrl:{marker} {algo} -->" in text, (page, marker)
    assert page in _nav_pages()


@pytest.mark.parametrize("algo", ["PPO", "DQN", "SAC", "CQL_DQN"])
def test_config_table_lists_the_declared_keys(algo):
    cls = docs_gen.config_class(algo)
    table = docs_gen.config_keys(algo)
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    keys = [row.split("`")[1] for row in rows]
    common = set(AlgorithmConfig.__mro__)
    expected = [FIELD_KEYS.get(f.name, f.name) for f in dataclasses.fields(cls)
                if docs_gen._declaring_class(cls, f.name) not in common]
    assert keys == expected and len(keys) == len(set(keys))
    # Defaults come from the dataclass: PPO's lr, DQN's own keys.
    if algo == "PPO":
        assert "| `lr` | `float` | `5e-05` | > 0 |" in table
    if algo == "DQN":
        assert "`dueling` | `bool` | `True`" in table


def test_common_config_table_has_every_key():
    table = docs_gen.common_config_keys()
    keys = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    assert keys == {FIELD_KEYS.get(f.name, f.name) for f in dataclasses.fields(AlgorithmConfig)}


def test_attribute_docs_parse_grouped_names():
    class Config:
        """Doc.

        Attributes:
            a, b: Shared text
                that continues.
            c(_schedule): Both spellings.

        After the section.
        """

    assert docs_gen.attribute_docs(Config) == {
        "a": "Shared text that continues.", "b": "Shared text that continues.",
        "c": "Both spellings.", "c_schedule": "Both spellings."}


def test_numbers_of_a_cell():
    assert docs_gen._numbers("−295.9 / **−298.6** / 65,792")[:2] == [-295.9, -298.6]
    assert docs_gen._numbers("65,792")[0] == 65792.0
    nan = docs_gen._numbers("—")[0]
    assert nan != nan


@pytest.mark.parametrize("algo", sorted(docs_gen.RESULT_SPECS))
def test_results_tables_still_parse(algo):
    panels = docs_gen.result_panels(algo)
    assert len(panels) == len(docs_gen.RESULT_SPECS[algo])
    for panel in panels:
        assert len(panel.series) == 2
        lengths = {len(values) for values in panel.series.values()}
        assert len(lengths) == 1 and lengths.pop() >= 1, panel


def test_tuned_files_cover_their_algorithms():
    text = docs_gen.tuned_files("PPO")
    assert "`ppo_cartpole.yaml`" in text and "algo: PPO" in text
    assert "`cql_cartpole.yaml`" in docs_gen.tuned_files("CQL_DQN")
    assert "`cql_cartpole.yaml`" not in docs_gen.tuned_files("CQL")
