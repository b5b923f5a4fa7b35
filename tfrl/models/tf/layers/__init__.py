"""Keras layers for tfrl's models (RLlib's `ray.rllib.models.tf.layers`)."""

from tfrl.models.tf.layers.noisy_layer import NoisyLayer

__all__ = ["NoisyLayer"]
