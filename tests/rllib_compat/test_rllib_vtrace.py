"""RLlib's V-trace tests, ported to tfrl.

Ports `rllib/algorithms/impala/tests/test_vtrace.py` of ray-project/ray at commit
229f788028f1ff0cc195113742a6a1e0af227b2e: `test_log_probs_from_logits_and_actions`,
`test_vtrace`, `test_vtrace_from_logits`, `test_higher_rank_inputs_for_importance_weights`,
`test_inconsistent_rank_inputs_for_importance_weights` (the eager TF branches; torch and
the TF1 placeholder/session branches dropped). RLlib's module `vtrace_tf` is
`tfrl.algorithms.impala.vtrace_tf`, a re-export of `tfrl.algorithms.impala.vtrace`.
"""

import numpy as np
import pytest
import tensorflow as tf
from compat_helpers import check
from gymnasium.spaces import Box

from tfrl.algorithms.impala import vtrace_tf
from tfrl.utils.numpy import softmax

RLLIB_PATH = "rllib/algorithms/impala/tests/test_vtrace.py"
RLLIB_COMMIT = "229f788028f1ff0cc195113742a6a1e0af227b2e"


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    tf.random.set_seed(0)


def _space(low, high, shape, dtype=np.float32, seed=0):
    space = Box(low, high, shape, dtype)
    space.seed(seed)
    return space


def _ground_truth_vtrace_calculation(discounts, log_rhos, rewards, values, bootstrap_value,
                                     clip_rho_threshold, clip_pg_rho_threshold):
    """RLlib's ground truth: V-trace by its defining sum, in numpy (time-major)."""
    vs = []
    seq_len = len(discounts)
    rhos = np.exp(log_rhos)
    cs = np.minimum(rhos, 1.0)
    clipped_rhos = rhos
    if clip_rho_threshold:
        clipped_rhos = np.minimum(rhos, clip_rho_threshold)
    clipped_pg_rhos = rhos
    if clip_pg_rho_threshold:
        clipped_pg_rhos = np.minimum(rhos, clip_pg_rho_threshold)
    # v_s = V(x_s) + sum_{t=s}^{T-1} gamma^{t-s} prod_{i=s}^{t-1} c_i
    #       * rho_t (r_t + gamma V(x_{t+1}) - V(x_t))   (np.prod([]) == 1)
    values_t_plus_1 = np.concatenate([values[1:], bootstrap_value[None, :]], axis=0)
    for s in range(seq_len):
        v_s = np.copy(values[s])
        for t in range(s, seq_len):
            v_s += (np.prod(discounts[s:t], axis=0) * np.prod(cs[s:t], axis=0)
                    * clipped_rhos[t]
                    * (rewards[t] + discounts[t] * values_t_plus_1[t] - values[t]))
        vs.append(v_s)
    vs = np.stack(vs, axis=0)
    pg_advantages = clipped_pg_rhos * (
        rewards + discounts * np.concatenate([vs[1:], bootstrap_value[None, :]], axis=0)
        - values)
    return vs, pg_advantages


def test_log_probs_from_logits_and_actions():
    seq_len = 7
    num_actions = 3
    batch_size = 4

    policy_logits = _space(-1.0, 1.0, (seq_len, batch_size, num_actions)).sample()
    actions = np.random.randint(0, num_actions - 1, size=(seq_len, batch_size), dtype=np.int32)
    action_log_probs_tensor = vtrace_tf.log_probs_from_logits_and_actions(policy_logits,
                                                                          actions)

    # Ground truth: index the log-softmax with a mask of the actions.
    action_index_mask = actions[..., None] == np.arange(num_actions)

    def index_with_mask(array, mask):
        return array[mask].reshape(*array.shape[:-1])

    ground_truth_v = index_with_mask(np.log(softmax(policy_logits)), action_index_mask)
    check(action_log_probs_tensor, ground_truth_v)


