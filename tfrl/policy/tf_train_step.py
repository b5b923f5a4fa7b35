"""TrainStep: the compiled learning functions of a TFPolicy.

Three compiled functions, each traced once:

- `learn`: all epochs and minibatches of one `learn_on_batch` call, in one call. By
  default (`learn_input="in_graph"`) the whole batch goes in as tensors (batch axis
  unknown, so any batch size reuses the trace); the graph draws one seeded permutation
  per epoch, gathers each minibatch and runs the replica step (loss, gradients,
  optimizer update) under `strategy.run` in a `tf.range` loop; every replica takes its
  contiguous share of the minibatch. With `learn_input="tf_data"` the batch becomes a
  `to_dataset` pipeline distributed with `strategy.experimental_distribute_dataset`;
  same minibatches (whole sequences, padded to `max_seq_len`, for recurrent policies),
  but building the pipeline and its iterator cost 130-190 ms per call on this machine
  against 4-12 ms for the whole in-graph update (bench_policy.py).
  Both inputs follow one minibatch rule (see `TrainStep.learn`): per epoch a new
  permutation, `floor(units / minibatch)` full minibatches, the remainder of that
  epoch's permutation dropped; stats are the mean over every step of every epoch.
  This is the only minibatch SGD loop in tfrl: `TrainOneStep`, `MultiGPUTrainOneStep`,
  the learner threads and `RolloutWorker.sample_and_learn` all pass their epochs and
  minibatch size to `learn_on_batch`.

  The non-finite guard: each step checks its loss and global gradient norm (summed over
  replicas, so they agree) with `tf.math.is_finite` and applies the optimizer update
  under a `tf.cond`, so a NaN/inf never reaches the weights or the optimizer's slots, nor
  the learner statistics that persist across updates (`TFPolicy.commit_step_stats` runs
  in the same branch as the update).
  `config["nonfinite_updates"]` (see `PolicyConfig`): "raise" stops the loop at such a
  step and `learn` raises `NonFiniteUpdateError` naming the policy, the stats and the
  step; "skip" goes on and reports `num_nonfinite_updates_skipped` (stats are then the
  means over the applied steps).
- `gradients`: the loss gradients on a whole batch, each replica taking its contiguous
  share of the rows, summed over replicas.
- `apply`: an optimizer update from given gradients.

The batch reaches them through `TrainColumns` (checked numpy columns of fixed specs).

XLA (`config["jit_compile"]`, a tfrl extension; default False): each replica's loss and
gradients (the model's forward and backward pass, the bulk of a step's work) run as one
`tf.function(jit_compile=True)` called from the replica step, so `learn` stays one call
per learning phase and the guard, the all-reduces of the optimizer update and the
update itself stay in the outer graph (XLA on CPU does not compile the cross-replica
`tf.cond` around them). An op XLA cannot compile (string ops, some tfp samplers) fails
the first `learn_on_batch` with an `XlaCompileError` naming the op and the fix
(`jit_compile=False`); nothing falls back silently.
"""

import logging
import re
import threading
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
import tree

from tfrl.core.columns import Columns
from tfrl.models.model_defaults import model_setting
from tfrl.policy.dataset import to_dataset
from tfrl.policy.nonfinite import NONFINITE_UPDATES, NonFiniteUpdateError
from tfrl.policy.train_columns import TrainBatch, TrainColumns, autograph_converted

logger = logging.getLogger(__name__)

# The allowed values of `config["jit_compile"]` (see `PolicyConfig`).
JIT_COMPILE_VALUES = (False, True)


class XlaCompileError(ValueError):
    """`jit_compile=True` and XLA could not compile a policy's loss and gradients.

    Attributes:
        ops: The TensorFlow ops XLA named as not compilable (may be empty).
    """

    def __init__(self, policy_name: str, error: Any, replicas: bool = False):
        message = str(getattr(error, "message", error))
        ops = sorted(set(re.findall(r"No registered '(\w+)' OpKernel", message)))
        if replicas:
            what = message
        else:
            what = ("ops XLA cannot compile: " + ", ".join(ops)) if ops else (
                "XLA error: " + (message.splitlines()[0] if message else type(error).__name__))
        super().__init__(
            f"{policy_name}: config['jit_compile']=True, but the loss and gradients cannot "
            f"be compiled with XLA ({what}). Set jit_compile=False for this policy"
            + (", or learn on one replica." if replicas else ", or replace those ops in the loss."))
        self.ops = ops


def _is_xla_compile_error(error: Exception) -> bool:
    message = str(getattr(error, "message", error))
    return ("XLA" in message or "xla" in message) and (
        "unsupported operations" in message or "OpKernel" in message
        or "compil" in message)


# Set (per tracing thread: MirroredStrategy traces each replica in its own thread) while
# the XLA-compiled loss of a policy with several replicas is traced: a cross-replica
# all-reduce cannot run there (see `global_mean`).
_XLA_REPLICA_TRACE = threading.local()


