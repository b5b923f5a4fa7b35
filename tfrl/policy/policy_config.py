"""PolicyConfig: the keys a TFPolicy reads and their defaults; FrozenConfig: `policy.config`.

`PolicyConfig` is the one place these defaults are written down. `AlgorithmConfig`
extends it (every algorithm config is a policy config plus the keys of workers,
execution and reporting), and an algorithm's policy class names its algorithm's config
class (`TFPolicy.config_class`), so a policy built from a partial dict gets the
algorithm's defaults for the rest:

    >>> PolicyConfig().to_dict()["num_sgd_iter"], PolicyConfig(lr=0.5).to_dict()["lr"]
    (1, 0.5)

A policy's `config` is a `FrozenConfig`: a dict that cannot be changed after the policy
is built, so no component changes what a policy learns with behind its back (learning
settings that vary per call are arguments of `learn_on_batch`).

    >>> config = FrozenConfig({"lr": 0.1})
    >>> config["lr"], dict(config)
    (0.1, {'lr': 0.1})
    >>> config["lr"] = 0.2
    Traceback (most recent call last):
    ...
    TypeError: policy.config is read-only (it was fixed when the policy was built); cannot set 'lr'. Build the policy with the config you want; pass per-call learning settings to learn_on_batch(samples, num_sgd_iter=..., sgd_minibatch_size=...).
"""

import copy
import dataclasses
from typing import Any, ClassVar, Dict, NoReturn, Optional

from tfrl.policy.nonfinite import NONFINITE_UPDATES
from tfrl.utils.config_values import (
    AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, OneOf, check_fields, merged_ranges)


