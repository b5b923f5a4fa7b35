"""The learner's non-finite guard: no NaN/inf reaches the weights.

What: every optimizer step of the compiled learning loop checks its loss and global
gradient norm (summed over replicas, so every replica agrees) with `tf.math.is_finite`
(`check_step`); the update chain applies the step under a `tf.cond` on that check, so
a NaN/inf never reaches the weights, the optimizer's slots, nor the learner statistics
that persist across updates (`TFPolicy.commit_step_stats` runs in the same branch as
the update). This module keeps the guard's bookkeeping in the loop (`run_loop`: the
sums of the stats over the applied steps, the counts of applied and refused steps) and
turns it into `learn`'s result or a `NonFiniteUpdateError` on the host (`finish`).

Why in the loop rather than after it: a step refused in the graph costs nothing to
undo, and `config["nonfinite_updates"]` (see `PolicyConfig`) can choose between
"raise" (the loop stops at such a step; `learn` raises naming the policy, the stats
and the step) and "skip" (the loop goes on; `num_nonfinite_updates_skipped` counts the
refused steps, the stats are the means over the applied ones).
"""

import logging
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from tfrl.policy.nonfinite import NonFiniteUpdateError

logger = logging.getLogger(__name__)

# Keys of the guard's entries in the compiled loop's stats (see `_add_step`).
FINITE = "_guard/finite"  # a step's: 1.0 if its loss and gradients were finite
GRAD_NORM = "_guard/grad_norm"  # a step's: the global gradient norm
_NUM_FINITE = "_guard/num_finite"  # the loop's: finite (applied) steps
_NUM_BAD = "_guard/num_nonfinite"  # the loop's: non-finite (skipped) steps
_LAST = "_guard/last/"  # + stat: its value at the loop's last step ("raise" mode)
# A replica's real (unpadded) timesteps in its share of a batch of sequences: the weight of
# its stats in the mean over replicas (see `TrainStep._reduce_stats`).
WEIGHT = "_guard/real_steps"


def is_guard_key(key: str) -> bool:
    """Whether a stats key is the guard's (not a loss statistic)."""
    return key.startswith("_guard/")


def check_step(grads: Sequence[Optional[tf.Tensor]], loss: tf.Tensor, clip: Any,
               context: Any, several: bool) -> Tuple[List[Optional[tf.Tensor]], tf.Tensor,
                                                      tf.Tensor]:
    """In a replica: the (clipped) gradients, the guard's finite flag and the norm.

    One global norm serves both: `grad_clip` scales the gradients by the global norm of
    the gradients summed over replicas (Keras' `global_clipnorm` would clip each
    replica's share before the optimizer sums them, which is not what one device
    computes), and the guard checks the loss (summed over replicas) and that norm, so
    every replica agrees. Without `grad_clip` the norm is the sum of the replicas' own
    norms (finite exactly when each is).

    Returns:
        `(grads, finite, norm)`: `finite` 1.0 or 0.0, `norm` before clipping.
    """
    present = [g for g in grads if g is not None]
    loss = tf.cast(loss, tf.float32)
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
    return list(grads), finite, checked[1]


def run_loop(num_steps: tf.Tensor, step_fn: Callable[[tf.Tensor], Dict[str, tf.Tensor]],
             stat_shapes: Optional[Dict[str, Any]], halt: bool,
             owner: str) -> Dict[str, tf.Tensor]:
    """The means of `step_fn(i)`'s stats over the applied steps i in [0, num_steps), in
    one `tf.while_loop`, with the guard's counts; with `halt` ("raise") the loop stops
    after the first non-finite step.

    With `stat_shapes` (the stats' shapes, known when the optimizer's variables exist)
    the step is traced once inside the loop; otherwise step 0 runs (and is traced) before
    the loop, creating the optimizer's variables there.
    """
    if stat_shapes is not None:
        zeros = {k: tf.zeros(shape, tf.float32) for k, shape in stat_shapes.items()}

        def checked_step(i):
            stats = step_fn(i)
            user = sorted(k for k in stats if not is_guard_key(k))
            if user != sorted(zeros):
                raise ValueError(
                    f"{owner}: the loss and stats returned {user} in the train step but "
                    f"{sorted(zeros)} when first traced; stats must return the same keys "
                    "on every call.")
            return stats

        totals = _sum_loop(num_steps, checked_step, _guard_totals(zeros, halt), halt)
    else:
        first = step_fn(tf.zeros_like(num_steps))
        totals = _add_step(_guard_totals(first, halt), first, halt)
        totals = _sum_loop(num_steps, step_fn, totals, halt, start=1)
    count = totals.get(_NUM_FINITE)
    count = tf.cast(num_steps, tf.float32) if count is None else tf.maximum(count, 1.0)
    return {k: (v if is_guard_key(k) else v / count) for k, v in totals.items()}


