"""Every registered algorithm that takes recurrent models (use_lstm), trained on a small
Discrete or Box env (one each, `RECURRENT_ONE_SPACE`): `save()` / `restore()` brings
back its policy's state bit for bit and training continues exactly; its export carries
the recurrent state step by step (checked on the restored algorithm, to build and train
one algorithm less)."""

import pytest
import tensorflow as tf

from conformance_helpers import (RECURRENT_MODEL, RECURRENT_SUPPORTED,
                                 assert_exported_states_follow_the_live_policy,
                                 assert_same_state, make_algorithm, trace)
from conformance_helpers import without_graph_optimizer  # noqa: F401 (autouse)

pytestmark = pytest.mark.parametrize("algo,space", RECURRENT_SUPPORTED)


def test_recurrent_restore_continues_exactly_and_the_export_carries_state(algo, space,
                                                                         tmp_path):
    # One algorithm trained and saved, one restored (each case builds, traces and trains
    # two recurrent algorithms, not four).
    algorithm = make_algorithm(algo, space, model=RECURRENT_MODEL)
    assert algorithm.get_policy().is_recurrent()
    algorithm.train()
    path = algorithm.save(str(tmp_path))
    saved_state = algorithm.get_policy().get_state()
    uninterrupted = [trace(algorithm.train()) for _ in range(2)]
    final_state = algorithm.get_policy().get_state()
    algorithm.stop()

    # Built with another seed (other weights, sampling and shuffling generators): all of
    # it comes from the checkpoint.
    restored = make_algorithm(algo, space, model=RECURRENT_MODEL, seed=123)
    restored.restore(path)
    assert restored.iteration == 1
    assert_same_state(restored.get_policy().get_state(), saved_state)
    # Training goes on from the restored state exactly as without the interruption.
    assert [trace(restored.train()) for _ in range(2)] == uninterrupted
    assert restored.iteration == 3 and uninterrupted[-1][0] > 0
    assert_same_state(restored.get_policy().get_state(), final_state)
    restored.export_policy_model(str(tmp_path / "model"))
    assert_exported_states_follow_the_live_policy(
        restored.get_policy(), tf.saved_model.load(str(tmp_path / "model")))
    restored.stop()