def global_mean(values: tf.Tensor, mask: Optional[tf.Tensor] = None) -> tf.Tensor:
    """This replica's share of the mean of `values` (where `mask`) over all replicas' rows.

    In a replica's XLA-compiled loss (`jit_compile=True` with several replicas) the
    unmasked mean counts `size * replicas` rows (every replica holds as many rows), as
    the all-reduce of the counts would; a masked mean there raises a `ValueError` (its
    count needs an all-reduce, which XLA cannot run inside a replica on CPU).
    """
    values = tf.convert_to_tensor(values)
    if mask is None:
        count = tf.cast(tf.size(values), values.dtype)
        total = tf.reduce_sum(values)
    else:
        mask = tf.cast(mask, values.dtype)
        count = tf.reduce_sum(mask)
        total = tf.reduce_sum(values * mask)
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:
        if getattr(_XLA_REPLICA_TRACE, "policy", None) is not None:
            if mask is not None:
                raise XlaCompileError(
                    _XLA_REPLICA_TRACE.policy,
                    f"a masked global_mean (sequences or padding) under "
                    f"{context.num_replicas_in_sync} replicas needs a cross-replica "
                    "all-reduce of its count, which cannot run inside the XLA-compiled "
                    "replica step on CPU", replicas=True)
            count = count * context.num_replicas_in_sync
        else:
            count = context.all_reduce(tf.distribute.ReduceOp.SUM, tf.stop_gradient(count))
    return total / tf.maximum(count, 1.0)


# Keys of the non-finite guard's entries in the compiled loop's stats (see `_add_step`).
_FINITE = "_guard/finite"  # a step's: 1.0 if its loss and gradients were finite
_GRAD_NORM = "_guard/grad_norm"  # a step's: the global gradient norm
_NUM_FINITE = "_guard/num_finite"  # the loop's: finite (applied) steps
_NUM_BAD = "_guard/num_nonfinite"  # the loop's: non-finite (skipped) steps
_LAST = "_guard/last/"  # + stat: its value at the loop's last step ("raise" mode)
# A replica's real (unpadded) timesteps in its share of a batch of sequences: the weight of
# its stats in the mean over replicas (see `TrainStep._reduce_stats`).
_WEIGHT = "_guard/real_steps"


def _sum_loop(num_steps: tf.Tensor, step_fn, totals: Dict[str, tf.Tensor],
              halt_on_nonfinite: bool, start: int = 0) -> Dict[str, tf.Tensor]:
    """`totals` with `step_fn(i)` for i in [start, num_steps) added in, as one `tf.while_loop`
    (see `_add_step`). With `halt_on_nonfinite`, the loop stops after a non-finite step.

    The totals travel through the loop stacked into one float32 vector when they are
    all scalars (the built-in losses' stats are): every loop variable costs ~0.1 MB of
    memory when TensorFlow instantiates the function, and there are two per statistic.
    The sums are the same element-wise additions.
    """
    keys = sorted(totals)
    packed = all(totals[k].shape.rank == 0 and totals[k].dtype == tf.float32 for k in keys)
    if packed:
        def pack(acc):
            return tf.stack([acc[k] for k in keys])

        def unpack(flat):
            return dict(zip(keys, tf.unstack(flat, num=len(keys))))
    else:  # non-scalar stats: a loop variable per total
        def pack(acc):
            return acc

        def unpack(acc):
            return acc

    def body(i, acc):
        return i + 1, pack(_add_step(unpack(acc), step_fn(i), halt_on_nonfinite))

    def more(i, acc):
        if halt_on_nonfinite:
            num_bad = acc[keys.index(_NUM_BAD)] if packed else acc[_NUM_BAD]
            return tf.logical_and(i < num_steps, num_bad < 0.5)
        return i < num_steps

    _, totals = tf.while_loop(more, body, (tf.zeros_like(num_steps) + start, pack(totals)))
    return unpack(totals)


def _guard_totals(stats: Dict[str, tf.Tensor], halt_on_nonfinite: bool) -> Dict[str, tf.Tensor]:
    """The loop's starting totals (zeros) for steps whose stats look like `stats`."""
    user = {k: v for k, v in stats.items() if not k.startswith("_guard/")}
    totals = {k: tf.zeros_like(v) for k, v in user.items()}
    totals[_NUM_BAD] = tf.constant(0.0)
    if halt_on_nonfinite:
        totals.update({_LAST + k: tf.zeros_like(v) for k, v in user.items()})
        totals[_LAST + "grad_norm"] = tf.constant(0.0)
    else:
        totals[_NUM_FINITE] = tf.constant(0.0)
    return totals


