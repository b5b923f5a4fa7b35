"""The action distribution of Dict and Tuple action spaces."""

from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import tensorflow as tf
import tree

from tfrl.models.tf.action_dist_base import TFActionDistribution, check_same_type, import_tfp


class MultiActionDistribution(TFActionDistribution):
    """Distribution over a Dict or Tuple action space.

    Two ways to give the children: one per top-level sub-space (what
    `ModelCatalog.get_action_dist` builds; a nested Dict/Tuple sub-space then has a
    nested `MultiActionDistribution`), or, as RLlib does, one per leaf of the nested
    space in `tree.flatten` order (dict keys sorted), none of them a
    `MultiActionDistribution`. The leaf form is used when the space is nested, the
    number of children equals its number of leaves and none of them is a
    `MultiActionDistribution`.

    Samples (and the `x` of `logp`) are nested like the space: dicts for Dict spaces,
    tuples for Tuple spaces. `logp` also accepts the actions flattened into one tensor
    `[..., sum(flat_sizes)]` (children in order; a categorical's action may be `[..., 1]`)
    or a flat list of the children's actions. `logp`, `entropy` and `kl` are sums over
    the children.

    Args:
        inputs: The children's inputs concatenated, `[..., sum(input_lens)]`.
        model: The model that produced `inputs`.
        action_space: The Dict or Tuple action space.
        child_distributions: One distribution class (or partial) per sub-space or leaf.
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
        if len(child_distributions) != len(input_lens):
            raise ValueError(
                f"MultiActionDistribution needs one input length per child distribution. "
                f"Received: {len(child_distributions)} children, input_lens={list(input_lens)}."
            )
        self.action_space = action_space
        self.keys = (
            list(action_space.spaces) if isinstance(action_space, gym.spaces.Dict)
            else list(range(len(action_space.spaces)))
        )
        self.sub_spaces = list(action_space.spaces.values()) if isinstance(
            action_space, gym.spaces.Dict) else list(action_space.spaces)
        split = tf.split(self.inputs, [int(n) for n in input_lens], axis=-1)
        self.children = [cls(part, model) for cls, part in zip(child_distributions, split)]
        structure = _space_structure(action_space)
        leaves = tree.flatten(structure)
        nested = any(isinstance(sub, (gym.spaces.Dict, gym.spaces.Tuple))
                     for sub in self.sub_spaces)
        self._leaf_structure = structure if (
            nested and len(leaves) == len(self.children)
            and not any(isinstance(c, MultiActionDistribution) for c in self.children)
        ) else None
        if self._leaf_structure is None and len(self.children) != len(self.sub_spaces):
            raise ValueError(
                f"MultiActionDistribution needs one child distribution per sub-space "
                f"({len(self.sub_spaces)}) or per leaf ({len(leaves)}) of {action_space}. "
                f"Received: {len(self.children)} children."
            )
        leaf_spaces = leaves if self._leaf_structure is not None else self.sub_spaces
        self.flat_sizes = [_flat_size(child, space)
                           for child, space in zip(self.children, leaf_spaces)]
        self._child_spaces = leaf_spaces

    def _nest(self, values):
        if self._leaf_structure is not None:
            return tree.unflatten_as(self._leaf_structure, list(values))
        if isinstance(self.action_space, gym.spaces.Dict):
            return dict(zip(self.keys, values))
        return tuple(values)

    def _unnest(self, x):
        if isinstance(x, dict) or (isinstance(x, (tuple, list)) and (
                self._leaf_structure is None or len(x) != len(self.children)
                or any(isinstance(part, (dict, tuple, list)) for part in x))):
            parts = (tree.flatten(x) if self._leaf_structure is not None
                     else [x[k] for k in self.keys])
        elif isinstance(x, (tuple, list)):
            parts = list(x)  # already one action per child
        else:
            x = tf.convert_to_tensor(x)  # [..., sum(flat_sizes)]
            parts = tf.split(x, self.flat_sizes, axis=-1)
            parts = [_unflatten_part(part, space, child)
                     for part, space, child in zip(parts, self._child_spaces, self.children)]
        return [_squeeze_categorical(part, child) for part, child in zip(parts, self.children)]

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


def _space_structure(space: gym.Space) -> Any:
    """The nesting of a space: dicts for Dict, tuples for Tuple, the space at leaves."""
    if isinstance(space, gym.spaces.Dict):
        return {k: _space_structure(s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_space_structure(s) for s in space.spaces)
    return space


def _flat_size(child: TFActionDistribution, space: gym.Space) -> int:
    """Scalars one action of `child` occupies in a flattened action tensor."""
    if isinstance(child, MultiActionDistribution):
        return sum(child.flat_sizes)
    if child.scalar_action:
        return 1
    sample = child.deterministic_sample()
    lead = child.inputs.shape.rank - 1
    return int(np.prod(sample.shape[lead:])) if sample.shape.rank > lead else 1


def _unflatten_part(part: tf.Tensor, space: gym.Space, child: TFActionDistribution) -> Any:
    """A child's slice `[..., size]` of a flattened action tensor, in its own layout."""
    if isinstance(child, MultiActionDistribution):
        return part
    if isinstance(space, gym.spaces.Box) and len(space.shape) > 1 and \
            int(np.prod(space.shape)) == part.shape[-1]:
        return tf.reshape(part, tf.concat([tf.shape(part)[:-1], space.shape], 0))
    return part


def _squeeze_categorical(part: Any, child: TFActionDistribution) -> Any:
    """A categorical's actions `[..., 1]` (a flattened layout) become `[...]`."""
    if not child.scalar_action:
        return part
    part = tf.convert_to_tensor(part)
    if part.shape.rank == child.inputs.shape.rank and part.shape[-1] == 1:
        part = part[..., 0]
    return part


def flat_action_size(space: gym.Space) -> int:
    """Number of scalars an action of `space` occupies when flattened (Discrete: 1)."""
    if isinstance(space, gym.spaces.Discrete):
        return 1
    if isinstance(space, gym.spaces.Dict):
        return sum(flat_action_size(s) for s in space.spaces.values())
    if isinstance(space, gym.spaces.Tuple):
        return sum(flat_action_size(s) for s in space.spaces)
    return int(np.prod(space.shape))
