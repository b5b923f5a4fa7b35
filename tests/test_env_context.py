"""EnvContext and env creation (registered name, callable, gymnasium id)."""

import pickle

import gymnasium as gym
import pytest

from tfrl.env import registry
from tfrl.env.env_context import EnvContext
from tfrl.env.registry import get_env_creator, make_gymnasium_vector_env, register_env
from tfrl.examples.envs.stateless_cartpole import StatelessCartPole
from tfrl.utils.error import EnvError


@pytest.fixture(autouse=True)
def _empty_registry(monkeypatch):
    monkeypatch.setattr(registry, "_ENV_CREATORS", {})


# ---------------------------------------------------------------- EnvContext

def test_env_context_is_the_config_dict_plus_metadata():
    ctx = EnvContext({"a": 1}, worker_index=2, vector_index=3, remote=True, num_workers=4)
    assert isinstance(ctx, dict) and dict(ctx) == {"a": 1}
    assert (ctx.worker_index, ctx.vector_index, ctx.remote, ctx.num_workers) == (2, 3, True, 4)
    default = EnvContext({}, worker_index=0)
    assert (default.vector_index, default.remote, default.num_workers) == (0, False, None)


def test_env_context_copies_the_given_config_shallowly():
    config = {"a": [1]}
    ctx = EnvContext(config, worker_index=0)
    config["b"] = 2
    assert "b" not in ctx
    assert ctx["a"] is config["a"]


def test_copy_with_overrides_keeps_none_arguments_and_deep_copies_a_new_config():
    ctx = EnvContext({"a": [1]}, worker_index=1, vector_index=2, remote=False, num_workers=3)
    same = ctx.copy_with_overrides()
    assert same is not ctx and dict(same) == dict(ctx)
    assert (same.worker_index, same.vector_index, same.remote, same.num_workers) == (1, 2, False, 3)
    assert same["a"] is ctx["a"]  # no new config: shallow copy of self's items

    new_config = {"b": [2]}
    other = ctx.copy_with_overrides(env_config=new_config, worker_index=5, vector_index=6,
                                    remote=True, num_workers=7)
    assert dict(other) == {"b": [2]} and other["b"] is not new_config["b"]  # deep copy
    assert (other.worker_index, other.vector_index, other.remote, other.num_workers) == (5, 6, True, 7)
    assert (ctx.worker_index, dict(ctx)) == (1, {"a": [1]})  # self unchanged


def test_copy_with_overrides_accepts_falsy_overrides():
    ctx = EnvContext({"a": 1}, worker_index=3, vector_index=2, remote=True, num_workers=4)
    other = ctx.copy_with_overrides(env_config={}, worker_index=0, vector_index=0, remote=False,
                                    num_workers=0)
    assert dict(other) == {}
    assert (other.worker_index, other.vector_index, other.remote, other.num_workers) == (0, 0, False, 0)


def test_env_context_pickles_with_its_metadata():
    ctx = EnvContext({"a": 1}, worker_index=2, vector_index=1, remote=True, num_workers=3)
    back = pickle.loads(pickle.dumps(ctx))
    assert isinstance(back, EnvContext) and dict(back) == {"a": 1}
    assert (back.worker_index, back.vector_index, back.remote, back.num_workers) == (2, 1, True, 3)
    assert "worker_index=2" in repr(ctx)


def test_env_context_rejects_a_non_dict_config():
    with pytest.raises(TypeError, match=r"EnvContext needs a dict as env_config; received list"):
        EnvContext([1, 2], worker_index=0)


# ------------------------------------------------------------ env creation

def test_registered_name_comes_first_and_gets_the_context():
    seen = []

    def creator(ctx):
        seen.append(ctx)
        return gym.make("CartPole-v1")

    register_env("CartPole-v1", creator)  # shadows the gymnasium id
    ctx = EnvContext({"x": 1}, worker_index=1)
    env = get_env_creator("CartPole-v1")(ctx)
    assert isinstance(env, gym.Env) and seen == [ctx]


def test_registering_again_replaces_the_creator():
    register_env("mine", lambda ctx: 1)
    register_env("mine", lambda ctx: 2)
    assert get_env_creator("mine")(EnvContext({}, worker_index=0)) == 2


def test_a_callable_is_called_with_the_context():
    class MyEnv(gym.Env):
        def __init__(self, config):
            self.config = config

    ctx = EnvContext({"size": 3}, worker_index=0)
    env = get_env_creator(MyEnv)(ctx)
    assert env.config is ctx


def test_a_gymnasium_id_is_made_with_the_config_as_keyword_arguments():
    env = get_env_creator("CartPole-v1")(EnvContext({"max_episode_steps": 7}, worker_index=0))
    assert env.spec.id == "CartPole-v1" and env.spec.max_episode_steps == 7


def test_unknown_env_name_names_the_close_matches():
    register_env("my_cartpole", lambda ctx: None)
    with pytest.raises(ValueError, match=r"Unknown env 'CartPole-v9'.*Did you mean 'CartPole-v1'"):
        get_env_creator("CartPole-v9")
    with pytest.raises(ValueError, match=r"Did you mean 'my_cartpole'"):
        get_env_creator("my_cartpol")
    with pytest.raises(ValueError, match=r"Unknown env 'zzzzqqq'.*register_env\('zzzzqqq'"):
        get_env_creator("zzzzqqq")


def test_a_full_class_path_names_the_env_class_as_in_rllib():
    assert get_env_creator("tfrl.examples.envs.stateless_cartpole.StatelessCartPole") \
        is StatelessCartPole
    # An unknown class or module in the path: EnvError (a ValueError), RLlib's phrase.
    for path in ("tfrl.examples.envs.stateless_cartpole.NoSuchEnv", "no_such_pkg.mod.Env"):
        with pytest.raises(EnvError, match=r"The env string you provided \('" + path):
            get_env_creator(path)


def test_env_that_is_neither_a_name_nor_callable_is_a_type_error():
    with pytest.raises(TypeError, match=r"registered name, a gymnasium id or a callable.*received int: 3"):
        get_env_creator(3)


def test_register_env_checks_its_arguments():
    with pytest.raises(TypeError, match=r"register_env needs a str name; received int"):
        register_env(1, lambda ctx: None)
    with pytest.raises(TypeError, match=r"register_env\('x', \.\.\.\) needs a callable.*received str"):
        register_env("x", "CartPole-v1")


def test_make_gymnasium_vector_env_prefers_the_vector_entry_point():
    from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

    env = make_gymnasium_vector_env("CartPole-v1", 3, {"max_episode_steps": 5})
    assert isinstance(env.unwrapped, CartPoleVectorEnv) and env.num_envs == 3
    assert env.unwrapped.max_episode_steps == 5
    sync = make_gymnasium_vector_env("MountainCar-v0", 2)  # no vector entry point
    assert isinstance(sync.unwrapped, gym.vector.SyncVectorEnv)
    forced = make_gymnasium_vector_env("CartPole-v1", 2, vectorization_mode="sync")
    assert isinstance(forced.unwrapped, gym.vector.SyncVectorEnv)


def test_make_gymnasium_vector_env_rejects_unknown_ids():
    with pytest.raises(ValueError, match=r"'CartPole-v7' is not a gymnasium id. Did you mean 'CartPole-v1'"):
        make_gymnasium_vector_env("CartPole-v7", 2)