def _add_step(acc: Dict[str, tf.Tensor], stats: Dict[str, tf.Tensor],
              halt_on_nonfinite: bool) -> Dict[str, tf.Tensor]:
    """`acc` with one step's stats added in, and the guard's counts.

    With `halt_on_nonfinite` the loop ends at the first non-finite step (whose stats
    are then the `_LAST` entries; the sums are not used), so the stats are summed as
    they are; else only the finite steps' stats are summed and those steps counted.
    """
    stats = dict(stats)
    finite = stats.pop(_FINITE)  # 1.0 or 0.0
    norm = stats.pop(_GRAD_NORM)
    new = {_NUM_BAD: acc[_NUM_BAD] + (1.0 - finite)}
    if halt_on_nonfinite:
        for key, value in stats.items():
            new[key] = acc[key] + value
            new[_LAST + key] = value
        new[_LAST + "grad_norm"] = norm
    else:
        ok = finite > 0.5
        for key, value in stats.items():
            new[key] = acc[key] + tf.where(ok, value, tf.zeros_like(value))
        new[_NUM_FINITE] = acc[_NUM_FINITE] + finite
    return new


def _means(totals: Dict[str, tf.Tensor], num_steps: tf.Tensor) -> Dict[str, tf.Tensor]:
    """The stats' means over the applied steps (all `num_steps` unless some were
    skipped); the guard entries as they are."""
    count = totals.get(_NUM_FINITE)
    count = tf.cast(num_steps, tf.float32) if count is None else tf.maximum(count, 1.0)
    return {k: (v if k.startswith("_guard/") else v / count) for k, v in totals.items()}


# With `jit_compile`, a minibatch of sequences is padded up to a multiple of this many
# sequences (each padding sequence has length 0: masked out of the loss and the stats):
# XLA compiles the replica step once per input shape, and the number of sequences per
# minibatch follows the batch's episode ends (`sequence_minibatch`).
XLA_SEQUENCE_BUCKET = 4


def _padded_sequences(columns: Dict[str, Any], rows: tf.Tensor) -> Dict[str, Any]:
    """The sequences `rows` of `columns`, then copies of the first with `seq_lens` 0 up to
    a multiple of `XLA_SEQUENCE_BUCKET` sequences."""
    count = tf.shape(rows)[0]
    extra = (-count) % XLA_SEQUENCE_BUCKET
    padded = tf.concat([rows, tf.fill([extra], rows[0])], axis=0)
    batch = tree.map_structure(lambda c: tf.gather(c, padded), columns)
    real = tf.sequence_mask(count, count + extra)
    seq_lens = batch[Columns.SEQ_LENS]
    batch[Columns.SEQ_LENS] = tf.where(real, seq_lens, tf.zeros_like(seq_lens))
    return batch


def sequence_minibatch(seq_lens: Any, sgd_minibatch_size: int, num_replicas: int = 1) -> int:
    """The number of whole sequences per minibatch for `sgd_minibatch_size` timesteps.

    As RLlib's classic minibatches of sequences (whole sequences, `sgd_minibatch_size`
    counting real timesteps, not padded slots): an epoch has as many minibatches as a
    batch of rows with that many steps would, `floor(sum(seq_lens) /
    sgd_minibatch_size)`, and every minibatch the same number of sequences (one
    compiled shape): `num_sequences // minibatches_per_epoch`, rounded down to a
    multiple of `num_replicas`. So a minibatch holds about `sgd_minibatch_size` real
    timesteps however short the sequences are (episode ends cut them), and at most
    `minibatches_per_epoch * num_replicas - 1` sequences of an epoch are left out.

    Example:
        >>> sequence_minibatch(np.array([16, 4, 12, 16, 9, 7, 16, 16]), 48)
        4

    Raises:
        ValueError: If the batch has fewer timesteps than `sgd_minibatch_size`, or
            fewer sequences per minibatch than `num_replicas`.
    """
    seq_lens = np.asarray(seq_lens)
    num_steps, num_seqs = int(seq_lens.sum()), len(seq_lens)
    per_epoch = num_steps // int(sgd_minibatch_size)
    if per_epoch < 1:
        raise ValueError(
            f"learn_on_batch(): sgd_minibatch_size={sgd_minibatch_size} timesteps is larger "
            f"than the batch ({num_steps} timesteps in {num_seqs} sequences). Lower "
            "sgd_minibatch_size or pass a larger batch.")
    minibatch = num_seqs // per_epoch // num_replicas * num_replicas
    if minibatch < 1:
        raise ValueError(
            f"learn_on_batch(): minibatches of {sgd_minibatch_size} timesteps hold "
            f"{num_seqs // per_epoch} of the batch's {num_seqs} sequences, fewer than the "
            f"{num_replicas} replicas. Raise sgd_minibatch_size or pass a larger batch.")
    return minibatch


