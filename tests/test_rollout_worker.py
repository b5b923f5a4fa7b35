"""RolloutWorker: construction, argument errors, policies, learning routing, state (no sampling).

Sampling with the real sampler is tested in test_rollout_worker_sampling.py; here the
sampler is a stub that records what the worker passes to it (contract C4), or
`input_creator` supplies batches.
"""

import dataclasses
import importlib.util
import inspect
import os
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest

from rollout_worker_helpers import CountingPolicy, TwoAgentEnv, agent_to_policy, install_stub_sampler
from toy_envs import CounterEnv
from tfrl.algorithms.callbacks import DefaultCallbacks
from tfrl.evaluation.rollout_worker import env as worker_env
from tfrl.evaluation.rollout_worker import RolloutWorker, get_global_worker
from tfrl.evaluation.rollout_worker.args import ARG_NAMES, WorkerArgs, check_worker_args
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.policy import PolicySpec
from tfrl.policy.sample_batch import SampleBatch
from tfrl.utils.compression import is_compressed
from tfrl.utils.filter import ConcurrentMeanStdFilter, MeanStdFilter, NoFilter

BOX3 = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


@pytest.fixture
def stub_sampler(monkeypatch):
    return install_stub_sampler(monkeypatch)


def no_env_worker(**kw):
    """A local worker of a set with remote workers: no env, spaces given."""
    kw.setdefault("policy_spec", CountingPolicy)
    kw.setdefault("spaces", {"default_policy": (BOX3, gym.spaces.Discrete(2))})
    return RolloutWorker(env_creator=lambda ctx: CounterEnv(), num_workers=1, **kw)


def ma_worker(**kw):
    return no_env_worker(
        policy_spec={"pa": (CountingPolicy, BOX3, gym.spaces.Discrete(2), {}),
                     "pb": PolicySpec(CountingPolicy, BOX3, gym.spaces.Discrete(2))},
        policy_mapping_fn=agent_to_policy, **kw)


def sb(n, start=0):
    return SampleBatch({"obs": np.arange(start, start + n, dtype=np.float32)[:, None].repeat(3, 1),
                        "rewards": np.ones(n, np.float32)})


# ----------------------------------------------------------------- argument errors

def test_unknown_keyword_names_closest_parameter():
    with pytest.raises(TypeError, match="Unknown RolloutWorker argument key 'num_env'. Did you mean 'num_envs'"):
        no_env_worker(num_env=2)
    with pytest.raises(ValueError, match="Did you mean 'rollout_fragment_length'"):
        no_env_worker(rollout_fragment_lenght=2)


def test_env_creator_is_required():
    with pytest.raises(TypeError, match="missing required keyword argument: 'env_creator'"):
        RolloutWorker(policy_spec=CountingPolicy)


