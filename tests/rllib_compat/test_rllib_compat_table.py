"""The ported RLlib tests are counted where users read about them, in two tables:

- the documentation site's "Coming from RLlib" page lists every `test_rllib_*.py` file of
  this folder with the RLlib file it ports, how many of RLlib's test functions it ports,
  how many pass and how many are strict xfails, and the totals (generated at build time by
  `tools/docs_gen.rllib_compat_table`);
- README.md's "Where tfrl differs from RLlib" holds the same counts summed per RLlib
  folder, between its `rllib-compat-table` markers.

The counts come from the files themselves (their `RLLIB_PATH`, their `test_*` functions
and methods, their `xfail` marks), read here independently of the generator, so neither
table can drift from the suite. Every xfail must be strict and give its reason."""

import ast
import os
import re

import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(os.path.dirname(os.path.dirname(HERE)), "README.md")
SELF = {"test_rllib_compat_helpers.py", "test_rllib_compat_table.py"}
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools"))

import docs_gen  # noqa: E402  (tools/ is not a package)


def _is_xfail(decorator):
    """The keywords of an `xfail` mark (`pytest.mark.xfail(...)`), or None."""
    if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute) \
            and decorator.func.attr == "xfail":
        return {kw.arg: kw.value for kw in decorator.keywords}
    if isinstance(decorator, ast.Attribute) and decorator.attr == "xfail":
        return {}
    return None


def ported_files():
    """{file name: (rllib path, commit, tests ported, strict xfails)} of this folder."""
    files = {}
    for name in sorted(os.listdir(HERE)):
        if not (name.startswith("test_rllib_") and name.endswith(".py")) or name in SELF:
            continue
        tree = ast.parse(open(os.path.join(HERE, name), encoding="utf-8").read())
        constants = {target.id: node.value.value for node in tree.body
                     if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                     for target in node.targets if isinstance(target, ast.Name)}
        functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
        functions += [item for node in tree.body if isinstance(node, ast.ClassDef)
                      for item in node.body if isinstance(item, ast.FunctionDef)]
        tests = [fn for fn in functions if fn.name.startswith("test_")]
        xfails = 0
        for fn in tests:
            for decorator in fn.decorator_list:
                keywords = _is_xfail(decorator)
                if keywords is None:
                    continue
                strict = keywords.get("strict")
                assert isinstance(strict, ast.Constant) and strict.value is True, \
                    f"{name}::{fn.name}: an xfail must be strict=True"
                reason = keywords.get("reason")
                assert reason is not None, f"{name}::{fn.name}: an xfail must give its reason"
                xfails += 1
        files[name] = (constants.get("RLLIB_PATH"), constants.get("RLLIB_COMMIT"),
                       len(tests), xfails)
    return files


def readme_rows():
    text = open(README, encoding="utf-8").read()
    block = re.search(r"<!-- rllib-compat-table:begin -->(.*?)<!-- rllib-compat-table:end -->",
                      text, re.S)
    assert block, "README.md has no rllib-compat table markers"
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in block.group(1).splitlines() if line.startswith("| `")]


def test_every_ported_file_names_its_rllib_source():
    files = ported_files()
    assert files, "no ported RLlib test files"
    for name, (path, commit, tests, _) in files.items():
        assert path and path.startswith("rllib/") and path.endswith(".py"), name
        assert commit and re.fullmatch(r"[0-9a-f]{40}", commit), name
        assert tests > 0, name


def _table_rows(markdown):
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in markdown.splitlines() if line.startswith("| `")]


def test_docs_table_matches_the_files():
    files = ported_files()
    expected = [[f"`{name}`", f"`{path}`", str(tests), str(tests - xfails), str(xfails)]
                for name, (path, _, tests, xfails) in files.items()]
    total = [sum(f[2] for f in files.values()), sum(f[3] for f in files.values())]
    expected.append(["`total`", "", str(total[0]), str(total[0] - total[1]), str(total[1])])
    assert _table_rows(docs_gen.rllib_compat_table()) == expected


def test_readme_table_sums_the_files_per_rllib_folder():
    folders = {}
    for path, _, tests, xfails in ported_files().values():
        counts = folders.setdefault(os.path.dirname(path), [0, 0, 0])
        counts[0] += 1
        counts[1] += tests
        counts[2] += xfails
    expected = [[f"`{folder}/`", str(n), str(tests), str(tests - xfails), str(xfails)]
                for folder, (n, tests, xfails) in sorted(folders.items())]
    n, tests, xfails = (sum(c[i] for c in folders.values()) for i in range(3))
    expected.append(["`total`", str(n), str(tests), str(tests - xfails), str(xfails)])
    assert readme_rows() == expected
    # The README's block is exactly what the generator prints (so it can be regenerated
    # with `python tools/docs_gen.py rllib-compat folders`).
    assert docs_gen.rllib_compat_folder_table() in open(README, encoding="utf-8").read()