class TrainStep:
    """The compiled learning functions of one policy (see the module docstring).

    Args:
        policy: The TFPolicy; its `model`, `optimizer`, `strategy`, `loss_and_stats`,
            `after_optimizer_step`, `config`, `num_grad_updates` and `num_traces` are
            used.
    """

    def __init__(self, policy):
        self._policy = policy
        self._strategy = policy.strategy
        self._num_replicas = policy.strategy.num_replicas_in_sync
        self._train_columns = TrainColumns(policy)
        jit = policy.config["jit_compile"]
        if not any(jit is value for value in JIT_COMPILE_VALUES):
            raise ValueError(
                f"{type(policy).__name__}: config['jit_compile'] must be True or False "
                f"(True: compile each replica's loss and gradients with XLA); received "
                f"{jit!r} ({type(jit).__name__}).")
        # The replica's loss and gradients, compiled with XLA (see the module docstring).
        self._xla_loss_and_grads = (
            tf.function(self._loss_grads_stats, jit_compile=True, autograph=False)
            if jit else None)
        for name in ("learn_on_batch", "compute_gradients", "apply_gradients"):
            policy.num_traces[name] = 0
        if policy.config["nonfinite_updates"] not in NONFINITE_UPDATES:
            raise ValueError(
                f"{type(policy).__name__}: config['nonfinite_updates'] must be one of "
                f"{NONFINITE_UPDATES}; received {policy.config['nonfinite_updates']!r}.")
        # autograph=False throughout: the bodies use explicit tf.while_loop/tf.cond, and
        # converting them (and `tree`) cost ~5 s at start-up; the user's loss and stats
        # are still converted (`autograph_converted`).
        self._learn_dataset_fn = tf.function(self._learn_from_iterator, autograph=False)
        self._learn_graph_fn = None
        self._grads_fn = None
        variables = policy.model.trainable_variables
        self._apply_fn = tf.function(
            self._apply_graph,
            input_signature=[[tf.TensorSpec(v.shape, v.dtype) for v in variables]],
            autograph=False,
        )

    # ------------------------------------------------------------- host side

    def learn(self, samples: Any, num_sgd_iter: int, sgd_minibatch_size: Optional[int],
              shuffle: bool) -> Dict[str, float]:
        """Runs `num_sgd_iter` epochs of minibatch SGD on `samples` in one compiled call.

        Minibatches (the one rule for every caller): each epoch draws a new permutation
        of the units (rows; whole sequences for recurrent policies) if `shuffle`, cuts
        it into `floor(units / minibatch)` minibatches of exactly `minibatch` units and
        drops the rest of that epoch's permutation, so every optimizer step sees the
        same shape and the compiled loop is traced once. For recurrent policies
        `sgd_minibatch_size` counts real timesteps: `minibatch` is
        `sequence_minibatch(seq_lens, sgd_minibatch_size)` whole sequences, so each
        minibatch holds about that many steps however short the sequences are.
        `sgd_minibatch_size` None or 0 means the whole batch (one step per epoch).
        Optimizer steps:
        `num_sgd_iter * floor(units / minibatch)`.

        Returns:
            The stats of every applied minibatch step of every epoch, averaged (one
            mean over `num_sgd_iter * floor(units / minibatch)` steps, less the skipped
            ones), plus `num_nonfinite_updates_skipped`, `num_grad_updates` (applied
            updates) and `num_traces`. If every step was skipped, only these three
            counts (no loss or KL stats: what follows a learning call, such as
            `update_kl` or replay priorities, then sees that nothing was learned).

        Raises:
            NonFiniteUpdateError: With `nonfinite_updates="raise"`, if a step's loss or
                gradient norm was NaN or inf (no later step of the call ran).
        """
        policy = self._policy
        max_seq_len = int(model_setting(policy.config["model"], "max_seq_len"))
        sequences = self._train_columns.sequences
        tf_data = policy.config["learn_input"] == "tf_data"
        # A tf.data pipeline has static shapes, and XLA compiles once per shape: pad
        # sequences to a fixed length.
        fixed = tf_data or self._xla_loss_and_grads is not None
        columns, num_rows = self._train_columns.prepare(
            samples, pad_to=max_seq_len if fixed and sequences else 0)
        minibatch = sgd_minibatch_size or None
        if sequences and minibatch:
            # sgd_minibatch_size counts timesteps; minibatches hold whole sequences.
            minibatch = sequence_minibatch(columns[Columns.SEQ_LENS], minibatch,
                                           self._num_replicas)
        elif minibatch and minibatch > num_rows:
            raise ValueError(
                f"learn_on_batch(): sgd_minibatch_size={sgd_minibatch_size} "
                f"({minibatch} rows) is larger than the batch ({num_rows} rows). Lower "
                "sgd_minibatch_size or pass a larger batch."
            )
        minibatch = minibatch or num_rows
        num_epochs = num_sgd_iter
        self._check_divisible(minibatch, "sgd_minibatch_size")
        seed = int(policy._np_random.integers(2**31))
        updates_before = int(policy.num_grad_updates.numpy())
        try:
            stats = self._learn_compiled(columns, num_rows, minibatch, num_epochs, seed,
                                         shuffle, tf_data)
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError,
                tf.errors.InternalError) as error:
            if self._xla_loss_and_grads is not None and _is_xla_compile_error(error):
                raise XlaCompileError(type(policy).__name__, error) from error
            raise
        num_bad = int(stats.pop(_NUM_BAD))
        stats.pop(_NUM_FINITE, None)
        at_bad = {k[len(_LAST):]: stats.pop(k) for k in list(stats) if k.startswith(_LAST)}
        num_grad_updates = int(policy.num_grad_updates.numpy())
        if num_bad and policy.config["nonfinite_updates"] == "raise":
            first_bad = num_grad_updates - updates_before  # the steps before it were applied
            # total_loss, the other stats by name, grad_norm last.
            order = sorted(at_bad, key=lambda k: (k != "total_loss", k == "grad_norm", k))
            named = {k: (float(at_bad[k]) if np.ndim(at_bad[k]) == 0
                         else np.asarray(at_bad[k]).tolist())
                     for k in order if not np.all(np.isfinite(at_bad[k]))}
            num_steps = num_epochs * (num_rows // minibatch)
            raise NonFiniteUpdateError(type(policy).__name__, named, first_bad, num_steps,
                                       num_grad_updates)
        if num_bad and num_grad_updates == updates_before:
            # "skip" and no step applied: a mean over no step does not exist (a 0 would
            # read as a real KL to `update_kl`, or a loss); the counts say what happened.
            stats = {}
        stats = {k: float(v) for k, v in stats.items()}
        stats["num_nonfinite_updates_skipped"] = num_bad
        stats["num_grad_updates"] = num_grad_updates
        stats["num_traces"] = policy.num_traces["learn_on_batch"]
        return stats

    def _learn_compiled(self, columns, num_rows: int, minibatch: int, num_epochs: int,
                        seed: int, shuffle: bool, tf_data: bool) -> Dict[str, np.ndarray]:
        """The one compiled call of `learn` (tracing it the first time); its stats as numpy."""
        if tf_data:
            dataset = self._dataset(columns, minibatch, num_epochs, seed, shuffle)
            iterator = iter(self._strategy.experimental_distribute_dataset(dataset))
            num_steps = num_epochs * (num_rows // minibatch)
            self._build_optimizer()
            stats = self._learn_dataset_fn(iterator, tf.constant(num_steps, tf.int64))
        else:  # "in_graph" (TFPolicy checks the value)
            if self._learn_graph_fn is None:
                self._build_optimizer()
                # The concrete function of the one signature: calling it skips the
                # polymorphic function's argument binding and signature matching
                # (~0.6 ms of host time per call, paid by every sampling round of an
                # off-policy algorithm that learns after each env step).
                self._learn_graph_fn = tf.function(self._learn_in_graph, input_signature=[
                    self._train_columns.specs, tf.TensorSpec((2,), tf.int64), tf.TensorSpec((), tf.int32),
                    tf.TensorSpec((), tf.int32), tf.TensorSpec((), tf.bool)],
                    autograph=False).get_concrete_function()
            stats = self._learn_graph_fn(columns, tf.constant([seed, 0], tf.int64),
                                         tf.constant(num_epochs, tf.int32),
                                         tf.constant(minibatch, tf.int32), tf.constant(shuffle))
        return {k: v.numpy() for k, v in stats.items()}

    def _dataset(self, columns: Dict[str, Any], minibatch: int, num_epochs: int, seed: int,
                 shuffle: bool) -> tf.data.Dataset:
        """`to_dataset` over the prepared units (rows, or padded sequences)."""
        if not self._train_columns.sequences:
            return to_dataset(columns, batch_size=minibatch, num_epochs=num_epochs, seed=seed,
                              shuffle=shuffle)
        # The columns are one unit per sequence already ([num_seqs, T, ...]): minibatch
        # them as rows (seq_lens renamed so that to_dataset does not re-pad them).
        renamed = {("_units_seq_lens" if k == Columns.SEQ_LENS else k): v
                   for k, v in columns.items()}
        dataset = to_dataset(renamed, batch_size=minibatch, num_epochs=num_epochs, seed=seed,
                             shuffle=shuffle)
        return dataset.map(lambda mb: {(Columns.SEQ_LENS if k == "_units_seq_lens" else k): v
                                       for k, v in mb.items()})

    def gradients(self, samples: Any) -> Tuple[List[np.ndarray], Dict[str, float]]:
        """Gradients (numpy, one per trainable variable) and stats on the whole batch."""
        columns, num_rows = self._train_columns.prepare(samples)
        self._check_divisible(num_rows, "the batch size")
        if self._grads_fn is None:
            self._grads_fn = tf.function(
                self._grads_graph, input_signature=[self._train_columns.specs], autograph=False)
        grads, stats = self._grads_fn(columns)
        return [g.numpy() for g in grads], {k: float(v) for k, v in stats.items()}

    def apply(self, gradients: List[Any]) -> None:
        """One optimizer update with `gradients` (as from `gradients`).

        Gradients with a NaN/inf are not applied: `NonFiniteUpdateError` with
        `nonfinite_updates="raise"`, else skipped with a warning.
        """
        variables = self._policy.model.trainable_variables
        if not isinstance(gradients, (list, tuple)) or len(gradients) != len(variables):
            got = len(gradients) if isinstance(gradients, (list, tuple)) else type(gradients).__name__
            raise ValueError(
                f"apply_gradients() takes one gradient per trainable variable ({len(variables)}, "
                f"as compute_gradients returns them); received {got}."
            )
        checked = []
        for i, (g, v) in enumerate(zip(gradients, variables)):
            g = np.asarray(g, v.dtype)
            if g.shape != tuple(v.shape):
                raise ValueError(
                    f"apply_gradients(): gradient {i} ({v.path}) must have shape "
                    f"{tuple(v.shape)}; received {g.shape}."
                )
            checked.append(g)
        norm = float(np.sqrt(sum(np.sum(np.square(g, dtype=np.float64)) for g in checked)))
        if not np.isfinite(norm):  # The guard of `learn`, for given gradients.
            policy = self._policy
            if policy.config["nonfinite_updates"] == "raise":
                raise NonFiniteUpdateError(type(policy).__name__, {"grad_norm": norm}, 0, 1,
                                           int(policy.num_grad_updates.numpy()),
                                           call="apply_gradients")
            logger.warning("%s.apply_gradients(): skipped gradients with a non-finite norm "
                           "(nonfinite_updates='skip').", type(policy).__name__)
            return
        self._apply_fn(checked)

    def _check_divisible(self, rows: int, what: str) -> None:
        if rows % self._num_replicas:
            raise ValueError(
                f"learn_on_batch(): {what} ({rows}) must be divisible by the number of "
                f"replicas ({self._num_replicas}, devices {self._policy.devices}) so that every "
                "replica gets the same number of rows."
            )

    # ---------------------------------------------------------- compiled side

    def _learn_from_iterator(self, iterator, num_steps):
        self._policy.num_traces["learn_on_batch"] += 1
        return _means(self._run_steps(num_steps, lambda _: self._minibatch_step(next(iterator))),
                      num_steps)

    def _learn_in_graph(self, columns, seed, num_epochs, minibatch, shuffle):
        """Epochs of shuffled minibatches gathered in the graph (as `to_dataset` does)."""
        self._policy.num_traces["learn_on_batch"] += 1
        num_rows = tf.shape(tree.flatten(columns)[0])[0]
        per_epoch = num_rows // minibatch
        num_steps = num_epochs * per_epoch
        # [num_epochs, num_rows]: each epoch's permutation of the rows, the argsort of
        # random keys; without `shuffle` the keys are all 0 and the stable sort keeps the
        # rows in order (no tf.cond: each one costs memory when the function is loaded).
        keys = tf.random.stateless_uniform(tf.stack([num_epochs, num_rows]), seed)
        orders = tf.argsort(keys * tf.cast(shuffle, keys.dtype), axis=1, stable=True)

        pad = self._xla_loss_and_grads is not None and self._train_columns.sequences

        def gather(step):
            start = (step % per_epoch) * minibatch
            rows = orders[step // per_epoch, start:start + minibatch]  # [minibatch]
            if pad:
                return _padded_sequences(columns, rows)
            return tree.map_structure(lambda c: tf.gather(c, rows), columns)

        def replica_step(batch):
            return self._replica_step(self._local_rows(batch))

        def step_fn(step):
            return self._guarded_update(replica_step, (gather(step),))

        return _means(self._run_steps(num_steps, step_fn), num_steps)

    def _run_steps(self, num_steps: tf.Tensor, step_fn) -> Dict[str, tf.Tensor]:
        """Sum of `step_fn(i)`'s stats for i in [0, num_steps), in one `tf.while_loop`,
        with the non-finite guard's entries (see `_add_step`); with
        `nonfinite_updates="raise"` the loop stops after the first non-finite step.

        The step is traced once when the optimizer's variables exist and the stats'
        shapes are known (from `TrainColumns`' trace); otherwise step 0 runs (and is
        traced) before the loop, creating the optimizer's variables there.
        """
        halt = self._policy.config["nonfinite_updates"] == "raise"
        shapes = self._train_columns.stat_shapes
        if shapes is not None and getattr(self._policy.optimizer, "built", False):
            zeros = {k: tf.zeros(shape, tf.float32) for k, shape in shapes.items()}

            def checked_step(i):
                stats = step_fn(i)
                user = sorted(k for k in stats if not k.startswith("_guard/"))
                if user != sorted(zeros):
                    raise ValueError(
                        f"{type(self._policy).__name__}: the loss and stats returned "
                        f"{user} in the train step but {sorted(zeros)} when first "
                        "traced; stats must return the same keys on every call."
                    )
                return stats

            return _sum_loop(num_steps, checked_step, _guard_totals(zeros, halt), halt)
        first = step_fn(tf.zeros_like(num_steps))
        totals = _add_step(_guard_totals(first, halt), first, halt)
        return _sum_loop(num_steps, step_fn, totals, halt, start=1)

    def _build_optimizer(self) -> None:
        """Creates the optimizer's variables eagerly (under the strategy) before tracing."""
        optimizer = self._policy.optimizer
        if getattr(optimizer, "built", True) or not hasattr(optimizer, "build"):
            return
        with self._strategy.scope():
            optimizer.build(self._policy.model.trainable_variables)

    def _local_rows(self, batch):
        """This replica's contiguous share of a batch that every replica received whole."""
        if self._num_replicas == 1:
            return batch
        context = tf.distribute.get_replica_context()
        rows = tf.shape(tree.flatten(batch)[0])[0] // self._num_replicas
        start = tf.cast(context.replica_id_in_sync_group, tf.int32) * rows
        return tree.map_structure(lambda c: c[start:start + rows], batch)

    def _minibatch_step(self, distributed_batch) -> Dict[str, tf.Tensor]:
        return self._guarded_update(self._replica_step, (distributed_batch,))

    def _count_update(self, stats: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """Adds the step to `num_grad_updates` if it was applied (finite)."""
        self._policy.num_grad_updates.assign_add(tf.cast(stats[_FINITE] > 0.5, tf.int64))
        return stats

    def _weighted_stats(self, batch, stats: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """In a replica, for sequences under several replicas: the stats (means over this
        replica's real timesteps) times this replica's real timesteps, and that count
        under `_WEIGHT`, so that `_reduce_stats` can take the mean over every replica's
        real timesteps. Otherwise (rows, whose replicas all hold as many; one replica)
        the stats unchanged."""
        if self._num_replicas == 1 or not self._train_columns.sequences:
            return stats
        weight = tf.cast(tf.reduce_sum(batch[Columns.SEQ_LENS]), tf.float32)
        weighted = {}
        for key, value in stats.items():
            if key == "total_loss" or key.startswith("_guard/"):
                weighted[key] = value
            else:
                value = tf.convert_to_tensor(value)
                weighted[key] = tf.cast(value, tf.float32) * weight
        weighted[_WEIGHT] = weight
        return weighted

    def _reduce_stats(self, per_replica: Dict[str, Any]) -> Dict[str, tf.Tensor]:
        """The stats over replicas: `total_loss` (each replica's share of the global
        mean) summed; the guard's entries averaged; the other stats averaged, weighted
        by each replica's real timesteps when `_weighted_stats` weighted them (padded
        sequences: replicas hold unequal numbers of real steps)."""
        SUM, MEAN = tf.distribute.ReduceOp.SUM, tf.distribute.ReduceOp.MEAN
        per_replica = dict(per_replica)
        weight = per_replica.pop(_WEIGHT, None)
        total_weight = (None if weight is None else
                        tf.maximum(self._strategy.reduce(SUM, weight, axis=None), 1.0))
        reduced = {}
        for key, value in per_replica.items():
            if key == "total_loss":
                reduced[key] = self._strategy.reduce(SUM, value, axis=None)
            elif total_weight is not None and not key.startswith("_guard/"):
                reduced[key] = self._strategy.reduce(SUM, value, axis=None) / total_weight
            else:
                reduced[key] = self._strategy.reduce(MEAN, value, axis=None)
            reduced[key] = tf.cast(reduced[key], tf.float32)
        return reduced

    def _loss_and_grads(self, batch):
        policy = self._policy
        train_batch = TrainBatch(batch, type(policy).__name__)
        variables = policy.model.trainable_variables
        with tf.GradientTape() as tape:
            loss, stats = autograph_converted(policy.loss_and_stats)(
                policy.model, policy.dist_class, train_batch)
        grads = tape.gradient(loss, variables)
        return grads, variables, {"total_loss": loss, **stats}

    def _loss_grads_stats(self, batch):
        """`_loss_and_grads` without the variables: the body `jit_compile` compiles."""
        several = self._num_replicas > 1
        if several:
            _XLA_REPLICA_TRACE.policy = type(self._policy).__name__
        try:
            grads, _, stats = self._loss_and_grads(batch)
        except RuntimeError as error:  # a merge_call (all-reduce) in the user's loss
            if several and "merge_call" in str(error):
                raise XlaCompileError(
                    type(self._policy).__name__,
                    f"the loss makes a cross-replica call (merge_call/all_reduce) under "
                    f"{self._num_replicas} replicas, which cannot run inside the "
                    "XLA-compiled replica step", replicas=True) from error
            raise
        finally:
            if several:
                _XLA_REPLICA_TRACE.policy = None
        return grads, stats

    def _replica_step(self, batch):
        """One replica's loss and (clipped) gradients, and the guard's check of them.

        One global norm serves both: `grad_clip` scales the gradients by the global norm
        of the gradients summed over replicas (Keras' `global_clipnorm` would clip each
        replica's share before the optimizer sums them, which is not what one device
        computes), and the non-finite guard checks the loss (summed over replicas) and
        that norm with `tf.math.is_finite`, so every replica agrees. Without `grad_clip`
        the guard's norm is the sum of the replicas' own norms (finite exactly when each
        is).

        Returns:
            `(grads, stats)`: one gradient per trainable variable (None where the loss
            does not depend on it), and the stats with the guard's `_FINITE` and
            `_GRAD_NORM` (the norm before clipping) entries.
        """
        if self._xla_loss_and_grads is not None:
            grads, stats = self._xla_loss_and_grads(batch)
        else:
            grads, _, stats = self._loss_and_grads(batch)
        stats = self._weighted_stats(batch, stats)
        clip = self._policy.config["grad_clip"]
        present = [g for g in grads if g is not None]
        context = tf.distribute.get_replica_context()
        several = context is not None and self._num_replicas > 1
        loss = tf.cast(stats["total_loss"], tf.float32)
        if clip and present:
            summed = context.all_reduce(tf.distribute.ReduceOp.SUM, present) if several else present
            norm = tf.cast(tf.linalg.global_norm(summed), tf.float32)
            scale = clip / tf.maximum(norm, clip)  # tf.clip_by_global_norm's factor
            grads = [None if g is None else g * tf.cast(scale, g.dtype) for g in grads]
            if several:
                loss = context.all_reduce(tf.distribute.ReduceOp.SUM, loss)
            checked = tf.stack([loss, norm])
        else:
            norm = tf.linalg.global_norm(present) if present else tf.constant(0.0)
            checked = tf.stack([loss, tf.cast(norm, tf.float32)])
            if several:
                checked = context.all_reduce(tf.distribute.ReduceOp.SUM, checked)
        finite = tf.cast(tf.reduce_all(tf.math.is_finite(checked)), tf.float32)
        return grads, {**stats, _FINITE: finite, _GRAD_NORM: checked[1]}

    def _guarded_update(self, run_replica_step, args) -> Dict[str, tf.Tensor]:
        """`run_replica_step` on every replica, then the optimizer update under a `tf.cond`
        on the guard's check (in cross-replica context: a synchronisation point such as
        the optimizer's all-reduce cannot sit in control flow inside `strategy.run`)."""
        strategy = self._strategy
        variables = self._policy.model.trainable_variables
        has_grad: List[bool] = []

        def replica_fn(*inputs):
            grads, stats = run_replica_step(*inputs)
            has_grad[:] = [g is not None for g in grads]  # known when traced
            return [g for g in grads if g is not None], stats

        per_replica_grads, per_replica_stats = strategy.run(replica_fn, args=args)
        stats = self._reduce_stats(per_replica_stats)
        updated = [v for v, has in zip(variables, has_grad) if has]

        def apply():
            self._policy.apply_update(per_replica_grads, updated)
            self._policy.after_optimizer_step()
            self._policy.commit_step_stats(
                {k: v for k, v in stats.items() if not k.startswith("_guard/")})
            return tf.constant(1.0)

        tf.cond(stats[_FINITE] > 0.5, apply, lambda: tf.constant(0.0))
        return self._count_update(stats)

    def _grads_graph(self, columns):
        self._policy.num_traces["compute_gradients"] += 1

        def replica_fn(batch):
            local = self._local_rows(batch)
            grads, variables, stats = self._loss_and_grads(local)
            grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                     for g, v in zip(grads, variables)]
            return grads, self._weighted_stats(local, stats)

        grads, stats = self._strategy.run(replica_fn, args=(columns,))
        grads = [self._strategy.reduce(tf.distribute.ReduceOp.SUM, g, axis=None) for g in grads]
        if self._policy.config["grad_clip"]:
            grads, _ = tf.clip_by_global_norm(grads, self._policy.config["grad_clip"])
        return grads, self._reduce_stats(stats)

    def _apply_graph(self, grads):
        self._policy.num_traces["apply_gradients"] += 1
        variables = self._policy.model.trainable_variables

        def replica_fn(g):
            # The optimizer sums over replicas; each contributes 1/N of the update.
            self._policy.optimizer.apply_gradients(
                [(x / self._num_replicas, v) for x, v in zip(g, variables)])

        self._strategy.run(replica_fn, args=(grads,))
        self._policy.after_optimizer_step()
        self._policy.num_grad_updates.assign_add(1)