def test_checked_arguments_are_a_frozen_dataclass_with_rllibs_keywords():
    w = no_env_worker(rollout_fragment_length=7, policy_config={"framework": "tfe"})
    assert isinstance(w.args, WorkerArgs)
    assert w.args.rollout_fragment_length == 7 and w.args.num_workers == 1
    assert w.args.policy_config == {"framework": "tfe"} and w.args.sample_async is False
    assert list(w.args.policy_specs) == ["default_policy"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.args.num_envs = 2
    assert len(ARG_NAMES) == 41 and ARG_NAMES[0] == "env_creator"
    params = inspect.signature(RolloutWorker).parameters
    assert list(params)[:41] == list(ARG_NAMES)
    assert params["rollout_fragment_length"].default == 100
    assert params["env_creator"].default is inspect.Parameter.empty


def test_simulation_input_evaluation_samples_async_for_metrics_only():
    args = check_worker_args(dict(env_creator=lambda ctx: CounterEnv(), policy_spec=CountingPolicy,
                                  input_evaluation=["simulation"]))
    assert args.sample_async is True and args.blackhole_outputs is True
    assert args.given["sample_async"] is False  # as given


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(policy_spec=None), ValueError, "Must provide `policy_spec`"),
    (dict(batch_mode="whole"), ValueError, "Unsupported batch mode: 'whole'"),
    (dict(policy_mapping_fn="pa"), ValueError, "`policy_mapping_fn` must be a callable"),
    (dict(count_steps_by="steps"), ValueError, "`count_steps_by` must be 'env_steps' or 'agent_steps'"),
    (dict(rollout_fragment_length=0), ValueError, "`rollout_fragment_length` must be an int >= 1"),
    (dict(num_envs=1.5), ValueError, "`num_envs` must be an int >= 1"),
    (dict(preprocessor_pref="atari"), ValueError, "`preprocessor_pref` must be"),
    (dict(observation_filter="MeanStd"), ValueError, "Did you mean 'MeanStdFilter'"),
    (dict(input_evaluation=[3]), ValueError, "Unknown evaluation method: 3. Known: .simulation., .is."),
    (dict(input_evaluation=["xyz"]), ValueError, "Unknown evaluation method: 'xyz'"),
    (dict(policy_config={"framework": "torch"}), ValueError, "framework='tf2' only; received framework='torch'"),
    (dict(callbacks=object()), TypeError, "`callbacks` must be a DefaultCallbacks subclass"),
    (dict(policies_to_train=["nope"]), ValueError, r"unknown policies \['nope'\]"),
    (dict(policies_to_train="default_policy"), TypeError, "must be a list of policy ids"),
    (dict(policy_config={"num_gpus": 1}), RuntimeError, r"num_gpus=1 GPUs but TensorFlow finds 0"),
    (dict(policy_spec={"p": (CountingPolicy, BOX3, gym.spaces.Discrete(2), {}, 5)}), ValueError,
     "has 5 items; expected at most 4"),
    (dict(policy_spec={"p": 3}), TypeError, r"policy_spec\['p'\] must be a PolicySpec"),
    (dict(policy_spec={"p": PolicySpec(None, BOX3, BOX3)}), ValueError, "has no policy_class"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        no_env_worker(**kwargs)


def test_remote_worker_gpu_check_uses_num_gpus_per_worker():
    with pytest.raises(RuntimeError, match="num_gpus_per_worker=1"):
        RolloutWorker(env_creator=lambda ctx: CounterEnv(), policy_spec=CountingPolicy,
                      worker_index=1, num_workers=1, policy_config={"num_gpus_per_worker": 1,
                                                                    "num_gpus": 0},
                      input_creator=lambda ioctx: None)
    w = no_env_worker(policy_config={"num_gpus": 2, "_fake_gpus": True})
    assert w.get_policy().config["num_gpus"] == 2


def test_missing_spaces_without_env():
    with pytest.raises(ValueError, match="`observation_space` not provided in the PolicySpec of 'default_policy'"):
        no_env_worker(spaces=None)


def test_env_creator_must_return_an_env(stub_sampler):
    with pytest.raises(ValueError, match="The env creator returned type"):
        RolloutWorker(env_creator=lambda ctx: CounterEnv, policy_spec=CountingPolicy)
    with pytest.raises(TypeError, match="`env_creator` must be a callable"):
        RolloutWorker(env_creator=3, policy_spec=CountingPolicy)


class _ResetCounter(CounterEnv):
    """CounterEnv counting its resets (and their seeds); `fail` makes reset() raise."""

    def __init__(self, fail=False, result=None, obs_shape=None):
        super().__init__()
        self.fail, self.result, self.resets = fail, result, []
        if obs_shape is not None:
            self.observation_space = gym.spaces.Box(0.0, 1000.0, obs_shape, np.float32)

    def reset(self, *, seed=None, options=None):
        self.resets.append(seed)
        if self.fail:
            raise RuntimeError("kaboom")
        out = super().reset(seed=seed, options=options)
        return self.result if self.result is not None else out


def test_env_check_resets_the_new_env_and_fails_the_construction():
    # RLlib's workers check their env right after creating it: a failing reset() fails
    # the worker's construction, not its first sample().
    with pytest.raises(RuntimeError, match="kaboom") as err:
        RolloutWorker(env_creator=lambda ctx: _ResetCounter(fail=True),
                      policy_spec=CountingPolicy)
    assert "in the env check right after the env was created" in "".join(err.value.__notes__)
    # disable_env_checking=True turns the check off: the env fails when sampled.
    w = RolloutWorker(env_creator=lambda ctx: _ResetCounter(fail=True), policy_spec=CountingPolicy,
                      policy_config={"disable_env_checking": True})
    with pytest.raises(RuntimeError, match="kaboom"):
        w.sample()


@pytest.mark.parametrize("env, match", [
    (lambda: _ResetCounter(result=np.zeros(3, np.float32)),
     r"_ResetCounter.reset\(\) returned array\(\[0., 0., 0.\], dtype=float32\); expected "
     r"gymnasium's tuple \(obs, info\)"),
    (lambda: _ResetCounter(obs_shape=(4,)),
     r"The observation of _ResetCounter.reset\(\) does not fit the env's observation space: "
     r"observation has shape \(3,\), expected \(4,\)"),
    (lambda: _ResetCounter(result=(np.zeros(3, np.float32), None)),
     r"_ResetCounter.reset\(\) returned an info of type NoneType; expected a dict"),
])
def test_env_check_errors_say_what_was_returned_and_how_to_skip_the_check(env, match):
    with pytest.raises(ValueError, match=match) as err:
        RolloutWorker(env_creator=lambda ctx: env(), policy_spec=CountingPolicy)
    assert "disable_env_checking=True" in str(err.value)


def test_env_check_of_a_seeded_env_is_its_seeding_reset():
    w = RolloutWorker(env_creator=lambda ctx: _ResetCounter(), policy_spec=CountingPolicy, seed=5,
                      rollout_fragment_length=4)
    assert w.env.resets == [5]  # one reset, with the env's seed: no random stream moves
    off = RolloutWorker(env_creator=lambda ctx: _ResetCounter(), policy_spec=CountingPolicy,
                        seed=5, rollout_fragment_length=4,
                        policy_config={"disable_env_checking": True})
    assert off.env.resets == [5]
    np.testing.assert_array_equal(w.sample()["obs"], off.sample()["obs"])
    assert w.env.resets == off.env.resets == [5, None, None]


@pytest.mark.parametrize("num_envs", [1, 2])
def test_env_check_reset_of_an_unseeded_env_starts_its_first_episode(num_envs):
    # The sampler does not reset sub-env 0 again: its first episode is the check's reset.
    w = RolloutWorker(env_creator=lambda ctx: _ResetCounter(), policy_spec=CountingPolicy,
                      num_envs=num_envs, rollout_fragment_length=4)
    assert w.env.resets == [None]
    batch = w.sample()
    assert w.env.resets == [None, None]  # the check's reset, then episode 1's
    first = batch["obs"][batch["env_id"] == 0]
    np.testing.assert_array_equal(first[:, 1:], [[0, 0], [0, 1], [0, 2], [1, 0]])


def test_env_check_of_a_multi_agent_env_starts_its_first_episode():
    resets = []

    class Counted(TwoAgentEnv):
        def reset(self, *, seed=None, options=None):
            resets.append(seed)
            return super().reset(seed=seed, options=options)

    w = RolloutWorker(env_creator=lambda ctx: Counted({"length": 4}),
                      policy_spec={"pa": (CountingPolicy, None, None, {}),
                                   "pb": (CountingPolicy, None, None, {})},
                      policy_mapping_fn=agent_to_policy, rollout_fragment_length=4)
    assert resets == [None]
    w.sample()
    assert resets == [None]  # one episode of 4 steps, started by the check's reset


def test_multiple_policies_need_multi_agent_env(stub_sampler):
    with pytest.raises(ValueError, match="Have multiple policies \\['p', 'q'\\], but the env CounterEnv"):
        RolloutWorker(env_creator=lambda ctx: CounterEnv(),
                      policy_spec={"p": CountingPolicy, "q": CountingPolicy})


def test_no_env_worker_cannot_sample():
    w = no_env_worker()
    assert w.env is None and w.async_env is None and w.sampler is None
    with pytest.raises(ValueError, match="create_env_on_driver"):
        w.sample()
    assert w.get_metrics() == [] and w.foreach_env(lambda e: e) == []


# ----------------------------------------------------------------- construction

def test_single_agent_construction_and_sampler_kwargs(stub_sampler):
    class CB(DefaultCallbacks):
        created = []

        def on_create_policy(self, *, policy_id, policy, **kw):
            self.created.append(policy_id)

    w = RolloutWorker(env_creator=lambda ctx: CounterEnv(index=ctx.vector_index, dict_obs=True),
                      policy_spec=CountingPolicy, num_envs=2, rollout_fragment_length=5,
                      episode_horizon=7, clip_rewards=2.0, callbacks=CB, observation_filter="MeanStdFilter",
                      env_config={"k": 1}, no_done_at_end=True, soft_horizon=True, clip_actions=True,
                      normalize_actions=False, count_steps_by="agent_steps")
    policy = w.get_policy()
    # The policy sees the flattened (preprocessed) Dict observation space.
    assert policy.observation_space.shape == (3,)
    assert isinstance(policy.observation_space.original_space, gym.spaces.Dict)
    assert w.preprocessors["default_policy"].shape == (3,)
    assert isinstance(w.filters["default_policy"], MeanStdFilter)
    assert w.filters["default_policy"].shape == (3,)
    assert w.policies_to_train == ["default_policy"] and not w.multiagent
    assert w.rollout_fragment_length == 10 and w.env_context == {"k": 1}
    assert CB.created == ["default_policy"] and isinstance(w.callbacks, CB)
    (sampler,) = stub_sampler
    kw = sampler.kwargs
    assert kw["worker"] is w and kw["env"] is w.async_env and kw["callbacks"] is w.callbacks
    assert kw["rollout_fragment_length"] == 10 and kw["multiple_episodes_in_batch"] is True
    assert (kw["horizon"], kw["clip_rewards"], kw["count_steps_by"]) == (7, 2.0, "agent_steps")
    assert kw["no_done_at_end"] and kw["soft_horizon"] and kw["clip_actions"]
    assert kw["normalize_actions"] is False and kw["render"] is False
    assert w.input_reader is sampler and w.sampler is sampler
    # Two sub-envs created with their vector index.
    assert [e.index for e in w.foreach_env(lambda e: e)] == [0, 1]
    ctxs = w.foreach_env_with_context(lambda e, ctx: (ctx.vector_index, ctx.worker_index))
    assert ctxs == [(0, 0), (1, 0)]
    w.stop()
    assert all(w.foreach_env(lambda e: e.closed))


def test_complete_episodes_and_async_sampler(stub_sampler):
    w = RolloutWorker(env_creator=lambda ctx: CounterEnv(), policy_spec=CountingPolicy,
                      batch_mode="complete_episodes", sample_async=True,
                      observation_filter="MeanStdFilter", input_evaluation=["simulation"])
    (sampler,) = stub_sampler
    assert sampler.kwargs["rollout_fragment_length"] == float("inf")
    assert sampler.kwargs["multiple_episodes_in_batch"] is False
    assert sampler.kwargs["blackhole_outputs"] is True and sampler.started
    # The sampler thread updates the filter concurrently.
    assert isinstance(w.filters["default_policy"], ConcurrentMeanStdFilter)


def test_multi_agent_spaces_resolved_per_agent(stub_sampler):
    w = RolloutWorker(env_creator=lambda ctx: TwoAgentEnv(ctx),
                      policy_spec={"pa": (CountingPolicy, None, None, {"x": 1}),
                                   "pb": PolicySpec(CountingPolicy)},
                      policy_mapping_fn=agent_to_policy, policies_to_train=["pb"],
                      policy_config={"x": 0, "y": 2})
    pa, pb = w.get_policy("pa"), w.get_policy("pb")
    assert pa.observation_space.shape == (3,) and pa.action_space == gym.spaces.Discrete(2)
    assert pb.observation_space.shape == (4,)  # one-hot Discrete(4)
    assert pb.observation_space.original_space == gym.spaces.Discrete(4)
    assert pb.action_space == gym.spaces.Discrete(3)
    assert (pa.config["x"], pa.config["y"], pb.config["x"]) == (1, 2, 0)
    assert w.multiagent and w.policies_to_train == ["pb"]
    assert w.policy_mapping_fn("a", None, worker=w) == "pa"
    assert w.policy_map.policy_specs["pb"].observation_space == gym.spaces.Discrete(4)


def test_local_worker_with_create_env_on_driver(stub_sampler):
    w = RolloutWorker(env_creator=lambda ctx: CounterEnv(), policy_spec=CountingPolicy,
                      num_workers=2, policy_config={"create_env_on_driver": True})
    assert w.env is not None and len(stub_sampler) == 1


class SeedRecorder(CounterEnv):
    def __init__(self, ctx):
        super().__init__(index=ctx.vector_index)
        self.ctx, self.seeds = ctx, []

    def reset(self, *, seed=None, options=None):
        self.seeds.append(seed)
        return super().reset(seed=seed, options=options)


def test_sub_env_contexts_and_seeds(stub_sampler):
    seen = []
    w = RolloutWorker(env_creator=SeedRecorder, policy_spec=CountingPolicy, num_envs=3,
                      worker_index=2, num_workers=2, seed=7, env_config={"a": 1},
                      validate_env=lambda env, ctx: seen.append(ctx.vector_index))
    envs = w.foreach_env(lambda e: e)
    assert [e.seeds[0] for e in envs] == [7 + 2000, 7 + 2001, 7 + 2002]
    assert [e.ctx.vector_index for e in envs] == [0, 1, 2]
    assert all(e.ctx.worker_index == 2 and e.ctx.num_workers == 2 and e.ctx["a"] == 1 for e in envs)
    assert seen == [0, 1, 2]  # validate_env on every created env
    assert w.get_policy().config["seed"] == 7 + 2000
    assert worker_env.env_seed(None, 1, 1) is None


def test_seeded_env_is_reproducible(stub_sampler):
    def state(seed):
        w = RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"),
                          policy_spec=CountingPolicy, seed=seed)
        return w.foreach_env(lambda e: e.unwrapped.state.copy())[0]

    ref = gym.make("CartPole-v1")
    ref.reset(seed=3)
    np.testing.assert_array_equal(state(3), ref.unwrapped.state)
    assert not np.array_equal(state(3), state(4))


