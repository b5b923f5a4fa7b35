"""Every registered algorithm trains bit for bit as it did when the stored digests were
made (tests/data/training_step_digests.json, made on main before `training_step()`
replaced the generator plans): two `train()` iterations on a fixed seed with the
conformance suite's small config, then a sha256 of every policy's weights and of the
result's numbers (counters, learner info, step and episode totals, the reward mean;
no times).

To remake the file (only when a change of the numbers is intended and explained):
`TFRL_WRITE_DIGESTS=1 python -m pytest tests/conformance/test_training_step_digests.py`.
"""

import hashlib
import json
import os
import pathlib

import numpy as np
import pytest

from conformance_helpers import ALGORITHM_NAMES, SUPPORTED, make_algorithm

DIGESTS = pathlib.Path(__file__).resolve().parents[1] / "data" / "training_step_digests.json"
WRITE = os.environ.get("TFRL_WRITE_DIGESTS") == "1"
ITERATIONS = 2


def space_of(algo):
    """The Discrete pair where the algorithm supports it, else the Box pair, else (an
    algorithm for groups of agents: QMIX) the suite's grouped env."""
    spaces = [s for a, s in SUPPORTED if a == algo]
    if not spaces:
        return "grouped"
    return "discrete" if "discrete" in spaces else spaces[0]


def weights_digest(algorithm):
    """sha256 over every policy's weights (sorted by policy id, then weight name), with
    each array's dtype and shape. A weight entry that is a list of arrays (QMIX's weights
    per network) counts as its arrays, named `<entry>/<index>`; None is left out."""
    h = hashlib.sha256()
    for pid, weights in sorted(algorithm.get_weights().items()):
        h.update(pid.encode())
        items = weights.items() if isinstance(weights, dict) else enumerate(weights)
        for name, value in sorted(items, key=lambda kv: str(kv[0])):
            if value is None:
                continue
            parts = ([(f"{name}/{i}", v) for i, v in enumerate(value)]
                     if isinstance(value, list) else [(name, value)])
            for part_name, part in parts:
                array = np.ascontiguousarray(np.asarray(part))
                h.update(f"{part_name}|{array.dtype.str}|{array.shape}".encode())
                h.update(array.tobytes())
    return h.hexdigest()


def numbers(value, prefix=""):
    """`(path, repr)` of every number in a nested dict/list, in a fixed order; keys naming
    times are left out."""
    if isinstance(value, dict):
        out = []
        for key in sorted(value, key=str):
            if "time" in str(key) or "timer" in str(key):
                continue
            out += numbers(value[key], f"{prefix}/{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [n for i, v in enumerate(value) for n in numbers(v, f"{prefix}[{i}]")]
    if isinstance(value, (bool, np.bool_)):
        return [(prefix, repr(bool(value)))]
    if isinstance(value, (int, np.integer)):
        return [(prefix, repr(int(value)))]
    if isinstance(value, (float, np.floating)):
        return [(prefix, repr(float(value)))]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return [(prefix, repr(value.tolist()))]
    return []


def result_numbers(result):
    """The numbers of a `train()` result that do not depend on time."""
    keep = {key: result.get(key) for key in (
        "counters", "timesteps_total", "agent_timesteps_total", "episodes_total",
        "episodes_this_iter", "episode_reward_mean", "episode_len_mean",
        "training_iteration")}
    keep["learner"] = result.get("info", {}).get("learner", {})
    return numbers(keep)


def digest_of(algo):
    algorithm = make_algorithm(algo, space_of(algo))
    try:
        iterations = []
        for _ in range(ITERATIONS):
            found = result_numbers(algorithm.train())
            iterations.append({
                "counters": {path: value for path, value in found
                             if path.startswith("/counters/")},
                "numbers_sha256": hashlib.sha256(repr(found).encode()).hexdigest()})
        return {"space": space_of(algo), "iterations": iterations,
                "weights_sha256": weights_digest(algorithm)}
    finally:
        algorithm.stop()


@pytest.mark.parametrize("algo", ALGORITHM_NAMES)
def test_training_is_bit_identical_to_the_stored_digests(algo):
    got = digest_of(algo)
    if WRITE:
        stored = json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}
        stored[algo] = got
        DIGESTS.parent.mkdir(exist_ok=True)
        DIGESTS.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        return
    want = json.loads(DIGESTS.read_text())[algo]
    assert got["space"] == want["space"]
    for i, (g, w) in enumerate(zip(got["iterations"], want["iterations"])):
        assert g["counters"] == w["counters"], f"iteration {i + 1}: counters"
        assert g["numbers_sha256"] == w["numbers_sha256"], f"iteration {i + 1}: result numbers"
    assert got["weights_sha256"] == want["weights_sha256"], "policy weights"
