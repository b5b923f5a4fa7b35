"""The catalog's structural preprocessors as TensorFlow ops, for exported models.

A policy sees preprocessed observations (a Dict flattened into one vector, a Discrete
value one-hot encoded; see `tfrl.models.preprocessors`), while a deployed model should
take what the env emits. `graph_preprocessor(space)` gives, for the spaces whose
preprocessing is structure only (Dict, Tuple, Discrete, MultiDiscrete, and Boxes inside
them), a function computing in the graph what `transform_batch` computes in numpy;
None for other spaces (a Box passes through unchanged; pixel preprocessors resize).
"""

from typing import Any, Callable, Optional

import gymnasium as gym
import numpy as np
import tensorflow as tf

from tfrl.models.preprocessors import (DictFlatteningPreprocessor, NoPreprocessor,
                                       OneHotPreprocessor, Preprocessor,
                                       TupleFlatteningPreprocessor, get_preprocessor)


def graph_preprocessor(space: gym.Space) -> Optional[Callable[[Any], tf.Tensor]]:
    """`fn(batch) -> [B, size] float32` for a Dict, Tuple, Discrete or MultiDiscrete
    `space` (its batch: a structure of `[B, ...]` tensors like the space), or None if
    its preprocessor is not one of the structural ones."""
    if not isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple, gym.spaces.Discrete,
                              gym.spaces.MultiDiscrete)):
        return None
    prep = get_preprocessor(space)(space, None)
    if not _supported(prep):
        return None
    return lambda batch: _transform(space, prep, batch)


def _supported(prep: Preprocessor) -> bool:
    if isinstance(prep, (DictFlatteningPreprocessor, TupleFlatteningPreprocessor)):
        return all(_supported(child) for _, child in prep.preprocessors)
    return type(prep) in (NoPreprocessor, OneHotPreprocessor)


def _transform(space: gym.Space, prep: Preprocessor, batch: Any) -> tf.Tensor:
    if isinstance(prep, (DictFlatteningPreprocessor, TupleFlatteningPreprocessor)):
        parts = [tf.reshape(_transform(space[key], child, batch[key]), [-1, child.size])
                 for key, child in prep.preprocessors]  # [B, size_i] each
        return tf.concat(parts, axis=-1) if len(parts) > 1 else parts[0]
    if isinstance(prep, OneHotPreprocessor):
        values = tf.cast(batch, tf.int64)
        if isinstance(space, gym.spaces.Discrete):
            return tf.one_hot(values - int(space.start), int(space.n), dtype=tf.float32)
        nvec = space.nvec.reshape(-1)
        start = np.asarray(space.start).reshape(-1)
        values = tf.reshape(values, [-1, len(nvec)])  # C order, as the numpy preprocessor
        return tf.concat([tf.one_hot(values[:, j] - int(start[j]), int(n), dtype=tf.float32)
                          for j, n in enumerate(nvec)], axis=-1)  # [B, sum(nvec)]
    return tf.cast(batch, tf.float32)
