"""TrainStep: the update chain of a TFPolicy, compiled.

What: three compiled functions, each traced once (`learn` and `gradients` of a
recurrent policy: once for batches of sequences up to the model's `max_seq_len`, once
more if longer ones come; see `TrainStep.__init__`).

- `learn`: all epochs and minibatches of one `learn_on_batch` call, in one call. The
  chain, top to bottom: `learn` (host: checked columns, the minibatch size) -> the
  compiled `_learn_graph` (one seeded permutation per epoch, the minibatches, the
  loop) -> `_step` (one optimizer step on every replica, under `strategy.run`) ->
  `_replica_step` (this replica's contiguous share of the minibatch) ->
  `_loss_and_grads` (`policy.loss_and_stats` under a gradient tape); back in `_step`,
  `policy.apply_update` (the optimizer) under the non-finite guard's `tf.cond`.
  One minibatch rule for every caller (see `TrainStep.learn`): per epoch a new
  permutation, `floor(units / minibatch)` full minibatches, the remainder of that
  epoch's permutation dropped; stats are the mean over every applied step. This is
  the only minibatch SGD loop in tfrl: `TrainOneStep`, `MultiGPUTrainOneStep`, the
  learner threads and `RolloutWorker.sample_and_learn` all pass their epochs and
  minibatch size to `learn_on_batch`.
- `learn_graph` (after `prepare_learn_graph`, then `finish` on the host): the same
  `_learn_graph` loop traced into a caller's compiled function, the in-graph training
  path's (`tfrl.execution.in_graph`), which samples and learns in one call.
- `gradients`: the loss gradients on a whole batch, each replica taking its contiguous
  share of the rows, summed over replicas.
- `apply`: an optimizer update from given gradients.

Minibatch input (`config["learn_input"]`): "in_graph" (default) gathers each step's
minibatch from the batch's tensors with `tf.gather`; "tf_data" draws the same
minibatches from a `tf.data` pipeline that the compiled function builds over the
call's tensors and iterates inside the loop (the pipeline is traced once per policy
with the function and fed per call; building a pipeline and an iterator on the host
per call cost an order of magnitude more than the whole update, see
bench/RESULTS.md). Both give the same minibatches in the same order.

Which optimizer groups a step updates is the policy's `update_groups` hook (TD3
updates its actor every `policy_delay`-th step): the loss sees it as
`train_batch.update_groups`, `apply_update` as its `groups` argument.

Owned elsewhere: the non-finite guard (the finite check, the loop's sums and counts,
the error) in `tfrl.policy.nonfinite_guard`; XLA (`jit_compile`) in `tfrl.policy.xla`;
the batch's checked fixed-shape columns in `tfrl.policy.train_columns`.
"""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
import tree

from tfrl.core.columns import Columns
from tfrl.models.model_defaults import model_setting
from tfrl.models.tf.recurrent_net import sequences_at_most
from tfrl.policy import nonfinite_guard as guard
from tfrl.policy.nonfinite import NONFINITE_UPDATES, NonFiniteUpdateError
from tfrl.policy.train_columns import TrainBatch, TrainColumns, autograph_converted
from tfrl.policy.xla import (XlaCompileError, check_jit_compile, compile_loss_and_grads,
                             global_mean, is_xla_compile_error, padded_sequences)

# Re-exported: losses import `global_mean` from here; callers catch these errors.
__all__ = ["NonFiniteUpdateError", "TrainStep", "XlaCompileError", "global_mean",
           "sequence_minibatch"]


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


def _dataset_options() -> tf.data.Options:
    """The learning pipeline's options: no autotuning, no parallel map, no prefetch
    thread. The loop pulls one minibatch at a time and waits for it; background
    threads would only compete with the optimizer step for the same cores."""
    options = tf.data.Options()
    options.autotune.enabled = False
    options.experimental_optimization.map_parallelization = False
    options.experimental_optimization.inject_prefetch = False
    options.threading.private_threadpool_size = 1
    return options


_DATASET_OPTIONS = _dataset_options()


