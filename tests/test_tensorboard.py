"""tfrl.utils.tensorboard: tags grouped by prefix, values and histograms read back with
TensorBoard's EventAccumulator (TF2 summaries are tensors), policy graphs."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tfrl.utils.tensorboard import TensorBoardLogger, result_tag

RESULT = {
    "timesteps_total": 64, "training_iteration": 1, "episode_reward_mean": 9.5,
    "episodes_this_iter": 2, "done": False, "timestamp": 5,
    "hist_stats": {"episode_reward": [1.0, 2.0, 3.0], "episode_lengths": [1, 2, 3],
                   "empty": []},
    "sampler_perf": {"mean_env_wait_ms": 0.25},
    "policy_reward_mean": {"p0": 4.0},
    "info": {"learner": {"p0": {"learner_stats": {"kl": 0.125, "num_traces": 1},
                                "num_traces": {"learn_on_batch": 1, "compute_actions": 2}}},
             "num_env_steps_sampled": 64},
    "counters": {"num_env_steps_sampled": 64},
    "timers": {"learn_time_ms": 3.0}, "time_this_iter_s": 0.5,
    "evaluation": {"episode_reward_mean": 20.0, "hist_stats": {"episode_reward": [20.0]}},
}

EXPECTED_SCALARS = {
    "counters/timesteps_total": 64.0, "counters/training_iteration": 1.0,
    "sampler/episode_reward_mean": 9.5, "sampler/episodes_this_iter": 2.0,
    "debug/misc/timestamp": 5.0, "debug/sampler/sampler_perf/mean_env_wait_ms": 0.25,
    "sampler/policy_reward_mean/p0": 4.0, "learner/p0/kl": 0.125,
    "debug/learner/p0/num_traces": 1.0, "debug/learner/p0/num_traces/learn_on_batch": 1.0,
    "debug/learner/p0/num_traces/compute_actions": 2.0,
    "debug/counters/num_env_steps_sampled": 64.0,
    "timers/learn_time_ms": 3.0, "timers/time_this_iter_s": 0.5,
    "evaluation/episode_reward_mean": 20.0,
}


def read_tensors(logdir):
    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return {tag: [(e.step, tf.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)]
            for tag in acc.Tags()["tensors"]}


@pytest.mark.parametrize("key, tag", [
    ("info/learner/p0/learner_stats/kl", "learner/p0/kl"),
    ("info/learner/p0/num_traces/value", "debug/learner/p0/num_traces/value"),
    ("info/learner/p0/learner_stats/num_grad_updates", "debug/learner/p0/num_grad_updates"),
    ("info/learner/p0/learner_stats/total_loss", "learner/p0/total_loss"),
    ("info/num_env_steps_sampled", None),
    ("num_agent_steps_trained", "debug/counters/num_agent_steps_trained"),
    ("timesteps_total", "counters/timesteps_total"),
    ("training_iteration", "counters/training_iteration"),
    ("episodes_total", "counters/episodes_total"),
    ("time_total_s", "timers/time_total_s"),
    ("custom_metrics/length_mean", "sampler/custom_metrics/length_mean"),
    ("num_faulty_episodes", "debug/sampler/num_faulty_episodes"),
    ("sampler_perf/mean_env_wait_ms", "debug/sampler/sampler_perf/mean_env_wait_ms"),
    ("episode_reward_mean", "sampler/episode_reward_mean"),
    ("episodes_this_iter", "sampler/episodes_this_iter"),
    ("timers/learn_throughput", "timers/learn_throughput"),
    ("evaluation/episode_len_mean", "evaluation/episode_len_mean"),
    ("something_else", "debug/misc/something_else"),
    ("timestamp", "debug/misc/timestamp"),
])
def test_result_tag_groups_by_prefix(key, tag):
    assert result_tag(key) == tag


def test_log_result_writes_grouped_scalars_read_back_as_tensors(tmp_path):
    logger = TensorBoardLogger(str(tmp_path))
    written = logger.log_result(RESULT)
    logger.log_result({**RESULT, "timesteps_total": 128, "episode_reward_mean": 11.0})
    logger.close()
    assert written == EXPECTED_SCALARS
    tensors = read_tensors(tmp_path)
    assert set(tensors) == set(EXPECTED_SCALARS) | {
        "hist_stats/episode_reward", "hist_stats/episode_lengths",
        "evaluation/hist_stats/episode_reward"}
    assert [(s, float(v)) for s, v in tensors["sampler/episode_reward_mean"]] == [
        (64, 9.5), (128, 11.0)]
    assert float(tensors["debug/learner/p0/num_traces/compute_actions"][0][1]) == 2.0
    # Internals are one group: every tag is under a user-facing group or debug/.
    top = {tag.split("/")[0] for tag in tensors}
    assert top == {"counters", "sampler", "learner", "timers", "evaluation", "hist_stats",
                   "debug"}


def test_hist_stats_become_histograms(tmp_path):
    logger = TensorBoardLogger(str(tmp_path), step_key="training_iteration")
    logger.log_result(RESULT)
    logger.close()
    step, buckets = read_tensors(tmp_path)["hist_stats/episode_reward"][0]
    assert step == 1
    assert buckets.shape[1] == 3  # [left edge, right edge, count] rows.
    assert buckets[:, 2].sum() == 3
    assert buckets[0, 0] == 1.0 and buckets[-1, 1] == 3.0


def test_explicit_step_and_missing_step_key(tmp_path):
    logger = TensorBoardLogger(str(tmp_path))
    logger.log_result({"episode_reward_mean": 1.0}, step=7)
    with pytest.raises(KeyError, match="no 'timesteps_total' to use as the step"):
        logger.log_result({"episode_reward_mean": 1.0})
    logger.close()
    assert read_tensors(tmp_path)["sampler/episode_reward_mean"][0][0] == 7


class _StubPolicy:
    def __init__(self, model, recurrent=False):
        self.model = model
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
        self._recurrent = recurrent

    def is_recurrent(self):
        return self._recurrent


def test_policy_graphs_are_written_per_policy(tmp_path):
    model = keras.Sequential([keras.layers.Dense(3, name="logits_layer")])
    logger = TensorBoardLogger(str(tmp_path))
    written = logger.log_policy_graphs({
        "p0": _StubPolicy(model), "rnn": _StubPolicy(model, recurrent=True),
        "no_model": _StubPolicy(None)})
    logger.close()
    assert written == {"p0": str(tmp_path / "graphs" / "p0")}
    acc = EventAccumulator(written["p0"])
    acc.Reload()
    assert acc.Tags()["graph"]
    names = [node.name for node in acc.Graph().node]
    assert any("logits_layer" in n and n.endswith("MatMul") for n in names)
