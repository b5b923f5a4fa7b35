"""WorkerSet with in-process (thread) remote workers: config mapping, sampling, weight
sync, foreach_*, crashes and recreation. No Ray needed.

`StandInWorker` takes RolloutWorker's keyword arguments and implements the methods the
WorkerSet calls, with a numpy policy whose weights are easy to compare.
"""

import subprocess
import sys
import threading

import gymnasium as gym
import numpy as np
import pytest

from tfrl.env.env_context import EnvContext
from tfrl.evaluation.rollout_worker import config as wsc
from tfrl.evaluation.worker_set.handles import ThreadWorkerHandle, WorkerCrashedError
from tfrl.evaluation.worker_set import MAX_RECREATIONS_PER_CALL, WorkerSet
from tfrl.policy.policy import Policy, PolicySpec
from tfrl.policy.sample_batch import SampleBatch

TIMEOUT = 30
OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


class NumpyPolicy:
    """Weights `{"w": [3]}`, initialised from the config's seed."""

    def __init__(self, observation_space, action_space, config):
        self.observation_space, self.action_space, self.config = (
            observation_space, action_space, config)
        self.w = np.random.default_rng(config.get("seed")).normal(size=3).astype(np.float32)
        self.global_vars = None

    def get_weights(self):
        return {"w": self.w.copy()}

    def set_weights(self, weights):
        self.w = np.asarray(weights["w"], np.float32).copy()

    def on_global_var_update(self, global_vars):
        self.global_vars = dict(global_vars)


class OtherPolicy(NumpyPolicy):
    pass


class LinearPolicy(Policy):
    """A numpy policy for real RolloutWorkers: action = [obs . w > 0]; weights {"w"}."""

    def __init__(self, observation_space, action_space, config):
        super().__init__(observation_space, action_space, config)
        rng = np.random.default_rng(config.get("seed"))
        self.w = rng.normal(size=observation_space.shape[0]).astype(np.float32)

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None,
                        explore=None, timestep=None, **kwargs):
        obs = np.asarray(obs_batch, np.float32)
        n = len(obs)
        return ((obs @ self.w) > 0).astype(np.int64), [], {
            "vf_preds": np.zeros(n, np.float32)}

    def value(self, obs_batch, *args, **kwargs):
        return np.zeros(len(obs_batch), np.float32)

    def get_weights(self):
        return {"w": self.w.copy()}

    def set_weights(self, weights):
        self.w = np.asarray(weights["w"], np.float32).copy()


def make_cartpole(ctx):
    return gym.make("CartPole-v1")


# worker_index -> function run (once) inside that worker's next env step.
STEP_HOOKS = {}


class HookedCartPole(gym.Env):
    """CartPole whose step() first runs (and removes) `STEP_HOOKS[worker_index]`."""

    def __init__(self, ctx):
        self.env = gym.make("CartPole-v1")
        self.observation_space, self.action_space = (self.env.observation_space,
                                                     self.env.action_space)
        self.worker_index = ctx.worker_index

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        hook = STEP_HOOKS.pop(self.worker_index, None)
        if hook is not None:
            hook()
        return self.env.step(action)


