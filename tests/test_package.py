"""Checks on the tfrl package itself: it imports, lazily, from the tested sources."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tfrl

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_imports_from_this_source_tree():
    # Under pytest and under Bazel alike, `tfrl` is the package next to tests/, not a
    # copy installed elsewhere.
    package_dir = os.path.dirname(os.path.abspath(tfrl.__file__))
    assert package_dir == os.path.join(REPO_ROOT, "tfrl")


def test_import_is_light():
    # `import tfrl` must pull in neither Ray (an optional extra) nor TensorFlow. Run in a
    # fresh interpreter: this process already imported TensorFlow in conftest.py.
    code = "import sys, tfrl; print(sorted(m for m in ('ray', 'tensorflow') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    ).stdout
    assert out.strip() == "[]"


def test_tfp_loads_lazily_when_tfrl_comes_first():
    # Imported before TensorFlow, tfrl lets tensorflow_probability defer its heavy
    # `experimental`/`layers` subpackages (start-up time and memory, bench_startup.py);
    # the distributions still work. Imported after TensorFlow, TFP loads everything.
    code = (
        "import sys, tfrl, tensorflow as tf\n"
        "from tfrl.models.tf.tf_action_dist import Categorical\n"
        "logp = Categorical(tf.zeros([1, 4]), None).logp(tf.constant([2]))\n"
        "print(round(float(logp[0]), 4),"
        " 'tensorflow_probability.python.experimental' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=REPO_ROOT).stdout.split()
    assert out == [str(round(-np.log(4.0), 4)), "False"]


def test_version_is_pep440():
    # e.g. "0.1.0.dev0", "0.2.0rc1", "1.0.0"; setup.py reads it from tfrl/__init__.py.
    pattern = r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?"
    assert re.fullmatch(pattern, tfrl.__version__)


def test_env_package_exports_rllib_names_lazily():
    import tfrl.env

    for name in tfrl.env.__all__:
        assert getattr(tfrl.env, name).__name__ == name
    from tfrl.env.registry import register_env
    from tfrl.tune.registry import register_env as tune_register_env

    assert tune_register_env is register_env
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        tfrl.env.Nope