def _sum_loop(num_steps: tf.Tensor, step_fn, totals: Dict[str, tf.Tensor],
              halt: bool, start: int = 0) -> Dict[str, tf.Tensor]:
    """`totals` with `step_fn(i)` for i in [start, num_steps) added in (`_add_step`).

    The totals travel through the loop stacked into one float32 vector when they are all
    scalars (the built-in losses' stats are): every loop variable costs ~0.1 MB of memory
    when TensorFlow instantiates the function, and there are two per statistic. The sums
    are the same element-wise additions.
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
        return i + 1, pack(_add_step(unpack(acc), step_fn(i), halt))

    def more(i, acc):
        if halt:
            num_bad = acc[keys.index(_NUM_BAD)] if packed else acc[_NUM_BAD]
            return tf.logical_and(i < num_steps, num_bad < 0.5)
        return i < num_steps

    _, totals = tf.while_loop(more, body, (tf.zeros_like(num_steps) + start, pack(totals)))
    return unpack(totals)


def _guard_totals(stats: Dict[str, tf.Tensor], halt: bool) -> Dict[str, tf.Tensor]:
    """The loop's starting totals (zeros) for steps whose stats look like `stats`."""
    user = {k: v for k, v in stats.items() if not is_guard_key(k)}
    totals = {k: tf.zeros_like(v) for k, v in user.items()}
    totals[_NUM_BAD] = tf.constant(0.0)
    if halt:
        totals.update({_LAST + k: tf.zeros_like(v) for k, v in user.items()})
        totals[_LAST + "grad_norm"] = tf.constant(0.0)
    else:
        totals[_NUM_FINITE] = tf.constant(0.0)
    return totals


def _add_step(acc: Dict[str, tf.Tensor], stats: Dict[str, tf.Tensor],
              halt: bool) -> Dict[str, tf.Tensor]:
    """`acc` with one step's stats added in, and the guard's counts.

    With `halt` the loop ends at the first non-finite step (whose stats are then the
    `_LAST` entries; the sums are not used), so the stats are summed as they are; else
    only the finite steps' stats are summed and those steps counted.
    """
    stats = dict(stats)
    finite = stats.pop(FINITE)  # 1.0 or 0.0
    norm = stats.pop(GRAD_NORM)
    new = {_NUM_BAD: acc[_NUM_BAD] + (1.0 - finite)}
    if halt:
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


def finish(stats: Dict[str, np.ndarray], owner: str, halt: bool, updates_before: int,
           num_grad_updates: int, num_steps: int) -> Dict[str, float]:
    """On the host: the loop's stats without the guard's entries, plus
    `num_nonfinite_updates_skipped`; empty of loss stats if no step was applied.

    Raises:
        NonFiniteUpdateError: With `halt`, if a step was non-finite (the stats at it).
    """
    stats = dict(stats)
    num_bad = int(stats.pop(_NUM_BAD))
    stats.pop(_NUM_FINITE, None)
    at_bad = {k[len(_LAST):]: stats.pop(k) for k in list(stats) if k.startswith(_LAST)}
    if num_bad and halt:
        first_bad = num_grad_updates - updates_before  # the steps before it were applied
        # total_loss, the other stats by name, grad_norm last.
        order = sorted(at_bad, key=lambda k: (k != "total_loss", k == "grad_norm", k))
        named = {k: (float(at_bad[k]) if np.ndim(at_bad[k]) == 0
                     else np.asarray(at_bad[k]).tolist())
                 for k in order if not np.all(np.isfinite(at_bad[k]))}
        raise NonFiniteUpdateError(owner, named, first_bad, num_steps, num_grad_updates)
    if num_bad and num_grad_updates == updates_before:
        # "skip" and no step applied: a mean over no step does not exist (a 0 would read
        # as a real KL to `update_kl`, or a loss); the counts say what happened.
        stats = {}
    result = {k: float(v) for k, v in stats.items()}
    result["num_nonfinite_updates_skipped"] = num_bad
    return result


def refuses_gradients(gradients: Sequence[np.ndarray], owner: str, halt: bool,
                      num_grad_updates: int) -> bool:
    """The guard of `apply_gradients`: whether given gradients (numpy) with a non-finite
    global norm are to be skipped (with a warning).

    Raises:
        NonFiniteUpdateError: With `halt`, if their norm is not finite.
    """
    norm = float(np.sqrt(sum(np.sum(np.square(g, dtype=np.float64)) for g in gradients)))
    if np.isfinite(norm):
        return False
    if halt:
        raise NonFiniteUpdateError(owner, {"grad_norm": norm}, 0, 1, num_grad_updates,
                                   call="apply_gradients")
    logger.warning("%s.apply_gradients(): skipped gradients with a non-finite norm "
                   "(nonfinite_updates='skip').", owner)
    return True
