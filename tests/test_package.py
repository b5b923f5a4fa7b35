"""Checks on the tfrl package itself: it imports, lazily, from the tested sources."""

import os
import re
import subprocess
import sys

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


def test_ppo_training_imports_neither_tfp_nor_tf_keras():
    # The action distributions own their math: tensorflow_probability (and the tf_keras
    # it loads, ~45 MB and ~0.45 s of start-up) is imported only by `dist.to_tfp()`.
    # Fresh interpreter: this process imported TFP in the test helpers.
    code = (
        "import sys\n"
        "from tfrl.algorithms.ppo import PPOConfig\n"
        "algo = (PPOConfig().environment('CartPole-v1').rollouts(num_rollout_workers=0,\n"
        "          rollout_fragment_length=64)\n"
        "        .training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=2)\n"
        "        .debugging(seed=0)).build()\n"
        "result = algo.train()\n"
        "algo.stop()\n"
        "print(result['timesteps_total'],"
        " sorted({m.split('.')[0] for m in sys.modules} & {'tensorflow_probability', 'tf_keras'}))"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=REPO_ROOT, env=env).stdout.splitlines()
    assert out[-1] == "64 []"


def test_version_is_pep440():
    # e.g. "0.1.0.dev0", "0.2.0rc1", "1.0.0"; setup.py reads it from tfrl/__init__.py.
    pattern = r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?"
    assert re.fullmatch(pattern, tfrl.__version__)


def test_env_package_exports_rllib_names_lazily():
    import tfrl.env

    for name in tfrl.env.__all__:
        assert getattr(tfrl.env, name).__name__ == name
    from tfrl.env.registry import get_env_creator
    from tfrl.tune.registry import register_env as tune_register_env

    # The Tune-style name registers with tfrl's own registry (and Tune's, when Ray is
    # installed), so `env="name"` in any config finds it.
    def creator(config):
        return ("made", config)

    tune_register_env("PackageTestEnv-v0", creator)
    assert get_env_creator("PackageTestEnv-v0")({"a": 1}) == ("made", {"a": 1})
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        tfrl.env.Nope
