"""The action distribution of Dict and Tuple action spaces."""

from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import tensorflow as tf

from tfrl.models.tf.action_dist_base import TFActionDistribution, check_same_type, import_tfp


class MultiActionDistribution(TFActionDistribution):
    """Distribution over a Dict or Tuple action space, one child per sub-space.

    Samples (and the `x` of `logp`) are nested like the space: a dict for Dict spaces
    (the space's key order), a tuple for Tuple spaces. `logp` also accepts the actions
    flattened into one tensor `[..., sum(flat_sizes)]` (children in the same order).
    `logp`, `entropy` and `kl` are sums over the children.

    Args:
        inputs: The children's inputs concatenated, `[..., sum(input_lens)]`.
        model: The model that produced `inputs`.
        action_space: The Dict or Tuple action space.
        child_distributions: One distribution class (or partial) per sub-space.
        input_lens: Number of inputs of each child.
    """

    def __init__(
        self,
        inputs: Any,
        model: Any = None,
        *,
        action_space: gym.Space,
        child_distributions: Sequence[Any],
        input_lens: Sequence[int],
    ):
        super().__init__(inputs, model)
        if sum(input_lens) != self.inputs.shape[-1]:
            raise ValueError(
                f"MultiActionDistribution needs sum(input_lens)={sum(input_lens)} inputs. "
                f"Received: inputs of shape {self.inputs.shape}."
            )
        self.action_space = action_space
        self.keys = (
            list(action_space.spaces) if isinstance(action_space, gym.spaces.Dict)
            else list(range(len(action_space.spaces)))
        )
        self.sub_spaces = list(action_space.spaces.values()) if isinstance(
            action_space, gym.spaces.Dict) else list(action_space.spaces)
        self.flat_sizes = [flat_action_size(s) for s in self.sub_spaces]
        split = tf.split(self.inputs, [int(n) for n in input_lens], axis=-1)
        self.children = [cls(part, model) for cls, part in zip(child_distributions, split)]

    def _nest(self, values):
        if isinstance(self.action_space, gym.spaces.Dict):
            return dict(zip(self.keys, values))
        return tuple(values)

    def _unnest(self, x):
        if isinstance(x, (dict, tuple, list)):
            return [x[k] for k in self.keys]
        x = tf.convert_to_tensor(x)  # [..., sum(flat_sizes)]
        parts = tf.split(x, self.flat_sizes, axis=-1)
        out = []
        for part, space in zip(parts, self.sub_spaces):
            if isinstance(space, gym.spaces.Discrete):
                part = part[..., 0]
            elif isinstance(space, gym.spaces.Box):
                part = tf.reshape(part, tf.concat([tf.shape(part)[:-1], space.shape], 0))
            out.append(part)
        return out

    def _child_seeds(self, seed):
        """One seed per child: None, or independent seeds split from `seed`."""
        if seed is None:
            return [None] * len(self.children)
        return tf.unstack(tf.random.experimental.stateless_split(seed, len(self.children)))

    def _sample_with_logp(self, seed=None):
        pairs = [child._sample_with_logp(s)
                 for child, s in zip(self.children, self._child_seeds(seed))]
        return self._nest([a for a, _ in pairs]), tf.add_n([lp for _, lp in pairs])

    def _sample(self, seed=None):
        return self._nest([child._sample(s)
                           for child, s in zip(self.children, self._child_seeds(seed))])

    def deterministic_sample(self):
        return self._nest([child.deterministic_sample() for child in self.children])

    def logp(self, x):
        parts = self._unnest(x)
        return tf.add_n([child.logp(part) for child, part in zip(self.children, parts)])

    def entropy(self):
        return tf.add_n([child.entropy() for child in self.children])

    def kl(self, other):
        check_same_type(self, other)
        return tf.add_n([c.kl(o) for c, o in zip(self.children, other.children)])

    def multi_entropy(self) -> Any:
        """The children's entropies, nested like the action space."""
        return self._nest([child.entropy() for child in self.children])

    def multi_kl(self, other: "MultiActionDistribution") -> Any:
        """The children's KL divergences to `other`'s, nested like the action space."""
        check_same_type(self, other)
        return self._nest([c.kl(o) for c, o in zip(self.children, other.children)])

    def to_tfp(self):
        """A TFP joint distribution of the children's `to_tfp()`, nested like the space.

        Its `log_prob` takes the nested actions (not the flattened tensor).
        """
        tfd = import_tfp().distributions
        children = [child.to_tfp() for child in self.children]
        if isinstance(self.action_space, gym.spaces.Dict):
            return tfd.JointDistributionNamed(dict(zip(self.keys, children)))
        return tfd.JointDistributionSequential(children)

    @staticmethod
    def required_model_output_shape(action_space, model_config):
        raise ValueError(
            "MultiActionDistribution's output size depends on its children; take "
            "num_outputs from ModelCatalog.get_action_dist(action_space)."
        )


def flat_action_size(space: gym.Space) -> int:
    """Number of scalars an action of `space` occupies when flattened (Discrete: 1)."""
    if isinstance(space, gym.spaces.Discrete):
        return 1
    if isinstance(space, gym.spaces.Dict):
        return sum(flat_action_size(s) for s in space.spaces.values())
    if isinstance(space, gym.spaces.Tuple):
        return sum(flat_action_size(s) for s in space.spaces)
    return int(np.prod(space.shape))