class StandInWorker:
    """The part of RolloutWorker a WorkerSet uses (constructor = RolloutWorker kwargs)."""

    def __init__(self, *, env_creator, policy_spec, worker_index=0, num_workers=0,
                 policy_config=None, seed=None, spaces=None, env_config=None,
                 policies_to_train=None, **kwargs):
        self.kwargs = dict(kwargs, env_creator=env_creator, policy_spec=policy_spec,
                           worker_index=worker_index, num_workers=num_workers,
                           policy_config=policy_config, seed=seed, spaces=spaces,
                           env_config=env_config, policies_to_train=policies_to_train)
        self.worker_index = worker_index
        self.env_context = EnvContext(env_config or {}, worker_index=worker_index)
        self.env = env_creator(self.env_context)
        self.policy_map = {}
        for pid, spec in policy_spec.items():
            obs_space = spec.observation_space or (spaces or {}).get(pid, (OBS_SPACE,))[0]
            self.policy_map[pid] = spec.policy_class(obs_space, ACT_SPACE,
                                                     dict(policy_config or {}, seed=seed))
        self.policies_to_train = policies_to_train or list(self.policy_map)
        self.filters = {pid: {"count": 0} for pid in self.policy_map}
        self.global_vars = None
        self.num_samples = 0
        self.stopped = False

    def sample(self):
        hook = (self.env_context.get("sample_hooks") or {}).pop(self.worker_index, None)
        if hook is not None:
            hook(self)
        self.num_samples += 1
        w = self.policy_map["default_policy"].w
        return SampleBatch({"obs": np.tile(w, (4, 1)),
                            "worker_index": np.full(4, self.worker_index)})

    def get_weights(self, policies=None):
        pids = policies or list(self.policy_map)
        return {pid: self.policy_map[pid].get_weights() for pid in pids}

    def set_weights(self, weights, global_vars=None):
        for pid, w in weights.items():
            self.policy_map[pid].set_weights(w)
        if global_vars:
            self.set_global_vars(global_vars)

    def get_global_vars(self):
        return self.global_vars

    def set_global_vars(self, global_vars):
        for policy in self.policy_map.values():
            policy.on_global_var_update(global_vars)
        self.global_vars = dict(global_vars)

    def get_filters(self, flush_after=False):
        return {pid: dict(f) for pid, f in self.filters.items()}

    def sync_filters(self, new_filters):
        self.filters = {pid: dict(new_filters[pid]) for pid in self.filters}

    def foreach_policy(self, func, **kwargs):
        return [func(p, pid, **kwargs) for pid, p in self.policy_map.items()]

    def foreach_trainable_policy(self, func, **kwargs):
        return [func(p, pid, **kwargs) for pid, p in self.policy_map.items()
                if pid in self.policies_to_train]

    def foreach_env(self, func):
        return [] if self.env is None else [func(self.env)]

    def apply(self, func, *args):
        return func(self, *args)

    def stop(self):
        self.stopped = True


def make_env(ctx):
    return {"env_of_worker": ctx.worker_index}


def thread_config(**overrides):
    return dict({"remote_backend": "thread", "seed": 10, "create_env_on_driver": True},
                **overrides)


@pytest.fixture
def make_set():
    made = []

    def make(num_workers=2, local_worker=True, worker_cls=StandInWorker, **config):
        ws = WorkerSet(env_creator=make_env, policy_class=NumpyPolicy,
                       trainer_config=thread_config(**config), num_workers=num_workers,
                       local_worker=local_worker, worker_cls=worker_cls)
        made.append(ws)
        return ws

    yield make
    for ws in made:
        ws.stop()


def _remote_weights(ws):
    return [w for w in ws.foreach_worker(lambda w: w.policy_map["default_policy"].w)][1:]


# ------------------------------------------------------------------------------------
# Config -> RolloutWorker arguments.

def test_worker_kwargs_map_the_trainer_config():
    mapping_fn = lambda agent_id, episode, worker, **kw: "p0"  # noqa: E731
    obs_fn = lambda agent_obs, **kw: agent_obs  # noqa: E731
    config = {"num_envs_per_worker": 4, "horizon": 50, "rollout_fragment_length": 25,
              "batch_mode": "complete_episodes", "model": {"fcnet_hiddens": [8]},
              "env_config": {"a": 1}, "clip_rewards": True, "seed": 7,
              "observation_filter": "MeanStdFilter", "soft_horizon": True,
              "extra_python_environs_for_worker": {"X": 1},
              "multiagent": {"policies": {"p0": (None, OBS_SPACE, ACT_SPACE, {"lr": 1.0})},
                             "policy_mapping_fn": mapping_fn, "policies_to_train": ["p0"],
                             "observation_fn": obs_fn, "count_steps_by": "agent_steps"}}
    specs = wsc.policy_specs(config, NumpyPolicy)
    assert specs == {"p0": PolicySpec(NumpyPolicy, OBS_SPACE, ACT_SPACE, {"lr": 1.0})}
    kwargs = wsc.worker_kwargs(config, env_creator=make_env, validate_env=None,
                               policy_spec=specs, worker_index=2, num_workers=3,
                               log_dir="/tmp/x")
    assert kwargs == {
        "env_creator": make_env, "validate_env": None, "policy_spec": specs,
        "policy_config": config, "worker_index": 2, "num_workers": 3, "log_dir": "/tmp/x",
        "num_envs": 4, "episode_horizon": 50, "rollout_fragment_length": 25,
        "batch_mode": "complete_episodes", "model_config": {"fcnet_hiddens": [8]},
        "env_config": {"a": 1}, "clip_rewards": True, "seed": 9,
        "observation_filter": "MeanStdFilter", "soft_horizon": True,
        "policy_mapping_fn": mapping_fn, "policies_to_train": ["p0"],
        "observation_fn": obs_fn, "count_steps_by": "agent_steps",
        "extra_python_environs": {"X": 1}}
    local = wsc.worker_kwargs({}, env_creator=None, validate_env=None, policy_spec=specs,
                              worker_index=0, num_workers=0, log_dir=None,
                              spaces={"p0": (OBS_SPACE, ACT_SPACE)})
    assert local["env_creator"] is wsc.no_env and local["spaces"] == {"p0": (OBS_SPACE,
                                                                            ACT_SPACE)}
    assert "seed" not in local and "num_envs" not in local  # The worker's defaults apply.


