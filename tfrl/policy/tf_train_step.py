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
- `gradients`: the loss gradients on a whole batch, each replica taking its contiguous
  share of the rows, summed over replicas.
- `apply`: an optimizer update from given gradients.

The batch reaches them through `TrainColumns` (checked numpy columns of fixed specs).
"""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
import tree

from tfrl.core.columns import Columns
from tfrl.policy.dataset import to_dataset
from tfrl.policy.train_columns import TrainBatch, TrainColumns, autograph_converted


def global_mean(values: tf.Tensor, mask: Optional[tf.Tensor] = None) -> tf.Tensor:
    """This replica's share of the mean of `values` (where `mask`) over all replicas' rows."""
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
        count = context.all_reduce(tf.distribute.ReduceOp.SUM, tf.stop_gradient(count))
    return total / tf.maximum(count, 1.0)


def _sum_loop(num_steps: tf.Tensor, step_fn, totals: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    """`totals` plus `step_fn(i)` for i in [0, num_steps), as one `tf.while_loop`."""

    def body(i, acc):
        stats = step_fn(i)
        return i + 1, {k: acc[k] + stats[k] for k in acc}

    _, totals = tf.while_loop(lambda i, _: i < num_steps, body,
                              (tf.zeros_like(num_steps), totals))
    return totals


class TrainStep:
    """The compiled learning functions of one policy (see the module docstring).

    Args:
        policy: The TFPolicy; its `model`, `optimizer`, `strategy`, `loss_and_stats`,
            `config`, `num_grad_updates` and `num_traces` are used.
    """

    def __init__(self, policy):
        self._policy = policy
        self._strategy = policy.strategy
        self._num_replicas = policy.strategy.num_replicas_in_sync
        self._train_columns = TrainColumns(policy)
        for name in ("learn_on_batch", "compute_gradients", "apply_gradients"):
            policy.num_traces[name] = 0
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
        same shape and the compiled loop is traced once. `sgd_minibatch_size` None or
        0 means the whole batch (one step per epoch). Optimizer steps:
        `num_sgd_iter * floor(units / minibatch)`.

        Returns:
            The stats of every minibatch step of every epoch, averaged (one mean over
            `num_sgd_iter * floor(units / minibatch)` steps), plus `num_grad_updates`
            and `num_traces`.
        """
        policy = self._policy
        max_seq_len = int(policy.config["model"].get("max_seq_len", 20))
        sequences = self._train_columns.sequences
        tf_data = policy.config["learn_input"] == "tf_data"
        # A tf.data pipeline has static shapes: pad sequences to a fixed length.
        columns, num_rows = self._train_columns.prepare(
            samples, pad_to=max_seq_len if tf_data and sequences else 0)
        minibatch = sgd_minibatch_size or None
        unit = "rows"
        if sequences:
            # sgd_minibatch_size counts timesteps; minibatches hold whole sequences.
            unit = "sequences"
            minibatch = max(1, minibatch // max_seq_len) if minibatch else None
        minibatch = minibatch or num_rows
        num_epochs = num_sgd_iter
        if minibatch > num_rows:
            raise ValueError(
                f"learn_on_batch(): sgd_minibatch_size={sgd_minibatch_size} "
                f"({minibatch} {unit}) is larger than the batch ({num_rows} {unit}). Lower "
                "sgd_minibatch_size or pass a larger batch."
            )
        self._check_divisible(minibatch, "sgd_minibatch_size")
        seed = int(policy._np_random.integers(2**31))
        if tf_data:
            dataset = self._dataset(columns, minibatch, num_epochs, seed, shuffle)
            iterator = iter(self._strategy.experimental_distribute_dataset(dataset))
            num_steps = num_epochs * (num_rows // minibatch)
            self._build_optimizer()
            stats = self._learn_dataset_fn(iterator, tf.constant(num_steps, tf.int64))
        else:  # "in_graph" (TFPolicy checks the value)
            if self._learn_graph_fn is None:
                self._build_optimizer()
                self._learn_graph_fn = tf.function(self._learn_in_graph, input_signature=[
                    self._train_columns.specs, tf.TensorSpec((2,), tf.int64), tf.TensorSpec((), tf.int32),
                    tf.TensorSpec((), tf.int32), tf.TensorSpec((), tf.bool)], autograph=False)
            stats = self._learn_graph_fn(columns, tf.constant([seed, 0], tf.int64),
                                         tf.constant(num_epochs, tf.int32),
                                         tf.constant(minibatch, tf.int32), tf.constant(shuffle))
        stats = {k: float(v) for k, v in stats.items()}
        stats["num_grad_updates"] = int(policy.num_grad_updates.numpy())
        stats["num_traces"] = policy.num_traces["learn_on_batch"]
        return stats

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
        """One optimizer update with `gradients` (as from `gradients`)."""
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
        totals = self._run_steps(num_steps, lambda _: self._minibatch_step(next(iterator)))
        return {k: v / tf.cast(num_steps, v.dtype) for k, v in totals.items()}

    def _learn_in_graph(self, columns, seed, num_epochs, minibatch, shuffle):
        """Epochs of shuffled minibatches gathered in the graph (as `to_dataset` does)."""
        self._policy.num_traces["learn_on_batch"] += 1
        num_rows = tf.shape(tree.flatten(columns)[0])[0]
        per_epoch = num_rows // minibatch
        num_steps = num_epochs * per_epoch
        orders = tf.cond(  # [num_epochs, num_rows]: each epoch's permutation of the rows
            shuffle,
            lambda: tf.argsort(tf.random.stateless_uniform(tf.stack([num_epochs, num_rows]), seed),
                               axis=1),
            lambda: tf.tile(tf.range(num_rows)[None], tf.stack([num_epochs, 1])))

        def gather(step):
            start = (step % per_epoch) * minibatch
            rows = orders[step // per_epoch, start:start + minibatch]  # [minibatch]
            return tree.map_structure(lambda c: tf.gather(c, rows), columns)

        def replica_step(batch):
            return self._replica_step(self._local_rows(batch))

        def step_fn(step):
            per_replica = self._strategy.run(replica_step, args=(gather(step),))
            self._policy.num_grad_updates.assign_add(1)
            return self._reduce_stats(per_replica)

        totals = self._run_steps(num_steps, step_fn)
        return {k: v / tf.cast(num_steps, v.dtype) for k, v in totals.items()}

    def _run_steps(self, num_steps: tf.Tensor, step_fn) -> Dict[str, tf.Tensor]:
        """Sum of `step_fn(i)`'s stats for i in [0, num_steps), in one `tf.while_loop`.

        The step is traced once when the optimizer's variables exist and the stats'
        shapes are known (from `TrainColumns`' trace); otherwise step 0 runs (and is
        traced) before the loop, creating the optimizer's variables there.
        """
        shapes = self._train_columns.stat_shapes
        if shapes is not None and getattr(self._policy.optimizer, "built", False):
            zeros = {k: tf.zeros(shape, tf.float32) for k, shape in shapes.items()}

            def checked_step(i):
                stats = step_fn(i)
                if set(stats) != set(zeros):
                    raise ValueError(
                        f"{type(self._policy).__name__}: the loss and stats returned "
                        f"{sorted(stats)} in the train step but {sorted(zeros)} when first "
                        "traced; stats must return the same keys on every call."
                    )
                return stats

            return _sum_loop(num_steps, checked_step, zeros)
        return _sum_loop(num_steps - 1, lambda i: step_fn(i + 1), step_fn(tf.zeros_like(num_steps)))

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
        per_replica = self._strategy.run(self._replica_step, args=(distributed_batch,))
        self._policy.num_grad_updates.assign_add(1)
        return self._reduce_stats(per_replica)

    def _reduce_stats(self, per_replica: Dict[str, Any]) -> Dict[str, tf.Tensor]:
        reduced = {}
        for key, value in per_replica.items():
            # total_loss is each replica's share of the global mean; stats are means.
            op = tf.distribute.ReduceOp.SUM if key == "total_loss" else tf.distribute.ReduceOp.MEAN
            reduced[key] = tf.cast(self._strategy.reduce(op, value, axis=None), tf.float32)
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

    def _clip(self, grads: List[Any]) -> List[Any]:
        """Clips by the global norm of the gradients summed over replicas (`grad_clip`).

        Keras' `global_clipnorm` would clip each replica's share before the optimizer
        sums them, which is not what one device computes.
        """
        clip = self._policy.config["grad_clip"]
        present = [g for g in grads if g is not None]
        if not clip or not present:
            return grads
        context = tf.distribute.get_replica_context()
        if context is not None and self._num_replicas > 1:
            present = context.all_reduce(tf.distribute.ReduceOp.SUM, present)
        norm = tf.linalg.global_norm(present)
        scale = clip / tf.maximum(norm, clip)  # tf.clip_by_global_norm's factor
        return [None if g is None else g * scale for g in grads]

    def _replica_step(self, batch):
        grads, variables, stats = self._loss_and_grads(batch)
        grads = self._clip(grads)
        pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
        self._policy.optimizer.apply_gradients(pairs)
        return stats

    def _grads_graph(self, columns):
        self._policy.num_traces["compute_gradients"] += 1

        def replica_fn(batch):
            grads, variables, stats = self._loss_and_grads(self._local_rows(batch))
            grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                     for g, v in zip(grads, variables)]
            return grads, stats

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
        self._policy.num_grad_updates.assign_add(1)