def test_cartpole_takes_the_native_vector_path(stub_sampler):
    w = RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"), policy_spec=CountingPolicy,
                      num_envs=4, seed=1)
    vec = w.async_env.vector_env.env
    assert type(vec.unwrapped).__name__ == "CartPoleVectorEnv" and vec.num_envs == 4
    # A validator (or a sub-env callback) needs the sub-env objects: separate copies then.
    w2 = RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"), policy_spec=CountingPolicy,
                       num_envs=4, validate_env=lambda env, ctx: None)
    assert len(w2.foreach_env(lambda e: e)) == 4


def test_on_sub_environment_created_callback(stub_sampler):
    class CB(DefaultCallbacks):
        seen = []

        def on_sub_environment_created(self, *, worker, sub_environment, env_context, **kw):
            self.seen.append((worker, env_context.vector_index))

    w = RolloutWorker(env_creator=lambda ctx: CounterEnv(), policy_spec=CountingPolicy,
                      num_envs=2, callbacks=CB)
    assert CB.seen == [(w, 0), (w, 1)]


# ----------------------------------------------------------------- learning routing

def test_learn_on_batch_respects_policies_to_train():
    class CB(DefaultCallbacks):
        def on_learn_on_batch(self, *, policy, train_batch, result, **kw):
            result["rows_seen"] = train_batch.count

    w = ma_worker(policies_to_train=["pa"], callbacks=CB)
    batch = MultiAgentBatch({"pa": sb(4), "pb": sb(2)}, env_steps=4)
    info = w.learn_on_batch(batch)
    assert list(info) == ["pa"]
    assert info["pa"]["learner_stats"] == {"rows": 4}
    assert info["pa"]["custom_metrics"] == {"rows_seen": 4}
    assert len(w.get_policy("pa").learned) == 1 and w.get_policy("pb").learned == []
    w.set_policies_to_train(["pa", "pb"])
    assert sorted(w.learn_on_batch(batch)) == ["pa", "pb"]


