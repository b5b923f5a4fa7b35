"""Every registered algorithm that takes recurrent models (use_lstm), trained on a small
Discrete and Box env: `save()` / `restore()` brings back its policy's state bit for bit
and training continues exactly; its export carries the recurrent state step by step."""

import pytest
import tensorflow as tf

from conformance_helpers import (RECURRENT_MODEL, RECURRENT_SUPPORTED,
                                 assert_exported_states_follow_the_live_policy,
                                 assert_same_state, make_algorithm, trace)

pytestmark = pytest.mark.parametrize("algo,space", RECURRENT_SUPPORTED)


def _saved_recurrent_algorithm(algo, space, tmp_path):
    """A recurrent algorithm trained once and saved; returns (path, its policy state, the
    traces of two more iterations, the final policy state)."""
    algorithm = make_algorithm(algo, space, model=RECURRENT_MODEL)
    assert algorithm.get_policy().is_recurrent()
    algorithm.train()
    path = algorithm.save(str(tmp_path))
    saved_state = algorithm.get_policy().get_state()
    uninterrupted = [trace(algorithm.train()) for _ in range(2)]
    final_state = algorithm.get_policy().get_state()
    algorithm.stop()
    return path, saved_state, uninterrupted, final_state


def test_recurrent_restore_brings_back_the_policy_and_the_export_carries_state(algo, space,
                                                                             tmp_path):
    path, saved_state, _, _ = _saved_recurrent_algorithm(algo, space, tmp_path)
    restored = make_algorithm(algo, space, model=RECURRENT_MODEL)
    restored.restore(path)
    assert restored.iteration == 1
    assert_same_state(restored.get_policy().get_state(), saved_state)
    result = restored.train()  # training goes on from the restored state
    assert result["timesteps_total"] > 0 and restored.iteration == 2
    restored.export_policy_model(str(tmp_path / "model"))
    assert_exported_states_follow_the_live_policy(
        restored.get_policy(), tf.saved_model.load(str(tmp_path / "model")))
    restored.stop()


def test_recurrent_restore_continues_exactly(algo, space, tmp_path):
    path, _, uninterrupted, final_state = _saved_recurrent_algorithm(algo, space, tmp_path)
    restored = make_algorithm(algo, space, model=RECURRENT_MODEL)
    restored.restore(path)
    assert [trace(restored.train()) for _ in range(2)] == uninterrupted
    assert_same_state(restored.get_policy().get_state(), final_state)
    restored.stop()
