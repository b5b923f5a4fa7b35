"""QMIX (RLlib's `ray.rllib.algorithms.qmix`): monotonic mixing of per-agent Q-values for
grouped cooperating agents, each valued by a shared recurrent (GRU) agent network; VDN's sum
and independent Q-learning as its other mixers."""

from tfrl.utils.lazy_exports import lazy_exports

# Lazy (imported on first use): the CLI reads a config class without TensorFlow.
__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.algorithms.qmix.qmix_tf_policy": ["QMixTFPolicy"],
    "tfrl.algorithms.qmix.qmix": ["DEFAULT_CONFIG", "QMix", "QMixConfig", "QMixTrainer"],
})
