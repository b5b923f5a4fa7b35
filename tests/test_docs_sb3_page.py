"""docs/coming-from-sb3.md and the SB3 key table the unknown-key error answers from
(`tfrl.algorithms.sb3_keys.SB3_KEYS`) say the same thing (issue 30), both ways:

- every SB3 name a table row of the page names is answered, for that section's
  algorithm, with a tfrl key its row names (or is a key of the same name there);
- every answer of `SB3_KEYS` (SB3 name -> tfrl key) is a row of the page.

The page keeps its prose and extra rows (schedules, Adam's epsilon, same-named keys);
only the SB3 names the table knows are held to it."""

import os
import re

import pytest

from tfrl.algorithms.registry import get_config_class
from tfrl.algorithms.sb3_keys import SB3_KEYS, sb3_hints

PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                    "coming-from-sb3.md")
# Page section -> the algorithm whose config answers its rows.
SECTIONS = {"PPO": "PPO", "DQN": "DQN", "SAC": "SAC", "TD3 and DDPG": "TD3",
            "Every algorithm": "PPO"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _rows():
    """(section, SB3 cell, tfrl cell) of every table row of the page's key sections."""
    section, rows = None, []
    with open(PAGE, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.startswith("|") and not line.startswith("|---"):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if cells[0].startswith("SB3"):
                    continue  # the header
                rows.append((section, cells[0], cells[1]))
    return rows


def _names(cell):
    """The identifiers inside the cell's backticked spans."""
    return {word for span in re.findall(r"`([^`]*)`", cell) for word in _WORD.findall(span)}


def _answer_key(hint):
    """The tfrl key a `sb3_hints` sentence names, or None ("tfrl has no such key")."""
    if "tfrl's key is " not in hint:
        return None
    return _WORD.match(hint.split("tfrl's key is ", 1)[1]).group(0)


ROWS = _rows()


def test_the_page_has_the_key_sections():
    assert set(SECTIONS) <= {section for section, _, _ in ROWS}


@pytest.mark.parametrize("section,sb3,tfrl", [row for row in ROWS if row[0] in SECTIONS])
def test_each_sb3_name_on_the_page_gets_the_key_its_row_names(section, sb3, tfrl):
    valid = get_config_class(SECTIONS[section]).valid_keys()
    hints = sb3_hints(valid)
    names = _names(sb3) & set(SB3_KEYS)
    if len(names) > 1:
        names.discard("policy_kwargs")  # `policy_kwargs=dict(net_arch=...)`: net_arch's row
    for name in sorted(names):
        if name in valid:
            continue  # accepted as it is (e.g. DQN's learning_starts alias)
        assert name in hints, (section, name, "the page names it; SB3_KEYS has no answer")
        key = _answer_key(hints[name])
        if key is None:
            assert "(none)" in tfrl or not (_names(tfrl) & valid), (section, name, tfrl)
        else:
            # The row names the answer's key, or another key the answer names
            # (e.g. a note: "model: {fcnet_hiddens: [...]}").
            named = {key} | (set(_WORD.findall(hints[name])) & valid)
            assert _names(tfrl) & named, (section, name, hints[name], tfrl)


@pytest.mark.parametrize("name", sorted(SB3_KEYS))
def test_every_answer_of_the_sb3_table_is_a_row_of_the_page(name):
    for marker, key, note in SB3_KEYS[name]:
        rows = [(section, tfrl) for section, sb3, tfrl in ROWS if name in _names(sb3)]
        assert rows, f"{name} is in SB3_KEYS but in no row of docs/coming-from-sb3.md"
        if key is not None:
            assert any(key in _names(tfrl) for _, tfrl in rows), (
                f"SB3_KEYS answers {name} with {key}; no row of the page does")


def test_a_drift_is_caught():
    """The check compares words, not a copy: a row naming another key fails it."""
    hints = sb3_hints(get_config_class("PPO").valid_keys())
    assert _answer_key(hints["n_epochs"]) == "num_sgd_iter"
    assert "num_sgd_iter" not in _names("`train_batch_size`")
    assert _names("`policy_kwargs=dict(net_arch=[256, 256])`") >= {"policy_kwargs", "net_arch"}
