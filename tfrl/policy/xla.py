"""XLA for the learner: `config["jit_compile"]` (a tfrl extension; default False).

What: each replica's loss and gradients (the model's forward and backward pass, the bulk
of a step's work) run as one `tf.function(jit_compile=True)` called from the replica
step (`compile_loss_and_grads`). Why only that part: the non-finite guard's `tf.cond`,
the all-reduces of the optimizer update and the update itself stay in the outer graph,
because XLA on CPU does not compile a cross-replica `tf.cond`; and `learn` stays one
call per learning phase.

An op XLA cannot compile (string ops, some tfp samplers) fails the first
`learn_on_batch` with an `XlaCompileError` naming the op and the fix
(`jit_compile=False`); nothing falls back silently. XLA compiles once per input shape,
so minibatches of sequences are padded to a multiple of `XLA_SEQUENCE_BUCKET` sequences
(`padded_sequences`).

`global_mean` lives here because it is the one loss helper whose meaning depends on
XLA: inside an XLA-compiled replica it cannot all-reduce its row count.
"""

import re
import threading
from typing import Any, Callable, Optional

import tensorflow as tf
import tree

from tfrl.core.columns import Columns

# The allowed values of `config["jit_compile"]` (see `PolicyConfig`).
JIT_COMPILE_VALUES = (False, True)

# With `jit_compile`, a minibatch of sequences is padded up to a multiple of this many
# sequences (each padding sequence has length 0: masked out of the loss and the stats):
# XLA compiles the replica step once per input shape, and the number of sequences per
# minibatch follows the batch's episode ends (`sequence_minibatch`).
XLA_SEQUENCE_BUCKET = 4


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


def check_jit_compile(value: Any, owner: str) -> bool:
    """`config["jit_compile"]`, checked: True or False (no truthy stand-ins)."""
    if not any(value is allowed for allowed in JIT_COMPILE_VALUES):
        raise ValueError(
            f"{owner}: config['jit_compile'] must be True or False "
            f"(True: compile each replica's loss and gradients with XLA); received "
            f"{value!r} ({type(value).__name__}).")
    return value


def is_xla_compile_error(error: Exception) -> bool:
    """Whether a TensorFlow error raised by a learning call is XLA refusing to compile."""
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


def compile_loss_and_grads(loss_and_grads: Callable, policy_name: str,
                           num_replicas: int) -> Callable:
    """`loss_and_grads(batch) -> (grads, stats)` as one XLA-compiled `tf.function`.

    With several replicas the trace is marked (so that `global_mean` does not
    all-reduce), and a cross-replica call in the loss becomes an `XlaCompileError`.
    """
    several = num_replicas > 1

    def compiled(batch):
        if several:
            _XLA_REPLICA_TRACE.policy = policy_name
        try:
            return loss_and_grads(batch)
        except RuntimeError as error:  # a merge_call (all-reduce) in the user's loss
            if several and "merge_call" in str(error):
                raise XlaCompileError(
                    policy_name,
                    f"the loss makes a cross-replica call (merge_call/all_reduce) under "
                    f"{num_replicas} replicas, which cannot run inside the "
                    "XLA-compiled replica step", replicas=True) from error
            raise
        finally:
            if several:
                _XLA_REPLICA_TRACE.policy = None

    return tf.function(compiled, jit_compile=True, autograph=False)


def padded_sequences(columns: Any, rows: tf.Tensor) -> Any:
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