def test_learn_on_sample_batch_goes_to_default_policy():
    w = no_env_worker()
    assert w.learn_on_batch(sb(3)) == {"default_policy": {"learner_stats": {"rows": 3}}}
    w2 = ma_worker(policies_to_train=["pa"])
    with pytest.raises(TypeError, match="Expected a SampleBatch or MultiAgentBatch; received dict"):
        w2.learn_on_batch({"obs": [1]})


def test_learn_on_compressed_batch_decompresses():
    w = no_env_worker()
    batch = sb(3).compress()
    assert is_compressed(batch["obs"][0])
    w.learn_on_batch(batch)
    np.testing.assert_array_equal(w.get_policy().learned[0]["obs"][:, 0], [0.0, 1.0, 2.0])


def test_compute_and_apply_gradients_respect_policies_to_train():
    w = ma_worker(policies_to_train=["pb"])
    batch = MultiAgentBatch({"pa": sb(4), "pb": sb(2)}, env_steps=4)
    grads, info = w.compute_gradients(batch)
    assert list(grads) == ["pb"] and info["batch_count"] == 4 and "pa" not in info
    w.apply_gradients({"pa": [np.ones(2)], "pb": grads["pb"]})
    np.testing.assert_array_equal(w.get_weights()["pb"]["w"], [2.0, 2.0])
    assert w.get_policy("pa").applied == []

    single = no_env_worker()
    g, info = single.compute_gradients(sb(3))
    assert info["batch_count"] == 3
    single.apply_gradients(g)
    np.testing.assert_array_equal(single.get_weights()["default_policy"]["w"], [3.0, 3.0])
    single.set_policies_to_train([])
    single.apply_gradients(g)  # not trainable: skipped
    np.testing.assert_array_equal(single.get_weights()["default_policy"]["w"], [3.0, 3.0])
    with pytest.raises(ValueError, match="default policy 'default_policy' is not in policies_to_train"):
        single.compute_gradients(sb(3))


