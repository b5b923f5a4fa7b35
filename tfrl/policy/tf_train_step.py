"""TrainStep: the compiled learning functions of a TFPolicy.

Three compiled functions, each traced once:

- `learn`: all epochs and minibatches of one `learn_on_batch` call, in one call. By
  default (`learn_input="in_graph"`) the whole batch goes in as tensors (batch axis
  unknown, so any batch size reuses the trace); the graph draws one seeded permutation
  per epoch, gathers each minibatch and runs the replica step (loss, gradients,
  optimizer update) under `strategy.run` in a `tf.range` loop; every replica takes its
  contiguous share of the minibatch. With `learn_input="tf_data"` the batch becomes a
  `to_dataset` pipeline distributed with `strategy.experimental_distribute_dataset`;
  same minibatches, but building the pipeline and its iterator cost 130-190 ms per call
  on this machine against 4-12 ms for the whole in-graph update (bench_policy.py).
- `gradients`: the loss gradients on a whole batch, each replica taking its contiguous
  share of the rows, summed over replicas.
- `apply`: an optimizer update from given gradients.

The train columns are fixed by the first batch: the numeric columns that `loss` and
`stats` read (found by tracing them once on symbolic inputs), floats as float32. Later
batches must have those columns; others are left out, so the compiled signature stays.
"""

from typing import Any, Dict, List, Tuple

import numpy as np
import tensorflow as tf
import tree

from tfrl.core.columns import Columns
from tfrl.policy import space_specs
from tfrl.policy.dataset import to_dataset
from tfrl.policy.multi_agent_batch import MultiAgentBatch


class MissingColumnError(KeyError):
    """A column the loss (or stats) reads is not in the train batch."""

    def __str__(self):
        return str(self.args[0])


class _TrainBatch(dict):
    """The loss's view of a minibatch: names the policy when a column is missing."""

    def __init__(self, columns, policy_name: str, accessed=None):
        super().__init__(columns)
        self._policy_name = policy_name
        self._accessed = accessed

    def __getitem__(self, key):
        if self._accessed is not None:
            self._accessed.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        if self._accessed is not None:
            self._accessed.add(key)
        return super().get(key, default)

    def __missing__(self, key):
        raise MissingColumnError(
            f"The loss (or stats) of {self._policy_name} reads column {key!r}, which the train "
            f"batch lacks; it has {sorted(self)}. Add the column (e.g. in "
            "postprocess_trajectory) before learn_on_batch."
        )


def _is_numeric(leaf: Any) -> bool:
    leaf = np.asarray(leaf)
    return leaf.dtype != object and leaf.dtype.kind in "biuf"


def _normal_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype.kind == "f" else dtype