def test_an_auto_rollout_fragment_length_is_derived_from_the_config_dict():
    """An algorithm passes its config as a dict: "auto" splits train_batch_size over the
    sampling workers' envs (RLlib's rule: one step more for the first workers only when
    it does not divide evenly)."""
    def fragment(train_batch_size, num_workers, envs, index):
        config = {"rollout_fragment_length": "auto", "train_batch_size": train_batch_size,
                  "num_envs_per_worker": envs}
        return wsc.worker_kwargs(config, env_creator=None, validate_env=None,
                                 policy_spec={}, worker_index=index,
                                 num_workers=num_workers, log_dir=None
                                 )["rollout_fragment_length"]

    assert fragment(256, 0, 8, 0) == 32  # the local worker samples 8 x 32 = 256 steps
    assert [fragment(4000, 3, 2, i) for i in (1, 2, 3)] == [667, 667, 666]
    assert [fragment(1342, 12, 1, i) for i in (1, 10, 11)] == [112, 112, 111]


def test_policy_specs_default_and_forms():
    assert wsc.policy_specs({}, NumpyPolicy) == {
        "default_policy": PolicySpec(NumpyPolicy, None, None, None)}
    specs = wsc.policy_specs({"multiagent": {"policies": {"a", "b"}}}, NumpyPolicy)
    assert specs == {"a": PolicySpec(NumpyPolicy), "b": PolicySpec(NumpyPolicy)}
    specs = wsc.policy_specs({"multiagent": {"policies": {
        "a": OtherPolicy, "b": PolicySpec(config={"x": 1}), "c": None}}}, NumpyPolicy)
    assert specs == {"a": PolicySpec(OtherPolicy), "b": PolicySpec(NumpyPolicy, config={"x": 1}),
                     "c": PolicySpec(NumpyPolicy)}
    with pytest.raises(ValueError, match="needs a policy: pass policy_class"):
        wsc.policy_specs({}, None)
    with pytest.raises(ValueError, match=r"multiagent.policies\['a'\] names no policy class"):
        wsc.policy_specs({"multiagent": {"policies": {"a": (None, None, None, {})}}}, None)


def test_unknown_config_keys_name_the_closest_valid_key():
    with pytest.raises(ValueError, match="Unknown trainer_config key 'num_envs_per_wrker'. "
                       "Did you mean 'num_envs_per_worker'"):
        WorkerSet(policy_class=NumpyPolicy, trainer_config={"num_envs_per_wrker": 2},
                  worker_cls=StandInWorker)
    with pytest.raises(ValueError, match=r"Unknown trainer_config\['multiagent'\] key "
                       "'policy_maping_fn'. Did you mean 'policy_mapping_fn'"):
        WorkerSet(policy_class=NumpyPolicy, worker_cls=StandInWorker,
                  trainer_config={"multiagent": {"policy_maping_fn": None}})
    with pytest.raises(ValueError, match="remote_backend'] must be 'ray' or 'thread'; "
                       "received 'process'"):
        WorkerSet(policy_class=NumpyPolicy, trainer_config={"remote_backend": "process"},
                  worker_cls=StandInWorker)
    with pytest.raises(TypeError, match="trainer_config must be a dict; received list"):
        WorkerSet(policy_class=NumpyPolicy, trainer_config=[("seed", 1)],
                  worker_cls=StandInWorker)
    with pytest.raises(ValueError, match="num_workers must be >= 0; received -1"):
        WorkerSet(policy_class=NumpyPolicy, num_workers=-1, worker_cls=StandInWorker)