@dataclasses.dataclass(frozen=True)
class PolicyConfig:
    """The keys `TFPolicy` reads (RLlib's names), with their defaults.

    Attributes:
        explore: Sample actions (True) or act deterministically.
        lr: The optimizer's learning rate.
        grad_clip: Global-norm clipping of the gradients summed over replicas (None:
            off).
        num_sgd_iter: Epochs per `learn_on_batch` (unless the call passes its own).
        sgd_minibatch_size: Rows per minibatch (None or 0: the whole batch; recurrent
            policies count timesteps and minibatch whole sequences).
        shuffle_sequences: A new permutation of the rows (sequences) every epoch.
        learn_input: "in_graph" or "tf_data" (see `tfrl.policy.tf_train_step`).
        seed: Seeds the model's initial weights, minibatch shuffling and sampling.
        num_gpus, _fake_gpus: The devices to learn on (see `tfrl.policy.strategy`).
        learner_workers: The number of processes the learner spans (1: this process
            only). Above 1, a `MultiWorkerMirroredStrategy` over the cluster in the
            `TF_CONFIG` environment variable, which must list that many workers (see
            `tfrl.policy.strategy`).
        inference: "auto", "tf" or "numpy" (see `tfrl.policy.numpy_inference`).
        nonfinite_updates: What `learn_on_batch` does with an optimizer step whose
            loss or global gradient norm is NaN or inf (the step is never applied):
            "raise" stops the call there and raises `NonFiniteUpdateError` (weights and
            optimizer state as before that step); "skip" skips such steps, applies the
            finite ones and counts the skipped ones in the learner stat
            `num_nonfinite_updates_skipped`.
        jit_compile: tfrl extension (not in RLlib). True compiles each replica's loss
            and gradient computation with XLA (`tf.function(jit_compile=True)`) inside
            the compiled learning phase, which stays one call per phase; False (the
            default) leaves it to TensorFlow's graph executor. Numerics differ from
            False at float32 rounding level; ops XLA cannot compile on the device
            (e.g. string ops) make the first `learn_on_batch` raise an error naming
            them (see `tfrl.policy.tf_train_step`).
        model: The model config for the catalog.

    Every field's value is checked on construction against its annotation and the
    range in `_RANGES` (subclasses add their own table; see
    `tfrl.utils.config_values`).
    """

    # Allowed ranges of the numeric fields (field name -> Bound); the types come from
    # the annotations.
    _RANGES: ClassVar[Dict[str, Any]] = {
        "lr": POSITIVE, "grad_clip": POSITIVE, "num_sgd_iter": AT_LEAST_ONE,
        "sgd_minibatch_size": NON_NEGATIVE, "seed": NON_NEGATIVE, "num_gpus": NON_NEGATIVE,
        "learner_workers": AT_LEAST_ONE,
        "learn_input": OneOf(("in_graph", "tf_data")), "nonfinite_updates": OneOf(NONFINITE_UPDATES),
    }

    explore: bool = True
    lr: float = 1e-4
    grad_clip: Optional[float] = None
    num_sgd_iter: int = 1
    sgd_minibatch_size: Optional[int] = None
    shuffle_sequences: bool = True
    learn_input: str = "in_graph"
    seed: Optional[int] = None
    num_gpus: float = 0
    _fake_gpus: bool = False
    learner_workers: int = 1
    inference: str = "auto"
    nonfinite_updates: str = "raise"
    jit_compile: bool = False
    model: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Checks each field's type and range (called on construction).

        Raises:
            tfrl.utils.config_values.InvalidConfigValueError: A `ValueError` naming the
                key, the value received and what is allowed.
        """
        check_fields(self, merged_ranges(type(self)), self._field_key)

    @staticmethod
    def _field_key(name: str) -> str:
        """The key of field `name` in config dicts (and error messages)."""
        return name

    def to_dict(self) -> Dict[str, Any]:
        """The config as a flat dict (subdicts and lists copied)."""
        return {f.name: copy.copy(getattr(self, f.name)) for f in dataclasses.fields(self)}



def policy_default(key: str) -> Any:
    """`PolicyConfig`'s default of `key`, for code that reads a config dict which may
    lack it (e.g. `make_strategy(config)` before a policy has filled its defaults in).

        >>> policy_default("num_gpus"), policy_default("jit_compile")
        (0, False)

    Raises:
        KeyError: For a key that is not a `PolicyConfig` field (naming the key).
    """
    for field in dataclasses.fields(PolicyConfig):
        if field.name == key:
            if field.default is not dataclasses.MISSING:
                return field.default
            return field.default_factory()  # type: ignore[misc]
    raise KeyError(f"{key!r} is not a PolicyConfig key; see PolicyConfig for the keys.")

class FrozenConfig(dict):
    """A read-only config dict: reading works as on a dict; every change raises.

    `policy.config["lr"]`, `policy.config.get("model")`, `dict(policy.config)` and
    `{**policy.config, ...}` work as in RLlib; assignment, deletion, `update`, `pop`,
    `setdefault` and `clear` raise a `TypeError` that says why.
    """

    __slots__ = ()

    def _refuse(self, what: str) -> NoReturn:
        raise TypeError(
            f"policy.config is read-only (it was fixed when the policy was built); cannot "
            f"{what}. Build the policy with the config you want; pass per-call learning "
            "settings to learn_on_batch(samples, num_sgd_iter=..., sgd_minibatch_size=...).")

    def __setitem__(self, key: Any, value: Any) -> NoReturn:
        self._refuse(f"set {key!r}")

    def __delitem__(self, key: Any) -> NoReturn:
        self._refuse(f"delete {key!r}")

    def __ior__(self, other: Any) -> NoReturn:
        self._refuse("update it")

    def update(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("update it")

    def pop(self, *args: Any) -> NoReturn:
        self._refuse(f"pop {args[0]!r}" if args else "pop")

    def popitem(self) -> NoReturn:
        self._refuse("pop an item")

    def setdefault(self, key: Any, default: Any = None) -> NoReturn:
        self._refuse(f"setdefault {key!r}")

    def clear(self) -> NoReturn:
        self._refuse("clear it")

    def copy(self) -> Dict[str, Any]:
        """A plain, mutable copy."""
        return dict(self)

    def __reduce__(self):
        # Pickling and copy.copy/deepcopy rebuild from a plain dict (the default
        # protocol would call __setitem__ on the new object).
        return (type(self), (dict(self),))

    def __repr__(self) -> str:
        return f"FrozenConfig({dict.__repr__(self)})"