def test_sample_and_learn_minibatches():
    class Reader:
        def next(self):
            return sb(8)

    w = no_env_worker(input_creator=lambda ioctx: Reader(), rollout_fragment_length=8)
    info, count = w.sample_and_learn(8, num_sgd_iter=2, sgd_minibatch_size=4,
                                     standardize_fields=["rewards"])
    assert count == 8 and info["default_policy"]["learner_stats"] == {"rows": 8}
    policy = w.get_policy()
    # One learn call: the policy runs the epochs and minibatches (TFPolicy: in one
    # compiled call).
    assert [b.count for b in policy.learned] == [8]
    assert policy.sgd_settings == [{"num_sgd_iter": 2, "sgd_minibatch_size": 4}]
    np.testing.assert_array_equal(policy.learned[0]["rewards"], np.zeros(8))  # standardized
    with pytest.raises(ValueError, match="Batch size possibly out of sync between workers: expected 5"):
        w.sample_and_learn(5, 1, 4, [])


def test_sgd_settings_for_a_policy_with_rllibs_learn_on_batch_signature():
    """A policy whose `learn_on_batch(samples)` takes only the batch (RLlib's signature,
    issue 28) gets RLlib's minibatch SGD from outside: one call per minibatch and epoch,
    the stats averaged. (Before issue 28 this raised TypeError.)"""
    class OldStylePolicy(CountingPolicy):
        def learn_on_batch(self, samples):
            return super().learn_on_batch(samples)

    w = no_env_worker(policy_spec=OldStylePolicy)
    assert w.learn_on_batch(sb(4)) == {"default_policy": {"learner_stats": {"rows": 4}}}
    policy = w.get_policy()
    policy.learned.clear()
    info = w.learn_on_batch(sb(8), num_sgd_iter=2, sgd_minibatch_size=4)
    assert [b.count for b in policy.learned] == [4, 4, 4, 4]  # 2 epochs x 2 minibatches
    assert policy.sgd_settings[-4:] == [{}, {}, {}, {}]
    for epoch in (policy.learned[:2], policy.learned[2:]):  # each epoch sees every row once
        assert sorted(np.concatenate([b["obs"][:, 0] for b in epoch])) == list(range(8))
    assert info == {"default_policy": {"learner_stats": {"rows": 4.0}}}
    with pytest.raises(ValueError, match=r"sgd_minibatch_size=16 exceeds the batch's 8 rows"):
        w.learn_on_batch(sb(8), num_sgd_iter=1, sgd_minibatch_size=16)