class TrainStep:
    """The compiled learning functions of one policy (see the module docstring).

    Args:
        policy: The TFPolicy; its `model`, `optimizer`, `strategy`, `loss`, `stats`,
            `config`, `num_grad_updates` and `num_traces` are used.
    """

    def __init__(self, policy):
        self._policy = policy
        self._strategy = policy.strategy
        self._num_replicas = policy.strategy.num_replicas_in_sync
        self._specs = None  # column -> (nested) TensorSpec [None, ...], fixed by batch 1
        for name in ("learn_on_batch", "compute_gradients", "apply_gradients"):
            policy.num_traces[name] = 0
        self._learn_dataset_fn = tf.function(self._learn_from_iterator)
        self._learn_graph_fn = None
        self._grads_fn = None
        variables = policy.model.trainable_variables
        self._apply_fn = tf.function(
            self._apply_graph,
            input_signature=[[tf.TensorSpec(v.shape, v.dtype) for v in variables]],
        )

    # ------------------------------------------------------------- host side

    def learn(self, samples: Any) -> Dict[str, float]:
        """Runs one `learn_on_batch`; returns stats averaged over minibatches."""
        policy = self._policy
        columns, num_rows = self._columns(samples)
        minibatch = policy.config["sgd_minibatch_size"] or num_rows
        num_epochs = policy.config["num_sgd_iter"]
        if minibatch > num_rows:
            raise ValueError(
                f"learn_on_batch(): sgd_minibatch_size={minibatch} is larger than the batch "
                f"({num_rows} rows). Lower sgd_minibatch_size or pass a larger batch."
            )
        self._check_divisible(minibatch, "sgd_minibatch_size")
        seed = int(policy._np_random.integers(2**31))
        shuffle = bool(policy.config["shuffle_sequences"])
        if policy.config["learn_input"] == "tf_data":
            dataset = to_dataset(columns, batch_size=minibatch, num_epochs=num_epochs, seed=seed,
                                 shuffle=shuffle)
            iterator = iter(self._strategy.experimental_distribute_dataset(dataset))
            num_steps = num_epochs * (num_rows // minibatch)
            stats = self._learn_dataset_fn(iterator, tf.constant(num_steps, tf.int64))
        elif policy.config["learn_input"] == "in_graph":
            if self._learn_graph_fn is None:
                self._learn_graph_fn = tf.function(self._learn_in_graph, input_signature=[
                    self._specs, tf.TensorSpec((2,), tf.int64), tf.TensorSpec((), tf.int32),
                    tf.TensorSpec((), tf.int32), tf.TensorSpec((), tf.bool)])
            stats = self._learn_graph_fn(columns, tf.constant([seed, 0], tf.int64),
                                         tf.constant(num_epochs, tf.int32),
                                         tf.constant(minibatch, tf.int32), tf.constant(shuffle))
        else:
            raise ValueError(
                f"learn_on_batch(): config['learn_input'] must be 'in_graph' or 'tf_data'; "
                f"received {policy.config['learn_input']!r}."
            )
        stats = {k: float(v) for k, v in stats.items()}
        stats["num_grad_updates"] = int(policy.num_grad_updates.numpy())
        stats["num_traces"] = policy.num_traces["learn_on_batch"]
        return stats

    def gradients(self, samples: Any) -> Tuple[List[np.ndarray], Dict[str, float]]:
        """Gradients (numpy, one per trainable variable) and stats on the whole batch."""
        columns, num_rows = self._columns(samples)
        self._check_divisible(num_rows, "the batch size")
        if self._grads_fn is None:
            self._grads_fn = tf.function(self._grads_graph, input_signature=[self._specs])
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

    def _columns(self, samples: Any) -> Tuple[Dict[str, Any], int]:
        """The train columns of `samples` as numpy, checked against the fixed specs."""
        name = type(self._policy).__name__
        if isinstance(samples, MultiAgentBatch):
            raise TypeError(
                f"{name}.learn_on_batch() takes one policy's SampleBatch; received a "
                f"MultiAgentBatch with policies {sorted(samples.policy_batches)}."
            )
        if not isinstance(samples, dict):
            raise TypeError(
                f"{name}.learn_on_batch() takes a SampleBatch or a dict of columns; received "
                f"{type(samples).__name__}."
            )
        if Columns.SEQ_LENS in samples:
            raise NotImplementedError(
                f"{name}.learn_on_batch(): sequence batches (with 'seq_lens') are not "
                "supported yet."
            )
        if self._specs is None:
            self._specs = self._discover_specs(samples)
        missing = [c for c in self._specs if c not in samples]
        if missing:
            raise MissingColumnError(
                f"{name}.learn_on_batch(): the batch lacks columns {missing}, which the loss "
                f"reads; it has {sorted(samples)}."
            )
        if Columns.ACTIONS in self._specs:
            error = space_specs.action_error(self._policy.action_space, samples[Columns.ACTIONS])
            if error:
                raise ValueError(f"{name}.learn_on_batch(): {error}; action space "
                                 f"{self._policy.action_space}.")
        columns = {}
        for column, spec in self._specs.items():
            value = samples[column]
            if column == Columns.OBS:
                value = space_specs.to_batch(self._policy.observation_space, value,
                                             "samples['obs']")
            columns[column] = tree.map_structure(
                lambda v, s: self._cast(column, v, s), value, spec)
        lengths = {c: len(tree.flatten(v)[0]) for c, v in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"{name}.learn_on_batch(): columns have different lengths: {lengths}.")
        return columns, next(iter(lengths.values()))

    def _cast(self, column: str, value: Any, spec: tf.TensorSpec) -> np.ndarray:
        value = np.asarray(value)
        dtype = spec.dtype.as_numpy_dtype
        if value.dtype == object or not np.can_cast(value.dtype, dtype, "same_kind"):
            raise TypeError(
                f"learn_on_batch(): column {column!r} has dtype {value.dtype}; the compiled "
                f"train step takes {np.dtype(dtype)} (fixed by the first batch)."
            )
        if tuple(value.shape[1:]) != tuple(spec.shape[1:]):
            raise ValueError(
                f"learn_on_batch(): column {column!r} must have shape "
                f"{space_specs.batch_shape_str(tuple(spec.shape[1:]))} (fixed by the first batch); "
                f"received {value.shape}."
            )
        return value.astype(dtype, copy=False)

    def _discover_specs(self, samples: Dict[str, Any]) -> Dict[str, Any]:
        """Specs of the numeric columns that loss and stats read (one symbolic trace)."""
        policy = self._policy
        candidates = {}
        for column, value in samples.items():
            if column == Columns.INFOS or not all(_is_numeric(v) for v in tree.flatten(value)):
                continue
            candidates[column] = tree.map_structure(
                lambda v: tf.TensorSpec((None,) + np.shape(v)[1:],
                                        tf.as_dtype(_normal_dtype(np.asarray(v).dtype))), value)
        if Columns.OBS in candidates:
            candidates[Columns.OBS] = space_specs.batch_spec(policy.observation_space)
        accessed, missing = set(), []

        def probe(batch):
            train_batch = _TrainBatch(batch, type(policy).__name__, accessed)
            policy.tower_stats.clear()
            try:
                loss = policy.loss(policy.model, policy.dist_class, train_batch)
                policy.stats(train_batch)
            except MissingColumnError as e:  # re-raised below, without autograph's wrapping
                missing.append(e)
                return tf.constant(0.0)
            return loss

        tf.function(probe).get_concrete_function(candidates)
        policy.tower_stats.clear()
        if missing:
            raise MissingColumnError(str(missing[0]))
        return {c: candidates[c] for c in candidates if c in accessed}

    # ---------------------------------------------------------- compiled side

    def _learn_from_iterator(self, iterator, num_steps):
        self._policy.num_traces["learn_on_batch"] += 1
        totals = self._minibatch_step(next(iterator))
        for _ in tf.range(num_steps - 1):
            stats = self._minibatch_step(next(iterator))
            totals = tree.map_structure(tf.add, totals, stats)
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

        totals = step_fn(0)
        for step in tf.range(1, num_steps):
            totals = tree.map_structure(tf.add, totals, step_fn(step))
        return {k: v / tf.cast(num_steps, v.dtype) for k, v in totals.items()}

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
        train_batch = _TrainBatch(batch, type(policy).__name__)
        policy.tower_stats.clear()
        variables = policy.model.trainable_variables
        with tf.GradientTape() as tape:
            loss = policy.loss(policy.model, policy.dist_class, train_batch)
        grads = tape.gradient(loss, variables)
        stats = {"total_loss": loss, **policy.stats(train_batch)}
        return grads, variables, stats

    def _replica_step(self, batch):
        grads, variables, stats = self._loss_and_grads(batch)
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