def test_remote_workers_without_ray_name_the_install_command(monkeypatch):
    for name in [m for m in sys.modules if m == "ray" or m.startswith(("ray.", "tfrl.backends"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError.
    with pytest.raises(ImportError, match=r"pip install 'tfrl\[ray\]'.*remote_backend'\] = "
                       "'thread'"):
        WorkerSet(env_creator=make_env, policy_class=NumpyPolicy, num_workers=2,
                  worker_cls=StandInWorker)
    # num_workers=0 needs no Ray.
    ws = WorkerSet(env_creator=make_env, policy_class=NumpyPolicy, worker_cls=StandInWorker)
    assert ws.remote_workers() == [] and len(ws.sample_all()) == 1


def test_the_worker_set_modules_do_not_import_ray():
    code = ("import sys, tfrl.evaluation.worker_set, tfrl.evaluation.worker_set.handles; "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------------------------
# Building, sampling, weights.

def test_local_only_set_samples_the_local_worker(make_set):
    ws = make_set(num_workers=0)
    local = ws.local_worker()
    assert local.kwargs["worker_index"] == 0 and local.kwargs["seed"] == 10
    assert ws.num_remote_workers() == 0 and ws.healthy_worker_ids() == []
    batches = ws.sample_all()
    assert len(batches) == 1 and batches[0]["worker_index"].tolist() == [0] * 4
    ws.sync_weights(global_vars={"timestep": 5})
    assert local.global_vars == {"timestep": 5}


def test_remote_workers_get_their_own_index_seed_and_the_local_weights(make_set):
    ws = make_set(num_workers=2)
    handles = ws.remote_workers()
    assert [h.worker_index for h in handles] == [1, 2] and ws.healthy_worker_ids() == [1, 2]
    assert all(isinstance(h, ThreadWorkerHandle) for h in handles)
    assert ws.foreach_worker(lambda w: (w.kwargs["worker_index"], w.kwargs["seed"],
                                        w.kwargs["num_workers"], w.env)) == [
        (0, 10, 2, {"env_of_worker": 0}), (1, 11, 2, {"env_of_worker": 1}),
        (2, 12, 2, {"env_of_worker": 2})]
    # Different seeds, but the constructor synced the local weights to the remotes.
    local_w = ws.local_worker().policy_map["default_policy"].w
    for w in _remote_weights(ws):
        np.testing.assert_array_equal(w, local_w)
    batches = ws.sample_all()
    assert [b["worker_index"][0] for b in batches] == [1, 2]
    assert ws.local_worker().num_samples == 0  # Remotes sample; the local worker learns.


def test_sync_weights_changes_the_remote_weights(make_set):
    ws = make_set(num_workers=2)
    new_w = np.array([1.5, -2.0, 3.25], np.float32)
    ws.local_worker().policy_map["default_policy"].set_weights({"w": new_w})
    before = _remote_weights(ws)
    assert not np.array_equal(before[0], new_w)
    ws.sync_weights(global_vars={"timestep": 100})
    for w in _remote_weights(ws):
        np.testing.assert_array_equal(w, new_w)
    assert ws.foreach_worker(lambda w: w.global_vars)[1:] == [{"timestep": 100}] * 2
    for batch in ws.sample_all():
        np.testing.assert_array_equal(batch["obs"][0], new_w)


def test_sync_weights_from_a_remote_worker_reaches_everyone(make_set):
    ws = make_set(num_workers=2)
    source = ws.remote_workers()[1]
    source.apply(lambda w: w.policy_map["default_policy"].set_weights(
        {"w": np.array([7.0, 8.0, 9.0])})).result(TIMEOUT)
    ws.sync_weights(from_worker=source)
    for w in ws.foreach_worker(lambda w: w.policy_map["default_policy"].w):
        np.testing.assert_array_equal(w, [7.0, 8.0, 9.0])


def test_sync_weights_without_a_source_is_an_error(make_set):
    ws = make_set(num_workers=1, local_worker=False)
    assert ws.local_worker() is None
    with pytest.raises(ValueError, match="no local worker, so pass from_worker"):
        ws.sync_weights()


def test_foreach_functions_keep_worker_order(make_set):
    ws = make_set(num_workers=2, multiagent={
        "policies": {"a": PolicySpec(NumpyPolicy), "b": PolicySpec(OtherPolicy)},
        "policies_to_train": ["b"]})
    assert ws.foreach_worker_with_index(lambda w, i: (i, w.worker_index)) == [
        (0, 0), (1, 1), (2, 2)]
    assert ws.foreach_policy(lambda p, pid: (pid, type(p).__name__)) == [
        ("a", "NumpyPolicy"), ("b", "OtherPolicy")] * 3
    assert ws.foreach_trainable_policy(lambda p, pid: pid) == ["b"] * 3
    assert ws.foreach_env(lambda env: env["env_of_worker"]) == [[0], [1], [2]]


def test_local_worker_without_env_takes_policy_spaces_from_a_remote(make_set):
    ws = make_set(num_workers=1, create_env_on_driver=False)
    local = ws.local_worker()
    assert local.kwargs["spaces"] == {"default_policy": (OBS_SPACE, ACT_SPACE)}
    assert local.kwargs["env_creator"] is make_env  # The worker decides to skip the env.


def test_add_workers_continues_the_indices_with_the_current_weights(make_set):
    ws = make_set(num_workers=1)
    ws.local_worker().policy_map["default_policy"].set_weights({"w": np.ones(3)})
    ws.add_workers(2)
    assert ws.healthy_worker_ids() == [1, 2, 3]
    assert ws.foreach_worker(lambda w: w.kwargs["num_workers"])[-1] == 3
    np.testing.assert_array_equal(_remote_weights(ws)[-1], np.ones(3))
    assert [b["worker_index"][0] for b in ws.sample_all()] == [1, 2, 3]


def test_stop_stops_every_worker(make_set):
    ws = make_set(num_workers=2)
    workers = [ws.local_worker()] + [h.worker for h in ws.remote_workers()]
    ws.stop()
    assert [w.stopped for w in workers] == [True] * 3
    assert ws.healthy_worker_ids() == []
    workers[0].stopped = False
    ws.stop()  # Again: nothing to do.
    assert not workers[0].stopped


# ------------------------------------------------------------------------------------
# Crashes.

def test_a_dead_worker_without_recreation_raises_naming_the_option(make_set):
    ws = make_set(num_workers=2)
    ws.remote_workers()[1].kill()
    assert ws.healthy_worker_ids() == [1]
    with pytest.raises(WorkerCrashedError, match=r"Worker 2 crashed: it was killed.*\(during "
                       r"sample\(\)\)\. Set trainer_config\['recreate_failed_workers'\] = "
                       "True") as info:
        ws.sample_all()
    assert info.value.worker_index == 2
    with pytest.raises(WorkerCrashedError, match=r"Worker 2 crashed.*set_weights"):
        ws.sync_weights()


def test_worker_killed_during_sample_all_is_recreated_and_sampled_again(make_set):
    ws = make_set(num_workers=2, recreate_failed_workers=True)
    new_w = np.array([4.0, 5.0, 6.0], np.float32)
    local = ws.local_worker()
    local.policy_map["default_policy"].set_weights({"w": new_w})
    local.filters["default_policy"] = {"count": 42}
    ws.sync_weights(global_vars={"timestep": 9})
    old = ws.remote_workers()[1]
    started, release = threading.Event(), threading.Event()

    def block(worker):  # Runs inside worker 2's first sample().
        started.set()
        release.wait(TIMEOUT)

    old.worker.env_context["sample_hooks"] = {2: block}

    def crash():
        started.wait(TIMEOUT)
        old.kill()  # Worker 2 "dies" in the middle of sample().
        release.set()

    killer = threading.Thread(target=crash)
    killer.start()
    batches = ws.sample_all(timeout_s=TIMEOUT)
    killer.join(TIMEOUT)
    assert [b["worker_index"][0] for b in batches] == [1, 2]  # Nothing lost.
    new = ws.remote_workers()[1]
    assert new is not old and new.worker_index == 2 and ws.healthy_worker_ids() == [1, 2]
    assert new.worker.kwargs["seed"] == 12  # Same index, same arguments.
    np.testing.assert_array_equal(batches[1]["obs"][0], new_w)  # Current weights,
    assert new.worker.filters == {"default_policy": {"count": 42}}  # filters,
    assert new.worker.global_vars == {"timestep": 9}  # and global vars.


@pytest.mark.parametrize("recreate", [True, False])
def test_a_worker_whose_sample_raised(make_set, recreate):
    ws = make_set(num_workers=2, recreate_failed_workers=recreate)
    old = ws.remote_workers()[1]

    def env_fails(worker):
        raise ValueError("env broke in step")

    old.worker.env_context["sample_hooks"] = {2: env_fails}
    if recreate:  # Stopped (envs closed), replaced and sampled again in the same call.
        batches = ws.sample_all(timeout_s=TIMEOUT)
        assert [b["worker_index"][0] for b in batches] == [1, 2]
        new = ws.remote_workers()[1]
        assert new is not old and old.worker.stopped and not old.is_alive()
        assert new.worker.num_samples == 1 and old.worker.num_samples == 0
    else:  # The worker's own error, unchanged; the worker lives on.
        with pytest.raises(ValueError, match="env broke in step"):
            ws.sample_all(timeout_s=TIMEOUT)
        assert ws.remote_workers()[1] is old and old.is_alive()
        assert [b["worker_index"][0] for b in ws.sample_all(timeout_s=TIMEOUT)] == [1, 2]


def test_worker_dead_before_sample_all_is_recreated(make_set):
    ws = make_set(num_workers=2, recreate_failed_workers=True)
    ws.remote_workers()[0].kill()
    batches = ws.sample_all()
    assert [b["worker_index"][0] for b in batches] == [1, 2]
    assert ws.healthy_worker_ids() == [1, 2]


def test_a_worker_that_keeps_crashing_is_given_up(make_set):
    kills = []

    def sample(self):  # every remote worker, recreated ones too, crashes in sample()
        handle = next(h for h in ws.remote_workers() if h.worker is self)
        kills.append(handle)
        handle.kill()
        return StandInWorker.sample(self)

    ws = make_set(num_workers=1, recreate_failed_workers=True,
                  worker_cls=type("Crashy", (StandInWorker,), {"sample": sample}))
    with pytest.raises(WorkerCrashedError, match=f"crashed again after "
                       f"{MAX_RECREATIONS_PER_CALL} recreations"):
        ws.sample_all(timeout_s=TIMEOUT)
    assert len(kills) == MAX_RECREATIONS_PER_CALL + 1


def test_probe_and_recreate_failed_workers(make_set):
    ws = make_set(num_workers=2)
    assert ws.probe_unhealthy_workers() == []
    ws.remote_workers()[0].kill()
    assert ws.probe_unhealthy_workers() == []  # Recreation is off.
    assert ws.healthy_worker_ids() == [2]
    assert ws.recreate_failed_workers() == [1]
    assert ws.healthy_worker_ids() == [1, 2]
    np.testing.assert_array_equal(_remote_weights(ws)[0],
                                  ws.local_worker().policy_map["default_policy"].w)


def test_probe_recreates_when_enabled(make_set):
    ws = make_set(num_workers=2, recreate_failed_workers=True)
    ws.remote_workers()[1].kill()
    assert ws.probe_unhealthy_workers() == [2]
    assert ws.healthy_worker_ids() == [1, 2]


def test_foreach_with_a_dead_worker(make_set):
    ws = make_set(num_workers=2)
    ws.remote_workers()[0].kill()
    with pytest.raises(WorkerCrashedError, match=r"Worker 1 crashed.*foreach_worker"):
        ws.foreach_worker(lambda w: w.worker_index)
    ws = make_set(num_workers=2, recreate_failed_workers=True)
    ws.remote_workers()[0].kill()
    # With recreation on, the dead worker is left out of this call and recreated.
    assert ws.foreach_worker(lambda w: w.worker_index) == [0, 2]
    assert ws.foreach_worker(lambda w: w.worker_index) == [0, 1, 2]


def test_a_worker_that_fails_to_start_fails_the_constructor():
    class Broken(StandInWorker):
        def __init__(self, **kwargs):
            if kwargs["worker_index"] == 2:
                raise OSError("cannot reach the simulator")
            super().__init__(**kwargs)

    with pytest.raises(WorkerCrashedError, match="Worker 2 crashed: .*failed to start: "
                       "OSError: cannot reach the simulator"):
        WorkerSet(env_creator=make_env, policy_class=NumpyPolicy, num_workers=2,
                  trainer_config=thread_config(), worker_cls=Broken)


# ------------------------------------------------------------------------------------
# With the real RolloutWorker.

@pytest.mark.slow
def test_rollout_workers_sample_sync_tf_weights_and_recover():
    from policy_helpers import PGPolicy

    config = thread_config(rollout_fragment_length=10, num_envs_per_worker=2,
                           create_env_on_driver=False, recreate_failed_workers=True)
    ws = WorkerSet(env_creator=make_cartpole, policy_class=PGPolicy, trainer_config=config,
                   num_workers=2)
    try:
        local = ws.local_worker()
        assert local.env is None  # The driver only learns; its spaces came from worker 1.
        spaces = ws.foreach_policy(lambda p, pid: (p.observation_space, p.action_space))
        assert spaces == [(ws_obs, gym.spaces.Discrete(2)) for ws_obs in [spaces[0][0]] * 3]
        assert spaces[0][0].shape == (4,)
        batches = ws.sample_all(timeout_s=TIMEOUT)
        assert [b.count for b in batches] == [20, 20]
        assert all(isinstance(b, SampleBatch) for b in batches)
        new = {pid: [np.full_like(a, 0.25) for a in w] for pid, w in local.get_weights().items()}
        local.set_weights(new)
        ws.sync_weights(global_vars={"timestep": 40})
        for handle in ws.remote_workers():
            remote = handle.call("get_weights").result(TIMEOUT)["default_policy"]
            assert len(remote) == len(new["default_policy"])
            for a in remote:
                np.testing.assert_array_equal(a, np.full_like(a, 0.25))
            assert handle.call("get_global_vars").result(TIMEOUT) == {"timestep": 40}
        ws.remote_workers()[1].kill()
        batches = ws.sample_all(timeout_s=TIMEOUT)
        assert [b.count for b in batches] == [20, 20]
        recreated = ws.remote_workers()[1].call("get_weights").result(TIMEOUT)["default_policy"]
        for a in recreated:
            np.testing.assert_array_equal(a, np.full_like(a, 0.25))
    finally:
        ws.stop()


def test_rollout_worker_killed_mid_sample_is_recreated_with_weights_and_filters():
    config = thread_config(rollout_fragment_length=10, create_env_on_driver=False,
                           observation_filter="MeanStdFilter", recreate_failed_workers=True)
    ws = WorkerSet(env_creator=HookedCartPole, policy_class=LinearPolicy,
                   trainer_config=config, num_workers=2)
    try:
        local = ws.local_worker()
        new_w = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
        local.set_weights({"default_policy": {"w": new_w}})
        local.filters["default_policy"].apply_batch(np.ones((5, 4), np.float32))
        ws.sync_weights()
        old = ws.remote_workers()[1]
        started, release = threading.Event(), threading.Event()

        def block():
            started.set()
            release.wait(TIMEOUT)

        def crash():
            started.wait(TIMEOUT)
            old.kill()  # Worker 2 "dies" in the middle of sample().
            release.set()

        STEP_HOOKS[2] = block
        killer = threading.Thread(target=crash)
        killer.start()
        batches = ws.sample_all(timeout_s=TIMEOUT)
        killer.join(TIMEOUT)
        assert [b.count for b in batches] == [10, 10]  # Nothing lost.
        new = ws.remote_workers()[1]
        assert new is not old and new.worker_index == 2 and ws.healthy_worker_ids() == [1, 2]
        np.testing.assert_array_equal(new.worker.get_weights()["default_policy"]["w"], new_w)
        # Both workers filtered the same number of observations; only worker 2 started
        # from the local worker's 5.
        n1, n2 = [h.worker.filters["default_policy"].running_stats.n
                  for h in ws.remote_workers()]
        assert n1 > 0 and n2 == n1 + 5
    finally:
        STEP_HOOKS.clear()
        ws.stop()