# ----------------------------------------------------------------- weights, vars, policies

def test_weights_and_global_vars():
    w = ma_worker()
    assert w.get_global_vars() is None
    w.set_weights({"pa": {"w": np.array([1.0, 2.0])}}, global_vars={"timestep": 42})
    np.testing.assert_array_equal(w.get_weights("pa")["pa"]["w"], [1.0, 2.0])
    assert sorted(w.get_weights()) == ["pa", "pb"]
    # Any collection of ids (a frozenset, dict keys) selects those policies.
    assert sorted(w.get_weights(frozenset({"pa", "pb"}))) == ["pa", "pb"]
    assert sorted(w.get_weights({"pb": None}.keys())) == ["pb"]
    assert w.get_global_vars() == {"timestep": 42}
    assert w.get_policy("pb").global_vars == [{"timestep": 42}]
    assert w.get_policy("pb").global_timestep == 42
    w.set_global_vars({"timestep": 50}, policy_ids=["pa"])
    assert w.get_policy("pa").global_timestep == 50 and w.get_policy("pb").global_timestep == 42
    with pytest.raises(KeyError, match="No policy 'zz' in the policy map of worker 0"):
        w.set_weights({"zz": {}})
    assert w.get_policy("zz") is None


def test_add_and_remove_policy():
    w = ma_worker()
    new = w.add_policy(policy_id="pc", policy_cls=CountingPolicy, observation_space=BOX3,
                       action_space=gym.spaces.Discrete(5), config={"z": 1},
                       policy_mapping_fn=lambda aid, ep, worker=None, **kw: "pc",
                       policies_to_train=["pa", "pc"])
    assert w.get_policy("pc") is new and new.config["z"] == 1
    assert w.policy_mapping_fn("a", None) == "pc" and w.policies_to_train == ["pa", "pc"]
    assert isinstance(w.filters["pc"], NoFilter) and "pc" in w.preprocessors
    with pytest.raises(ValueError, match="Policy ID 'pc' already in policy map"):
        w.add_policy(policy_id="pc", policy_cls=CountingPolicy, observation_space=BOX3,
                     action_space=BOX3)
    w.remove_policy(policy_id="pc", policy_mapping_fn=agent_to_policy)
    assert "pc" not in w.policy_map and "pc" not in w.filters and "pc" not in w.preprocessors
    assert w.policies_to_train == ["pa"] and w.policy_mapping_fn("b", None) == "pb"
    with pytest.raises(ValueError, match="Policy ID 'pc' not in policy map"):
        w.remove_policy(policy_id="pc")
    with pytest.raises(ValueError, match="`observation_space` not provided in the PolicySpec of 'pd'"):
        w.add_policy(policy_id="pd", policy_cls=CountingPolicy)


