"""Models, preprocessors and action distributions.

Names are imported lazily, so `import tfrl.models` does not import TensorFlow:
`from tfrl.models import ModelCatalog` works as `from ray.rllib.models import ModelCatalog`.
"""

import importlib

_EXPORTS = {
    "MODEL_DEFAULTS": "tfrl.models.catalog",
    "ModelCatalog": "tfrl.models.catalog",
    "Preprocessor": "tfrl.models.preprocessors",
    "get_preprocessor": "tfrl.models.preprocessors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tfrl.models' has no attribute {name!r}")
