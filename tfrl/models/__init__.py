"""Models, preprocessors and action distributions.

Names are imported lazily, so `import tfrl.models` does not import TensorFlow:
`from tfrl.models import ModelCatalog` works as `from ray.rllib.models import ModelCatalog`.
"""

from tfrl.utils.lazy_exports import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.models.catalog": ["MODEL_DEFAULTS", "ModelCatalog"],
    "tfrl.models.preprocessors": ["Preprocessor", "get_preprocessor"],
})