def test_foreach_and_apply():
    w = ma_worker(policies_to_train=["pb"])
    assert w.foreach_policy(lambda p, pid, k: (pid, k), k=1) == [("pa", 1), ("pb", 1)]
    assert w.foreach_trainable_policy(lambda p, pid: pid) == ["pb"]
    assert w.for_policy(lambda p, k: (p, k), policy_id="pa", k=2) == (w.get_policy("pa"), 2)
    assert w.apply(lambda worker, x: (worker, x), 5) == (w, 5)


# ----------------------------------------------------------------- filters and state

def test_get_filters_flush_and_sync():
    w = no_env_worker(observation_filter="MeanStdFilter")
    f = w.filters["default_policy"]
    f.apply_batch(np.ones((4, 3)))
    snap = w.get_filters(flush_after=True)["default_policy"]
    assert snap.buffer.n == 4 and f.buffer.n == 0 and f.running_stats.n == 4
    other = MeanStdFilter((3,))
    other.apply_batch(np.zeros((6, 3)))
    w.sync_filters({"default_policy": other})
    assert f.running_stats.n == 6
    with pytest.raises(KeyError, match=r"no filter given for policies \['default_policy'\]"):
        w.sync_filters({})


def test_save_restore_round_trip_with_re_added_policy():
    w = ma_worker(observation_filter="MeanStdFilter")
    w.add_policy(policy_id="pc", policy_cls=CountingPolicy, observation_space=gym.spaces.Discrete(3),
                 action_space=gym.spaces.Discrete(2))
    w.set_weights({"pa": {"w": np.array([1.0, 1.0])}, "pc": {"w": np.array([3.0, 4.0])}})
    w.set_global_vars({"timestep": 9})
    w.filters["pa"].apply_batch(np.arange(6.0).reshape(2, 3))
    data = w.save()
    assert isinstance(data, bytes)

    fresh = ma_worker(observation_filter="MeanStdFilter")
    fresh.restore(data)
    assert sorted(fresh.policy_map) == ["pa", "pb", "pc"]
    np.testing.assert_array_equal(fresh.get_weights()["pc"]["w"], [3.0, 4.0])  # D19
    np.testing.assert_array_equal(fresh.get_weights()["pa"]["w"], [1.0, 1.0])
    assert fresh.get_policy("pc").observation_space.shape == (3,)  # rebuilt from the raw space
    assert fresh.get_global_vars() == {"timestep": 9}
    assert fresh.get_policy("pa").global_timestep == 9
    np.testing.assert_array_equal(fresh.filters["pa"].running_stats.mean, [1.5, 2.5, 3.5])
    assert fresh.filters["pa"].buffer.n == 0 and fresh.filters["pc"].running_stats.n == 0
    # The same without pickling: get_state()/set_state().
    third = ma_worker(observation_filter="MeanStdFilter")
    third.set_state(w.get_state())
    np.testing.assert_array_equal(third.get_weights()["pc"]["w"], [3.0, 4.0])
    np.testing.assert_array_equal(third.filters["pa"].running_stats.mean, [1.5, 2.5, 3.5])


def test_restore_errors_and_unknown_policy(caplog):
    w = no_env_worker()
    with pytest.raises(ValueError, match="restore\\(\\) expects bytes from RolloutWorker.save\\(\\)"):
        w.restore(b"junk")
    with pytest.raises(ValueError, match="received list"):
        w.restore(pickle.dumps([1]))
    w.restore(pickle.dumps({"state": {"ghost": {"weights": {}}}, "filters": {}, "policy_specs": {}}))
    assert "policy 'ghost' is not in this worker" in caplog.text


# ----------------------------------------------------------------- sample() with an input reader

class ListReader:
    def __init__(self, batches):
        self.batches = list(batches)

    def next(self):
        return self.batches.pop(0)


class Writer:
    def __init__(self):
        self.written = []

    def write(self, batch):
        self.written.append(batch)


def test_sample_concatenates_until_fragment_times_num_envs():
    class CB(DefaultCallbacks):
        ends = []

        def on_sample_end(self, *, worker, samples, **kw):
            self.ends.append(samples.count)

    out = Writer()
    reader = ListReader([sb(3), sb(3, 3), sb(3, 6), sb(3, 9)])
    w = no_env_worker(input_creator=lambda ioctx: reader, output_creator=lambda ioctx: out,
                      rollout_fragment_length=3, num_envs=3, callbacks=CB, compress_observations=True)
    batch = w.sample()
    assert batch.count == 9 and CB.ends == [9] and out.written == [batch]
    assert is_compressed(batch["obs"][0])  # compressed after being written
    assert len(reader.batches) == 1


