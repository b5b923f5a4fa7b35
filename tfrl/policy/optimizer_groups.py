"""OptimizerGroups: one Keras optimizer per group of variables, used as one optimizer.

Actor-critics (TD3, DDPG, SAC) train their actor and their critics with separate
optimizers (`actor_lr`, `critic_lr`). A TFPolicy has one `optimizer`; this is it:
`apply_gradients` hands each (gradient, variable) pair to the optimizer owning the
variable (each keeps its own slots and `iterations`, so Adam's bias correction counts
that group's updates), `variables` lists every optimizer's variables (group order), and
it is trackable (`tf.train.Checkpoint(optimizer=...)` saves every group's slots).

Example:
    >>> import keras, tensorflow as tf
    >>> a, b = tf.Variable([1.0]), tf.Variable([1.0])
    >>> opt = OptimizerGroups({"actor": (keras.optimizers.SGD(0.5), [a]),
    ...                        "critic": (keras.optimizers.SGD(0.1), [b])})
    >>> opt.apply_gradients([(tf.constant([1.0]), a), (tf.constant([1.0]), b)])
    >>> float(a.numpy()[0]), round(float(b.numpy()[0]), 6)
    (0.5, 0.9)
"""

from typing import Any, Dict, Iterable, List, Sequence, Tuple

import keras
import tensorflow as tf

__all__ = ["OptimizerGroups"]


class OptimizerGroups(tf.Module):
    """Several optimizers, each owning a group of variables (see the module docstring).

    Args:
        groups: name -> (optimizer, the variables it updates); the groups must not share
            a variable.

    Raises:
        ValueError: For a variable in two groups.
    """

    def __init__(self, groups: Dict[str, Tuple[keras.optimizers.Optimizer, Sequence[Any]]]):
        super().__init__(name="optimizer_groups")
        self.names = list(groups)
        self.optimizers = [groups[name][0] for name in self.names]
        self._group_variables = [list(groups[name][1]) for name in self.names]
        self._owner: Dict[int, int] = {}
        for index, variables in enumerate(self._group_variables):
            for variable in variables:
                if id(variable) in self._owner:
                    raise ValueError(
                        f"OptimizerGroups: variable {variable.name} is in groups "
                        f"{self.names[self._owner[id(variable)]]!r} and "
                        f"{self.names[index]!r}; each variable needs exactly one optimizer.")
                self._owner[id(variable)] = index

    def __getitem__(self, name: str) -> keras.optimizers.Optimizer:
        """The optimizer of group `name`."""
        return self.optimizers[self.names.index(name)]

    def build(self, variables: Iterable[Any]) -> None:
        """Builds every optimizer on its group's variables.

        Raises:
            ValueError: If one of `variables` belongs to no group.
        """
        unknown = [v.name for v in variables if id(v) not in self._owner]
        if unknown:
            raise ValueError(f"OptimizerGroups.build(): variables {unknown} belong to no "
                             f"group of {self.names}; name each variable's optimizer.")
        for optimizer, group in zip(self.optimizers, self._group_variables):
            optimizer.build(group)

    @property
    def built(self) -> bool:
        return all(getattr(optimizer, "built", True) for optimizer in self.optimizers)

    @property
    def variables(self) -> List[Any]:  # type: ignore[override]
        """Every optimizer's variables, group by group."""
        return [v for optimizer in self.optimizers for v in optimizer.variables]

    def apply_gradients(self, grads_and_vars: Iterable[Tuple[Any, Any]]) -> None:
        """Applies each pair with its variable's optimizer (a group without pairs is not
        stepped).

        Raises:
            ValueError: For a variable of no group.
        """
        pairs: List[List[Tuple[Any, Any]]] = [[] for _ in self.optimizers]
        for grad, variable in grads_and_vars:
            index = self._owner.get(id(variable))
            if index is None:
                raise ValueError(f"OptimizerGroups.apply_gradients(): variable "
                                 f"{variable.name} belongs to no group of {self.names}.")
            pairs[index].append((grad, variable))
        for optimizer, group_pairs in zip(self.optimizers, pairs):
            if group_pairs:
                optimizer.apply_gradients(group_pairs)
