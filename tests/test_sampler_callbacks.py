"""Sampler callbacks: order, the episode and env index they get, custom metrics and
extra batches."""

import numpy as np
import pytest

from tfrl.algorithms.callbacks import DefaultCallbacks

from sampler_helpers import DictOnlyBaseEnv, counter_vector_env, counter_worker, make_sampler

PATHS = ["vector", "generic"]


class Recorder(DefaultCallbacks):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.events = []

    def on_episode_start(self, *, worker, base_env, policies, episode, env_index, **kwargs):
        assert episode.env_id == env_index and "default_policy" in policies
        # As in RLlib, the hook sees the raw reset observation and infos, not yet the
        # (preprocessed) observation.
        assert episode.last_observation_for() is None
        self.events.append(("start", env_index, episode.episode_id, episode.length,
                            np.asarray(episode.last_raw_obs_for(), np.float64).tolist()))

    def on_episode_step(self, *, episode, env_index, **kwargs):
        self.events.append(("step", env_index, episode.episode_id, episode.length,
                            episode.last_observation_for().tolist()))

    def on_postprocess_trajectory(self, *, episode, agent_id, policy_id, postprocessed_batch,
                                  original_batches, **kwargs):
        assert agent_id == "agent0" and policy_id == "default_policy"
        assert list(original_batches) == ["agent0"]
        self.events.append(("postprocess", episode.env_id, episode.episode_id,
                            postprocessed_batch.count))

    def on_episode_end(self, *, episode, env_index, **kwargs):
        episode.custom_metrics["last_reward"] = episode.last_reward_for()
        episode.hist_data["t"] = [episode.length]
        self.events.append(("end", env_index, episode.episode_id, episode.length,
                            episode.total_reward, episode.last_done_for()))


@pytest.mark.parametrize("path", PATHS)
def test_callbacks_in_order_with_the_right_episode(path):
    callbacks = Recorder()
    worker = counter_worker(callbacks=callbacks)
    env = counter_vector_env(2, lengths=[2, 3])
    env = env if path == "vector" else DictOnlyBaseEnv(env)
    sampler = make_sampler(worker, env, rollout_fragment_length=float("inf"),
                           multiple_episodes_in_batch=False)
    sampler.next()
    sampler.next()
    events = callbacks.events
    ids = {(e[1], e[2]) for e in events}
    eps0 = [e for e in events if e[1] == 0 and e[2] == events[0][2]]
    assert [e[0] for e in eps0] == ["start", "step", "step", "postprocess", "end"]
    assert eps0[0][3:] == (0, [0.0, 0.0, 0.0])  # reset obs [index, episode, t]
    assert [e[3:] for e in eps0[1:3]] == [(1, [0.0, 0.0, 1.0]), (2, [0.0, 0.0, 2.0])]
    assert eps0[3][3] == 2 and eps0[4][3:] == (2, 13.0, True)  # rewards 1 + 12
    assert events[:2] == [events[0], events[1]] and events[1][0] == "start"
    assert events[1][1] == 1  # env 1 starts right after env 0, in env order
    assert len(ids) >= 3
    metrics = sampler.get_metrics()
    assert metrics[0].custom_metrics == {"last_reward": 12.0}
    assert metrics[0].hist_data == {"t": [2]}


class ExtraBatches(DefaultCallbacks):
    def on_postprocess_trajectory(self, *, episode, postprocessed_batch, **kwargs):
        episode.add_extra_batch(postprocessed_batch.copy())


def test_extra_batches_are_returned_with_the_next_fragment():
    worker = counter_worker(callbacks=ExtraBatches())
    sampler = make_sampler(worker, counter_vector_env(1, lengths=[3]), rollout_fragment_length=3)
    batch = sampler.next()
    assert batch.count == 6
    np.testing.assert_array_equal(batch["obs"][:3], batch["obs"][3:])
    assert sampler.get_extra_batches() == []
    sampler.get_data()
    assert [b.count for b in sampler.get_extra_batches()] == [3]


class HorizonRecorder(DefaultCallbacks):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.events = []

    def on_episode_start(self, *, episode, **kwargs):
        self.events.append(("start", episode.length, episode.last_done_for()))

    def on_episode_end(self, *, episode, **kwargs):
        self.events.append(("end", episode.length, episode.last_truncated_for(),
                            episode.last_terminated_for()))


@pytest.mark.parametrize("path", PATHS)
def test_soft_horizon_episode_flags_in_callbacks(path):
    callbacks = HorizonRecorder()
    env = counter_vector_env(1, lengths=[5])
    env = env if path == "vector" else DictOnlyBaseEnv(env)
    sampler = make_sampler(counter_worker(callbacks=callbacks), env, horizon=3,
                           soft_horizon=True, rollout_fragment_length=5)
    batch = sampler.next()
    # RLlib: a soft-horizon cut ends the logical episode (on_episode_end) and the same
    # Episode goes on after soft_reset(); on_episode_start fires only for a (re)set env.
    assert callbacks.events == [("start", 0, False), ("end", 3, True, False),
                                ("end", 2, False, True)]
    assert len(set(batch["eps_id"].tolist())) == 2  # two logical episodes in the batch


def test_a_hard_horizon_starts_a_new_episode_with_on_episode_start():
    callbacks = HorizonRecorder()
    sampler = make_sampler(counter_worker(callbacks=callbacks), counter_vector_env(1, lengths=[10]),
                           horizon=3, rollout_fragment_length=7)
    sampler.next()
    assert callbacks.events == [("start", 0, False), ("end", 3, True, False),
                                ("start", 0, False), ("end", 3, True, False),
                                ("start", 0, False)]
