"""Every registered algorithm, trained on a small Discrete and Box env: `save()` /
`restore()` brings back its policy's state bit for bit and training continues exactly as
without the interruption; its exported SavedModel acts like its live policy (checked on
the restored algorithm, to build and train one algorithm less)."""

import numpy as np
import pytest
import tensorflow as tf

from conformance_helpers import SUPPORTED, assert_same_state, make_algorithm, trace
from conformance_helpers import without_graph_optimizer  # noqa: F401 (autouse)

pytestmark = pytest.mark.parametrize("algo,space", SUPPORTED)


def test_restore_continues_exactly_and_the_export_acts_like_the_policy(algo, space, tmp_path):
    algorithm = make_algorithm(algo, space)
    algorithm.train()
    path = algorithm.save(str(tmp_path))
    saved_state = algorithm.get_policy().get_state()
    uninterrupted = [trace(algorithm.train()) for _ in range(2)]
    final_state = algorithm.get_policy().get_state()
    algorithm.stop()

    # Built with another seed (other weights, sampling and shuffling generators): all of
    # it comes from the checkpoint.
    restored = make_algorithm(algo, space, seed=123)
    restored.restore(path)
    assert restored.iteration == 1
    assert_same_state(restored.get_policy().get_state(), saved_state)
    assert [trace(restored.train()) for _ in range(2)] == uninterrupted
    assert_same_state(restored.get_policy().get_state(), final_state)
    assert_exports_its_live_actions(restored, tmp_path / "model")
    restored.stop()


def assert_exports_its_live_actions(algorithm, export_dir):
    """The algorithm's exported SavedModel returns its policy's deterministic actions."""
    algorithm.export_policy_model(str(export_dir))
    policy = algorithm.get_policy()
    obs = np.random.default_rng(0).uniform(-1.0, 1.0, (5,) + policy.observation_space.shape
                                           ).astype(np.float32)
    actions, _, extras = policy.compute_actions(obs, explore=False)
    out = tf.saved_model.load(str(export_dir)).signatures["deterministic_action"](
        obs=tf.constant(obs))
    np.testing.assert_allclose(out["actions"].numpy(), actions, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["vf_preds"].numpy(), extras["vf_preds"], rtol=1e-5,
                               atol=1e-6)
