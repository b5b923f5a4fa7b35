"""A module fixture that turns Grappler (TensorFlow's graph optimizer) off, for test
modules dominated by building and tracing compiled functions."""

import pytest
import tensorflow as tf


@pytest.fixture(scope="module", autouse=True)
def without_graph_optimizer():
    """Grappler off for the module that imports this fixture: its passes over the first
    call of each compiled function took about a third of the conformance modules' time.
    For modules that compare a policy with itself (strategies, restores, exports) or with
    numpy, never with graph-optimized numbers; the learning tests, the digests of
    `conformance/test_training_step_digests.py` and every other test keep TensorFlow's
    defaults."""
    options = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    yield
    tf.config.optimizer.set_experimental_options(
        {"disable_meta_optimizer": options.get("disable_meta_optimizer", False)})