def test_sample_max_batches_and_agent_steps():
    reader = ListReader([sb(1), sb(1), sb(1), sb(1)])
    w = no_env_worker(input_creator=lambda ioctx: reader, rollout_fragment_length=4, num_envs=2)
    assert w.sample().count == 2  # truncate mode: at most num_envs fragments
    ma = MultiAgentBatch({"a": sb(2), "b": sb(2)}, env_steps=2)
    reader2 = ListReader([ma, ma, ma])
    w2 = no_env_worker(input_creator=lambda ioctx: reader2, rollout_fragment_length=4,
                       count_steps_by="agent_steps", batch_mode="complete_episodes")
    assert w2.sample().agent_steps() == 4 and len(reader2.batches) == 2
    assert w2.sample_with_count()[1] == 2


def test_fake_sampler_returns_cached_batch():
    reader = ListReader([sb(5), sb(5)])
    w = no_env_worker(input_creator=lambda ioctx: reader, rollout_fragment_length=5, fake_sampler=True)
    first = w.sample()
    assert w.sample() is first and len(reader.batches) == 1


# ----------------------------------------------------------------- misc

def test_misc_methods_and_deprecated_arguments(monkeypatch):
    monkeypatch.delenv("TFRL_TEST_VAR", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = no_env_worker(policy_spec=None, policy=CountingPolicy, tf_session_creator=lambda: None,
                          monitor_path="/tmp/x", extra_python_environs={"TFRL_TEST_VAR": 3},
                          log_level="INFO")
    messages = " ".join(str(c.message) for c in caught)
    assert "policy=...) is deprecated" in messages and "monitor_path" in messages
    assert "tf_session_creator=...) is ignored" in messages
    assert os.environ["TFRL_TEST_VAR"] == "3"
    monkeypatch.delenv("TFRL_TEST_VAR")
    assert isinstance(w.get_policy(), CountingPolicy)
    args = w.creation_args()
    assert args["policy_spec"] is CountingPolicy and args["record_env"] == "/tmp/x"
    assert args["num_workers"] == 1 and len(args) == 41
    assert get_global_worker() is w
    assert isinstance(w.get_host(), str) and isinstance(w.get_node_ip(), str)
    assert 0 < w.find_free_port() < 65536
    with pytest.raises(NotImplementedError, match="MultiWorkerMirroredStrategy"):
        w.setup_torch_data_parallel("url", 0, 1, "gloo")
    assert "default_policy" in repr(w)


def test_render_observation_fn_and_record_env(stub_sampler, caplog):
    def obs_fn(agent_obs, worker, base_env, policies, episode, **kw):
        return agent_obs

    RolloutWorker(env_creator=lambda ctx: CounterEnv(), policy_spec=CountingPolicy,
                  observation_fn=obs_fn, policy_config={"render_env": True}, record_env=True)
    kw = stub_sampler[0].kwargs
    assert kw["observation_fn"] is obs_fn and kw["render"] is True
    assert "record_env=True: cannot record CounterEnv" in caplog.text
    # Remote worker 2 of 2 does not render (only worker 1 does).
    RolloutWorker(env_creator=lambda ctx: CounterEnv(), policy_spec=CountingPolicy,
                  worker_index=2, num_workers=2, policy_config={"render_env": True})
    assert stub_sampler[1].kwargs["render"] is False


def test_record_env_wraps_rgb_array_envs(tmp_path):
    env = gym.make("CartPole-v1", render_mode="rgb_array")
    if importlib.util.find_spec("moviepy") is None:
        with pytest.raises(ImportError, match="needs moviepy: pip install moviepy"):
            worker_env.record_env_wrapper(env, str(tmp_path / "videos"), None)
    else:
        wrapped = worker_env.record_env_wrapper(env, str(tmp_path / "videos"), None)
        assert type(wrapped).__name__ == "RecordVideo"
    assert worker_env.record_env_wrapper(env, False, None) is env


def test_custom_vector_env(stub_sampler):
    made = []

    def custom(env):
        from tfrl.env.base_env import BaseEnv

        made.append(env)
        return BaseEnv.to_base_env(env)

    w = RolloutWorker(env_creator=lambda ctx: CounterEnv(), policy_spec=CountingPolicy,
                      policy_config={"custom_vector_env": custom})
    assert made == [w.env] and stub_sampler[0].kwargs["env"] is w.async_env


def test_per_agent_spaces_need_a_mapped_agent(stub_sampler):
    with pytest.raises(ValueError, match="Cannot tell the observation_space of policy 'pc'"):
        RolloutWorker(env_creator=lambda ctx: TwoAgentEnv(ctx),
                      policy_spec={"pa": CountingPolicy, "pb": CountingPolicy,
                                   "pc": CountingPolicy},
                      policy_mapping_fn=agent_to_policy)