def test_vtrace():
    seq_len = 5
    batch_size = 10
    # log_rhos in [-2.5, 2.5): rho from near 0 to above the clipping thresholds.
    space_w_time = _space(-1.0, 1.0, (seq_len, batch_size))
    space_only_batch = _space(-1.0, 1.0, (batch_size,))
    log_rhos = space_w_time.sample() / (batch_size * seq_len)
    log_rhos = 5 * (log_rhos - 0.5)
    values = {
        "log_rhos": log_rhos,
        # T, B where B_i: [0.9 / (i+1)] * T
        "discounts": np.array([[0.9 / (b + 1) for b in range(batch_size)]
                               for _ in range(seq_len)]),
        "rewards": space_w_time.sample(),
        "values": space_w_time.sample() / batch_size,
        "bootstrap_value": space_only_batch.sample() + 1.0,
        "clip_rho_threshold": 3.7,
        "clip_pg_rho_threshold": 2.2,
    }
    output = vtrace_tf.from_importance_weights(**values)
    gt_vs, gt_pg_advantages = _ground_truth_vtrace_calculation(**values)
    check(output.vs, gt_vs)
    check(output.pg_advantages, gt_pg_advantages)


def test_vtrace_from_logits():
    seq_len = 5
    batch_size = 15
    num_actions = 3
    clip_rho_threshold = None  # No clipping.
    clip_pg_rho_threshold = None  # No clipping.
    space = _space(-1.0, 1.0, (seq_len, batch_size, num_actions))
    action_space = _space(0, num_actions - 1, (seq_len, batch_size), dtype=np.int32)
    space_w_time = _space(-1.0, 1.0, (seq_len, batch_size))
    space_only_batch = _space(-1.0, 1.0, (batch_size,))

    inputs_ = {
        "behaviour_policy_logits": space.sample(),  # T, B, NUM_ACTIONS
        "target_policy_logits": space.sample(),  # T, B, NUM_ACTIONS
        "actions": action_space.sample(),
        "discounts": space_w_time.sample(),
        "rewards": space_w_time.sample(),
        "values": space_w_time.sample(),
        "bootstrap_value": space_only_batch.sample(),
    }
    from_logits_output = vtrace_tf.from_logits(
        clip_rho_threshold=clip_rho_threshold, clip_pg_rho_threshold=clip_pg_rho_threshold,
        **inputs_)

    target_log_probs = vtrace_tf.log_probs_from_logits_and_actions(
        inputs_["target_policy_logits"], inputs_["actions"])
    behaviour_log_probs = vtrace_tf.log_probs_from_logits_and_actions(
        inputs_["behaviour_policy_logits"], inputs_["actions"])
    log_rhos = target_log_probs - behaviour_log_probs

    from_iw = vtrace_tf.from_importance_weights(
        log_rhos=log_rhos, discounts=inputs_["discounts"], rewards=inputs_["rewards"],
        values=inputs_["values"], bootstrap_value=inputs_["bootstrap_value"],
        clip_rho_threshold=clip_rho_threshold, clip_pg_rho_threshold=clip_pg_rho_threshold)

    check(from_iw.vs, from_logits_output.vs)
    check(from_iw.pg_advantages, from_logits_output.pg_advantages)
    check(behaviour_log_probs, from_logits_output.behaviour_action_log_probs)
    check(target_log_probs, from_logits_output.target_action_log_probs)
    check(log_rhos, from_logits_output.log_rhos)


def test_higher_rank_inputs_for_importance_weights():
    inputs_ = {
        "log_rhos": _space(-1.0, 1.0, (8, 10, 1)).sample(),
        "discounts": _space(-1.0, 1.0, (8, 10, 1)).sample(),
        "rewards": _space(-1.0, 1.0, (8, 10, 42)).sample(),
        "values": _space(-1.0, 1.0, (8, 10, 42)).sample(),
        "bootstrap_value": _space(-1.0, 1.0, (10, 42)).sample(),
    }
    output = vtrace_tf.from_importance_weights(**inputs_)
    check(int(output.vs.shape[-1]), 42)


def test_inconsistent_rank_inputs_for_importance_weights():
    inputs_ = {
        "log_rhos": _space(-1.0, 1.0, (7, 15, 1)).sample(),
        "discounts": _space(-1.0, 1.0, (7, 15, 1)).sample(),
        "rewards": _space(-1.0, 1.0, (7, 15, 42)).sample(),
        "values": _space(-1.0, 1.0, (7, 15, 42)).sample(),
        # Should be [15, 42].
        "bootstrap_value": _space(-1.0, 1.0, (7,)).sample(),
    }
    with pytest.raises((ValueError, AssertionError), match="must have rank 2"):
        vtrace_tf.from_importance_weights(**inputs_)