class TrainStep:
    """The compiled update chain of one policy (see the module docstring).

    Args:
        policy: The TFPolicy; its `model`, `optimizer`, `strategy`, `loss_and_stats`,
            `update_groups`, `apply_update`, `after_optimizer_step`,
            `commit_step_stats`, `shuffle_seed`, `config`, `num_grad_updates` and
            `num_traces` are used.
    """

    def __init__(self, policy):
        self._policy = policy
        self._owner = type(policy).__name__
        self._strategy = policy.strategy
        self._num_replicas = policy.strategy.num_replicas_in_sync
        self._train_columns = TrainColumns(policy)
        jit = check_jit_compile(policy.config["jit_compile"], self._owner)
        # The replica's loss and gradients, compiled with XLA (see `tfrl.policy.xla`).
        self._xla_loss_and_grads = (
            compile_loss_and_grads(self._loss_and_grads, self._owner, self._num_replicas)
            if jit else None)
        for name in ("learn_on_batch", "compute_gradients", "apply_gradients"):
            policy.num_traces[name] = 0
        if policy.config["nonfinite_updates"] not in NONFINITE_UPDATES:
            raise ValueError(
                f"{self._owner}: config['nonfinite_updates'] must be one of "
                f"{NONFINITE_UPDATES}; received {policy.config['nonfinite_updates']!r}.")
        self._halt = policy.config["nonfinite_updates"] == "raise"
        self._tf_data = policy.config["learn_input"] == "tf_data"
        # autograph=False throughout: the bodies use explicit tf.while_loop/tf.cond, and
        # converting them (and `tree`) costs seconds at start-up; the user's loss and
        # stats are still converted (`autograph_converted`).
        # Sequence batches padded to at most the model's max_seq_len (all that the
        # samplers make) and longer ones get separate functions, each traced on first
        # use: the first need no LSTM loop past the unrolled steps
        # (`recurrent_net.sequences_at_most`). Keyed by that bound (None: any length).
        self._max_seq_len = (int(model_setting(policy.config["model"], "max_seq_len"))
                             if self._train_columns.sequences else None)
        self._learn_fns: Dict[Optional[int], Any] = {}
        self._grads_fns: Dict[Optional[int], Any] = {}
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
        Optimizer steps: `num_sgd_iter * floor(units / minibatch)`.

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
        sequences = self._train_columns.sequences
        # XLA compiles once per shape: pad sequences to a fixed length.
        pad_to = (int(model_setting(policy.config["model"], "max_seq_len"))
                  if sequences and self._xla_loss_and_grads is not None else 0)
        # (The first batch's column discovery traces the loss under the bound too: that
        # trace is never run.)
        with sequences_at_most(self._max_seq_len):
            columns, num_rows = self._train_columns.prepare(samples, pad_to=pad_to)
        bound = self._time_bound(columns)
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
        self._check_divisible(minibatch, "sgd_minibatch_size")
        seed = policy.shuffle_seed()
        updates_before = int(policy.num_grad_updates.numpy())
        learn_fn = self._learn_fns.get(bound)
        if learn_fn is None:
            self._build_optimizer()
            # The concrete function of the one signature: calling it skips the
            # polymorphic function's argument binding and signature matching (host
            # time paid by every sampling round of an off-policy algorithm).
            with sequences_at_most(bound):
                learn_fn = self._learn_fns[bound] = tf.function(
                    self._learn_graph, input_signature=[
                        self._train_columns.specs, tf.TensorSpec((2,), tf.int64),
                        tf.TensorSpec((), tf.int32), tf.TensorSpec((), tf.int32),
                        tf.TensorSpec((), tf.bool)], autograph=False).get_concrete_function()
        try:
            stats = learn_fn(columns, tf.constant([seed, 0], tf.int64),
                             tf.constant(num_sgd_iter, tf.int32),
                             tf.constant(minibatch, tf.int32), tf.constant(shuffle))
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError,
                tf.errors.InternalError) as error:
            if self._xla_loss_and_grads is not None and is_xla_compile_error(error):
                raise XlaCompileError(self._owner, error) from error
            raise
        return self.finish(stats, updates_before, num_sgd_iter * (num_rows // minibatch))

    def finish(self, stats: Dict[str, Any], updates_before: int,
               num_steps: int) -> Dict[str, float]:
        """On the host, after a compiled learning loop: its raw `stats` (tensors or
        numpy, the loop's guard entries included) as `learn`'s result.

        Args:
            stats: What the loop (`_learn_graph`, or `learn_graph` inside a caller's
                compiled function) returned.
            updates_before: `policy.num_grad_updates` before the loop ran.
            num_steps: The optimizer steps the loop was to run.

        Raises:
            NonFiniteUpdateError: See `learn`.
        """
        num_grad_updates = int(self._policy.num_grad_updates.numpy())
        result = guard.finish({k: np.asarray(v) for k, v in stats.items()}, self._owner,
                              self._halt, updates_before, num_grad_updates, num_steps)
        result["num_grad_updates"] = num_grad_updates
        result["num_traces"] = self._policy.num_traces["learn_on_batch"]
        return result

    def prepare_learn_graph(self, example: Any) -> List[str]:
        """Makes `learn_graph` usable inside a caller's compiled function: fixes the train
        columns from `example` (a batch of rows with every column the caller will pass,
        as `learn` does from its first batch) and builds the optimizer; the columns
        the loss reads (those `learn_graph` takes).

        Raises:
            ValueError: For a recurrent policy (sequences are not supported here).
        """
        if self._train_columns.sequences:
            raise ValueError(f"{self._owner}: learning inside another compiled function "
                             "takes rows; the policy's model is recurrent.")
        self._train_columns.prepare(example)
        self._build_optimizer()
        return sorted(self._train_columns.specs)

    def learn_graph(self, columns: Dict[str, tf.Tensor], seed: tf.Tensor,
                    num_epochs: tf.Tensor, minibatch: tf.Tensor,
                    shuffle: tf.Tensor) -> Dict[str, tf.Tensor]:
        """`learn`'s loop (the same minibatch rule and guard) for use inside a caller's
        compiled function, after `prepare_learn_graph`; its raw stats, which `finish`
        turns into `learn`'s result on the host.

        Args:
            columns: Column -> `[B, ...]` tensor (columns the loss does not read are
                ignored).
            seed: `[2]` int64 seed of the epochs' permutations.
            num_epochs, minibatch: int32 scalars; `minibatch` rows per step, `B`
                divisible by the number of replicas.
            shuffle: bool scalar: a new permutation per epoch.
        """
        specs = self._train_columns.specs
        if specs is None:
            raise ValueError(f"{self._owner}: call prepare_learn_graph(example) before "
                             "learn_graph().")
        missing = sorted(set(specs) - set(columns))
        if missing:
            raise ValueError(f"{self._owner}.learn_graph(): the loss reads columns {missing}, "
                             f"which the given columns {sorted(columns)} lack.")
        columns = {c: tree.map_structure(lambda x, s: tf.cast(x, s.dtype), columns[c], specs[c])
                   for c in specs}
        return self._learn_graph(columns, seed, num_epochs, minibatch, shuffle)

    def gradients(self, samples: Any) -> Tuple[List[np.ndarray], Dict[str, float]]:
        """Gradients (numpy, one per trainable variable) and stats on the whole batch."""
        with sequences_at_most(self._max_seq_len):
            columns, num_rows = self._train_columns.prepare(samples)
        self._check_divisible(num_rows, "the batch size")
        bound = self._time_bound(columns)
        grads_fn = self._grads_fns.get(bound)
        if grads_fn is None:
            with sequences_at_most(bound):
                grads_fn = self._grads_fns[bound] = tf.function(
                    self._grads_graph, input_signature=[self._train_columns.specs],
                    autograph=False).get_concrete_function()
        grads, stats = grads_fn(columns)
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
        if guard.refuses_gradients(checked, self._owner, self._halt,
                                   int(self._policy.num_grad_updates.numpy())):
            return
        self._apply_fn(checked)

    def _time_bound(self, columns: Dict[str, Any]) -> Optional[int]:
        """The model's `max_seq_len` if the prepared sequence `columns` are padded to at
        most that many steps, else None (rows; longer sequences)."""
        if self._max_seq_len is None:
            return None
        time_len = self._train_columns.time_length(columns)
        return self._max_seq_len if time_len <= self._max_seq_len else None

    def _check_divisible(self, rows: int, what: str) -> None:
        if rows % self._num_replicas:
            raise ValueError(
                f"learn_on_batch(): {what} ({rows}) must be divisible by the number of "
                f"replicas ({self._num_replicas}, devices {self._policy.devices}) so that every "
                "replica gets the same number of rows."
            )

    def _build_optimizer(self) -> None:
        """Creates the optimizer's variables eagerly (under the strategy) before tracing."""
        optimizer = self._policy.optimizer
        if getattr(optimizer, "built", True) or not hasattr(optimizer, "build"):
            return
        with self._strategy.scope():
            optimizer.build(self._policy.model.trainable_variables)

    # ---------------------------------------------------------- compiled side

    def _learn_graph(self, columns, seed, num_epochs, minibatch, shuffle):
        """Every epoch's shuffled minibatches and their optimizer steps, in one loop."""
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

        def rows_of(rows):  # [minibatch] unit indices -> the minibatch
            if pad:
                return padded_sequences(columns, rows)
            return tree.map_structure(lambda c: tf.gather(c, rows), columns)

        if self._tf_data:
            # Step s's rows are row s of [num_steps, minibatch] (epochs in order).
            steps = tf.reshape(orders[:, :per_epoch * minibatch], [-1, minibatch])
            dataset = tf.data.Dataset.from_tensor_slices(steps).map(rows_of)
            iterator = iter(dataset.with_options(_DATASET_OPTIONS))

            def minibatch_of(step):
                return iterator.get_next()
        else:
            def minibatch_of(step):
                start = (step % per_epoch) * minibatch
                return rows_of(orders[step // per_epoch, start:start + minibatch])

        shapes = (self._train_columns.stat_shapes
                  if getattr(self._policy.optimizer, "built", False) else None)
        return guard.run_loop(num_steps, lambda step: self._step(minibatch_of(step)),
                              shapes, self._halt, self._owner)

    def _step(self, batch) -> Dict[str, tf.Tensor]:
        """One optimizer step: `_replica_step` on every replica, then (in cross-replica
        context: a synchronisation point such as the optimizer's all-reduce cannot sit
        in control flow inside `strategy.run`) the update under the guard's `tf.cond`."""
        policy = self._policy
        variables = policy.model.trainable_variables
        has_grad: List[bool] = []

        def replica_fn(batch):
            grads, stats = self._replica_step(batch)
            has_grad[:] = [g is not None for g in grads]  # known when traced
            return [g for g in grads if g is not None], stats

        per_replica_grads, per_replica_stats = self._strategy.run(replica_fn, args=(batch,))
        stats = self._reduce_stats(per_replica_stats)
        updated = [v for v, has in zip(variables, has_grad) if has]

        def apply():
            policy.apply_update(per_replica_grads, updated, policy.update_groups(True))
            policy.after_optimizer_step()
            policy.commit_step_stats({k: v for k, v in stats.items()
                                      if not guard.is_guard_key(k)})
            return tf.constant(1.0)

        applied = stats[guard.FINITE] > 0.5
        tf.cond(applied, apply, lambda: tf.constant(0.0))
        policy.num_grad_updates.assign_add(tf.cast(applied, tf.int64))
        return stats

    def _replica_step(self, batch):
        """In a replica: its share of the minibatch, the loss and (clipped) gradients,
        and the guard's check of them (`guard.check_step`).

        Returns:
            `(grads, stats)`: one gradient per trainable variable (None where the loss
            does not depend on it), and the stats with the guard's entries.
        """
        batch = self._local_rows(batch)
        if self._xla_loss_and_grads is not None:
            grads, stats = self._xla_loss_and_grads(batch)
        else:
            grads, stats = self._loss_and_grads(batch)
        stats = self._weighted_stats(batch, stats)
        context = tf.distribute.get_replica_context()
        grads, finite, norm = guard.check_step(
            grads, stats["total_loss"], self._policy.config["grad_clip"], context,
            context is not None and self._num_replicas > 1)
        return grads, {**stats, guard.FINITE: finite, guard.GRAD_NORM: norm}

    def _loss_and_grads(self, batch, learning: bool = True):
        """`policy.loss_and_stats` on `batch` and its gradients (`learning`: inside the
        learning loop, which passes the step's `update_groups` to the loss)."""
        policy = self._policy
        train_batch = TrainBatch(batch, self._owner,
                                 update_groups=policy.update_groups(learning))
        with tf.GradientTape() as tape:
            loss, stats = autograph_converted(policy.loss_and_stats)(
                policy.model, policy.dist_class, train_batch)
        grads = tape.gradient(loss, policy.model.trainable_variables)
        return grads, {"total_loss": loss, **stats}

    def _local_rows(self, batch):
        """This replica's contiguous share of a batch that every replica received whole."""
        if self._num_replicas == 1:
            return batch
        context = tf.distribute.get_replica_context()
        rows = tf.shape(tree.flatten(batch)[0])[0] // self._num_replicas
        start = tf.cast(context.replica_id_in_sync_group, tf.int32) * rows
        return tree.map_structure(lambda c: c[start:start + rows], batch)

    def _weighted_stats(self, batch, stats: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """In a replica, for sequences under several replicas: the stats (means over this
        replica's real timesteps) times this replica's real timesteps, and that count
        under `guard.WEIGHT`, so that `_reduce_stats` can take the mean over every
        replica's real timesteps. Otherwise (rows, whose replicas all hold as many; one
        replica) the stats unchanged."""
        if self._num_replicas == 1 or not self._train_columns.sequences:
            return stats
        weight = tf.cast(tf.reduce_sum(batch[Columns.SEQ_LENS]), tf.float32)
        weighted = {}
        for key, value in stats.items():
            if key == "total_loss" or guard.is_guard_key(key):
                weighted[key] = value
            else:
                value = tf.convert_to_tensor(value)
                weighted[key] = tf.cast(value, tf.float32) * weight
        weighted[guard.WEIGHT] = weight
        return weighted

    def _reduce_stats(self, per_replica: Dict[str, Any]) -> Dict[str, tf.Tensor]:
        """The stats over replicas: `total_loss` (each replica's share of the global
        mean) summed; the guard's entries averaged; the other stats averaged, weighted
        by each replica's real timesteps when `_weighted_stats` weighted them (padded
        sequences: replicas hold unequal numbers of real steps)."""
        SUM, MEAN = tf.distribute.ReduceOp.SUM, tf.distribute.ReduceOp.MEAN
        per_replica = dict(per_replica)
        weight = per_replica.pop(guard.WEIGHT, None)
        total_weight = (None if weight is None else
                        tf.maximum(self._strategy.reduce(SUM, weight, axis=None), 1.0))
        reduced = {}
        for key, value in per_replica.items():
            if key == "total_loss":
                reduced[key] = self._strategy.reduce(SUM, value, axis=None)
            elif total_weight is not None and not guard.is_guard_key(key):
                reduced[key] = self._strategy.reduce(SUM, value, axis=None) / total_weight
            else:
                reduced[key] = self._strategy.reduce(MEAN, value, axis=None)
            reduced[key] = tf.cast(reduced[key], tf.float32)
        return reduced

    def _grads_graph(self, columns):
        self._policy.num_traces["compute_gradients"] += 1
        variables = self._policy.model.trainable_variables

        def replica_fn(batch):
            local = self._local_rows(batch)
            grads, stats = self._loss_and_grads(local, learning=False)
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
