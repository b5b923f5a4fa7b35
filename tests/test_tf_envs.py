"""The TF-native vector envs (tfrl.env.tf_envs) against gymnasium's own envs.

Equivalence: gymnasium's envs run 16 sub-envs x 625 random steps (10k steps per env) and
record their states; the TF env replays the same actions from the same start states in
one compiled loop, taking gymnasium's state only where gymnasium reset a sub-env (the
reset RNGs differ), and must give the same observations, rewards, terminations and
truncations within float32 tolerance. Acrobot is chaotic: last-bit differences between
numpy's and TF's float64 sin/cos (which depend on the CPU's vector instructions) grow
over hundreds of steps (here to 1.5e-5 after 400 steps), so its replay also takes
gymnasium's state every 100 steps. In float32 mode every recorded step is replayed from
gymnasium's state (one batched step of T x N sub-envs).
"""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.env.tf_envs import (TF_ENVS, TFCartPole, TFEnvState, TFMountainCarContinuous,
                              TFPendulum, make_tf_env)
from tfrl.utils.error import EnvError

GYM_IDS = ["CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCar-v0",
           "MountainCarContinuous-v0"]
NUM_ENVS = 16
NUM_STEPS = 625  # x 16 sub-envs = 10k steps per env


def _gym_record(gym_id, num_envs=NUM_ENVS, num_steps=NUM_STEPS):
    """Random-action steps of `num_envs` gymnasium envs: actions, results, states."""
    envs = [gym.make(gym_id) for _ in range(num_envs)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
        env.action_space.seed(1000 + i)

    def physics():
        return np.stack([np.asarray(env.unwrapped.state, np.float64) for env in envs])

    rec = {k: [] for k in ("physics", "action", "obs", "reward", "terminated", "truncated")}
    for _ in range(num_steps):
        rec["physics"].append(physics())  # the state each step starts from
        actions = [env.action_space.sample() for env in envs]
        results = [env.step(a) for env, a in zip(envs, actions)]
        for env, (_, _, terminated, truncated, _) in zip(envs, results):
            if terminated or truncated:
                env.reset()
        rec["action"].append(np.stack(actions))
        for i, key in enumerate(("obs", "reward", "terminated", "truncated")):
            rec[key].append(np.stack([r[i] for r in results]))
    return {k: np.stack(v) for k, v in rec.items()}  # [T, N, ...]


def _tf_replay(env, rec, resync):
    """The TF env's steps on the recorded actions; rows of `resync` [T, N] restart from
    gymnasium's recorded state."""

    @tf.function
    def replay(physics, actions, resync):
        def body(carry, xs):
            state = carry[0].state
            action, use_gym, gym_physics = xs
            state = state._replace(physics=tf.where(use_gym[:, None], gym_physics,
                                                    state.physics))
            step = env.step(state, action)
            return step, step.state.elapsed_steps

        state = env.make_state(physics[0], seed=7)
        # tf.scan carries a whole TFEnvStep; only its state is read.
        first = env.step(state, actions[0])._replace(state=state)
        steps, elapsed = tf.scan(body, (actions, resync, physics),
                                 initializer=(first, first.state.elapsed_steps))
        return steps, elapsed

    return replay(tf.constant(rec["physics"], env.dtype), tf.constant(rec["action"]),
                  tf.constant(resync))


def _expected_elapsed(done):
    elapsed, count = np.zeros(done.shape, np.int32), np.zeros(done.shape[1], np.int32)
    for t, d in enumerate(done):
        count = np.where(d, 0, count + 1)
        elapsed[t] = count
    return elapsed


@pytest.fixture(scope="module", params=GYM_IDS)
def recording(request):
    return request.param, _gym_record(request.param)


def test_trajectories_match_gymnasium(recording):
    gym_id, rec = recording
    env = make_tf_env(f"tfrl/{gym_id}", num_envs=NUM_ENVS)
    done = rec["terminated"] | rec["truncated"]
    assert done.any(axis=0).all() or gym_id == "MountainCarContinuous-v0"  # random play
    # Take gymnasium's state at the start and wherever it reset a sub-env.
    resync = np.concatenate([np.ones((1, NUM_ENVS), bool), done[:-1]])
    if gym_id == "Acrobot-v1":
        resync[::100] = True
    steps, elapsed = _tf_replay(env, rec, resync)
    np.testing.assert_array_equal(steps.terminated.numpy(), rec["terminated"])
    np.testing.assert_array_equal(steps.truncated.numpy(), rec["truncated"])
    np.testing.assert_allclose(steps.final_obs.numpy(), rec["obs"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(steps.reward.numpy(), rec["reward"], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(elapsed.numpy(), _expected_elapsed(done))
    # Where no episode ended, the next observation is the one reached.
    np.testing.assert_array_equal(steps.obs.numpy()[~done], steps.final_obs.numpy()[~done])
    if gym_id in ("CartPole-v1", "MountainCar-v0"):  # the same float64 arithmetic
        np.testing.assert_array_equal(steps.final_obs.numpy(), rec["obs"])


def test_float32_steps_match_gymnasium_to_float32_tolerance(recording):
    # Every recorded step from gymnasium's state, all at once: one env of T x N sub-envs.
    gym_id, rec = recording
    done = rec["terminated"] | rec["truncated"]
    elapsed_before = np.concatenate([np.zeros((1, NUM_ENVS), np.int32),
                                     _expected_elapsed(done)[:-1]])
    env = make_tf_env(f"tfrl/{gym_id}", num_envs=done.size, dtype=tf.float32)
    flat = {k: v.reshape(done.size, *v.shape[2:]) for k, v in rec.items()}
    step = env.step(env.make_state(flat["physics"], elapsed_before.reshape(-1)), flat["action"])
    np.testing.assert_array_equal(step.terminated.numpy(), flat["terminated"])
    np.testing.assert_array_equal(step.truncated.numpy(), flat["truncated"])
    np.testing.assert_allclose(step.final_obs.numpy(), flat["obs"], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(step.reward.numpy(), flat["reward"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_spaces_and_time_limit_are_gymnasiums(gym_id):
    gym_env = gym.make(gym_id)
    env = make_tf_env(f"tfrl/{gym_id}", num_envs=3)
    assert env.observation_space == gym_env.observation_space
    assert env.action_space == gym_env.action_space
    assert env.max_episode_steps == gym_env.spec.max_episode_steps
    state, obs = env.reset(seed=1)
    assert obs.shape == (3, *gym_env.observation_space.shape) and obs.dtype == tf.float32
    assert all(gym_env.observation_space.contains(o) for o in obs.numpy())
    gym_env.reset(seed=0)
    assert np.asarray(gym_env.unwrapped.state).shape == (env.physics_size,)


# gymnasium's reset ranges of each physics column (low, high), inclusive.
RESET_BOUNDS = {
    "CartPole-v1": ([-0.05] * 4, [0.05] * 4),
    "Pendulum-v1": ([-np.pi, -1.0], [np.pi, 1.0]),
    "Acrobot-v1": ([-0.1] * 4, [0.1] * 4),
    "MountainCar-v0": ([-0.6, 0.0], [-0.4, 0.0]),
    "MountainCarContinuous-v0": ([-0.6, 0.0], [-0.4, 0.0]),
}


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_reset_draws_gymnasiums_start_states_from_the_seed(gym_id):
    env = make_tf_env(f"tfrl/{gym_id}", num_envs=1000)
    state, obs = env.reset(seed=3)
    physics = state.physics.numpy()
    low, high = RESET_BOUNDS[gym_id]
    assert np.all(physics >= low) and np.all(physics <= high)
    spread = physics.max(axis=0) - physics.min(axis=0)
    np.testing.assert_allclose(spread, np.subtract(high, low),
                               atol=0.02 * np.max(np.abs([low, high])))
    np.testing.assert_array_equal(obs.numpy(), env.observe(state).numpy())
    again, other = env.reset(seed=3)[0], env.reset(seed=4)[0]
    np.testing.assert_array_equal(again.physics.numpy(), physics)
    assert not np.array_equal(other.physics.numpy(), physics)
    if gym_id == "Acrobot-v1":  # gymnasium draws it as float32
        np.testing.assert_array_equal(physics, physics.astype(np.float32))


def test_out_of_range_box_actions_are_clipped_and_costed_as_in_gymnasium():
    # Pendulum clips the torque, also in the cost; MountainCarContinuous clips the force
    # but costs the action as given.
    for gym_id, actions in (("Pendulum-v1", [-7.0, 3.5, 0.5]),
                            ("MountainCarContinuous-v0", [-7.0, 3.5, 0.5])):
        gym_envs = [gym.make(gym_id) for _ in actions]
        for i, gym_env in enumerate(gym_envs):
            gym_env.reset(seed=i)
        env = make_tf_env(f"tfrl/{gym_id}", num_envs=len(actions))
        state = env.make_state([np.asarray(e.unwrapped.state, np.float64) for e in gym_envs])
        step = env.step(state, np.array(actions, np.float32)[:, None])
        results = [e.step(np.array([a], np.float32)) for e, a in zip(gym_envs, actions)]
        np.testing.assert_allclose(step.reward.numpy(), [r[1] for r in results], rtol=1e-6)
        np.testing.assert_allclose(step.final_obs.numpy(), [r[0] for r in results], rtol=1e-6,
                                   atol=1e-7)


def test_auto_reset_restarts_ended_sub_envs():
    env = TFCartPole(num_envs=3)
    # Sub-env 0 leaves the track on this step, 1 and 2 go on.
    state = env.make_state([[2.39, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0],
                            [0.01, 0.0, 0.0, 0.0]], elapsed_steps=[7, 7, 3], seed=5)
    step = env.step(state, tf.constant([1, 1, 0]))
    np.testing.assert_array_equal(step.terminated.numpy(), [True, False, False])
    np.testing.assert_array_equal(step.truncated.numpy(), [False, False, False])
    np.testing.assert_array_equal(step.state.elapsed_steps.numpy(), [0, 8, 4])
    np.testing.assert_allclose(step.final_obs.numpy()[0], [2.41, 1.1951219, 0.0, -0.29268292],
                               rtol=1e-6)
    # The restarted sub-env is in gymnasium's start distribution and observed at once.
    assert np.all(np.abs(step.state.physics.numpy()[0]) < 0.05)
    np.testing.assert_array_equal(step.obs.numpy()[0], np.float32(step.state.physics[0]))
    np.testing.assert_array_equal(step.obs.numpy()[1:], step.final_obs.numpy()[1:])
    assert not np.array_equal(step.state.key.numpy(), state.key.numpy())


def test_time_limit_truncates_and_can_coincide_with_termination():
    env = TFCartPole(num_envs=2, max_episode_steps=3)
    state, _ = env.reset(seed=0)
    for t in range(1, 4):
        step = env.step(state, tf.constant([0, 1]))
        state = step.state
        np.testing.assert_array_equal(step.truncated.numpy(), [t == 3, t == 3])
        np.testing.assert_array_equal(state.elapsed_steps.numpy(), [t % 3, t % 3])
    # Gymnasium's TimeLimit: on the last allowed step, a terminal state gives both flags.
    state = env.make_state([[2.4, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], [2, 2])
    step = env.step(state, tf.constant([1, 1]))
    np.testing.assert_array_equal(step.terminated.numpy(), [True, False])
    np.testing.assert_array_equal(step.truncated.numpy(), [True, True])


def test_pendulum_truncates_at_200_steps_and_mountain_car_continuous_at_999():
    for env, limit in ((TFPendulum(num_envs=2), 200), (TFMountainCarContinuous(num_envs=2), 999)):
        state, _ = env.reset(seed=3)
        state = state._replace(elapsed_steps=tf.constant([limit - 2, limit - 1]))
        step = env.step(state, tf.zeros([2, 1]))
        np.testing.assert_array_equal(step.truncated.numpy(), [False, True])
        np.testing.assert_array_equal(step.state.elapsed_steps.numpy(), [limit - 1, 0])


def _xla_works():
    try:
        tf.function(lambda x: x + 1.0, jit_compile=True)(tf.constant(1.0))
        return True
    except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError,
            tf.errors.NotFoundError):
        return False


needs_xla = pytest.mark.skipif(not _xla_works(), reason="XLA cannot compile on this CPU")


def _random_actions(env, key):
    if isinstance(env.action_space, gym.spaces.Discrete):
        return tf.random.stateless_uniform([env.num_envs], seed=key, maxval=env.action_space.n,
                                           dtype=tf.int32)
    return tf.random.stateless_uniform([env.num_envs, 1], seed=key, minval=-2.0, maxval=2.0)


@needs_xla
# CartPole: the compiled rollout below. MountainCar-v0's ops (cos, clip, where on float64,
# integer actions) are a subset of CartPole's and MountainCarContinuous-v0's.
@pytest.mark.parametrize("gym_id", ["Pendulum-v1", "Acrobot-v1", "MountainCarContinuous-v0"])
def test_step_compiles_with_xla_and_traces_once(gym_id):
    env = make_tf_env(f"tfrl/{gym_id}", num_envs=8)
    traces = []

    def step(state, action):
        traces.append(1)
        return env.step(state, action)

    compiled = tf.function(step, jit_compile=True)
    state, _ = env.reset(seed=0)
    for t in range(2):
        action = _random_actions(env, tf.constant([t, 0], tf.int64))
        xla, eager = compiled(state, action), env.step(state, action)
        np.testing.assert_allclose(xla.final_obs.numpy(), eager.final_obs.numpy(), rtol=1e-6,
                                   atol=1e-6)
        np.testing.assert_allclose(xla.reward.numpy(), eager.reward.numpy(), rtol=1e-6)
        # The same key gives the same resets with and without XLA.
        np.testing.assert_array_equal(xla.state.key.numpy(), eager.state.key.numpy())
        np.testing.assert_allclose(xla.state.physics.numpy(), eager.state.physics.numpy(),
                                   rtol=1e-6, atol=1e-6)
        state = xla.state
    assert len(traces) == 1


@needs_xla
def test_compiled_rollout_is_deterministic_given_the_key():
    env = make_tf_env("tfrl/CartPole-v1", num_envs=64)

    @tf.function(jit_compile=True)
    def rollout(seed):
        state, _ = env.reset(seed)

        def body(t, state, total_reward, episodes):
            step = env.step(state, _random_actions(env, tf.stack([seed, tf.cast(t, tf.int64)])))
            done = tf.logical_or(step.terminated, step.truncated)
            return (t + 1, step.state, total_reward + tf.reduce_sum(step.reward),
                    episodes + tf.reduce_sum(tf.cast(done, tf.int32)))

        _, state, total_reward, episodes = tf.while_loop(
            lambda t, *_: t < 1000, body, (0, state, 0.0, 0))
        return state.physics, total_reward, episodes

    first, again, other = rollout(tf.constant(1, tf.int64)), rollout(
        tf.constant(1, tf.int64)), rollout(tf.constant(2, tf.int64))
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(first[0].numpy(), other[0].numpy())
    assert int(first[1]) == 64 * 1000  # reward 1 per step
    assert 64 * 1000 // 500 < int(first[2]) < 64 * 1000 // 8  # random play ends early


def test_registry_names_every_env():
    assert sorted(TF_ENVS) == sorted(f"tfrl/{gym_id}" for gym_id in GYM_IDS)
    assert repr(make_tf_env("tfrl/Acrobot-v1", 2)) == "TFAcrobot(Acrobot-v1, num_envs=2)"
    with pytest.raises(EnvError, match=r"No TF-native env named 'CartPole-v1'.*Did you mean "
                                       r"'tfrl/CartPole-v1'\?"):
        make_tf_env("CartPole-v1", 2)


@pytest.mark.parametrize("num_envs", [0, -1, 2.0, True, "4"])
def test_num_envs_must_be_a_positive_int(num_envs):
    with pytest.raises(ValueError, match=rf"num_envs must be an int >= 1. Received: "
                                         rf"num_envs={num_envs!r}"):
        TFCartPole(num_envs)


def test_bad_constructor_arguments_are_named():
    with pytest.raises(ValueError, match=r"max_episode_steps must be an int >= 1. Received: "
                                         r"max_episode_steps=0"):
        TFCartPole(2, max_episode_steps=0)
    with pytest.raises(ValueError, match=r"dtype must be tf.float32, tf.float64 or None"):
        TFCartPole(2, dtype=tf.int32)


def test_bad_actions_say_what_was_expected():
    cartpole, pendulum = TFCartPole(2), TFPendulum(2)
    state, _ = cartpole.reset(seed=0)
    with pytest.raises(TypeError, match=r"CartPole-v1 takes \[num_envs\] integer actions. "
                                        r"Received: dtype float32. Cast them"):
        cartpole.step(state, tf.constant([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"num_envs=2 takes actions of shape \[2\] \(integers\)"
                                         r". Received: shape \[2, 1\]"):
        cartpole.step(state, tf.constant([[0], [1]]))
    with pytest.raises(ValueError, match=r"actions are in Discrete\(2\). Received: \[0, 2\]"):
        cartpole.step(state, [0, 2])
    p_state, _ = pendulum.reset(seed=0)
    with pytest.raises(TypeError, match=r"Pendulum-v1 takes \[num_envs, 1\] float actions. "
                                        r"Received: dtype int32"):
        pendulum.step(p_state, tf.constant([[0], [1]]))
    with pytest.raises(ValueError, match=r"takes actions of shape \[2, 1\] \(floats\). "
                                         r"Received: shape \[2\]"):
        pendulum.step(p_state, tf.constant([0.0, 1.0]))
    # float64 actions are accepted (cast to the space's float32), as gymnasium clips them.
    assert pendulum.step(p_state, np.array([[0.5], [9.0]])).reward.dtype == tf.float32


def test_bad_states_and_seeds_say_what_was_expected():
    cartpole, pendulum = TFCartPole(2), TFPendulum(2)
    with pytest.raises(ValueError, match=r"The state does not belong to TFCartPole\(CartPole-v1, "
                                         r"num_envs=2\): its physics has shape \[2, 2\]"):
        cartpole.step(pendulum.reset(seed=0)[0], tf.constant([0, 1]))
    with pytest.raises(TypeError, match=r"The state's physics is float32; TFCartPole\(CartPole-v1, "
                                        r"num_envs=2\) computes in float64"):
        cartpole.step(TFCartPole(2, dtype=tf.float32).reset(seed=0)[0], tf.constant([0, 1]))
    with pytest.raises(TypeError, match=r"state must be the TFEnvState.*Received: tuple"):
        cartpole.step((1, 2, 3), tf.constant([0, 1]))
    with pytest.raises(ValueError, match=r"physics has shape \[num_envs, 4\] = \[2, 4\]. "
                                         r"Received: shape \[4\]"):
        cartpole.make_state([0.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"elapsed_steps has shape \[num_envs\] = \[2\]"):
        cartpole.make_state(np.zeros((2, 4)), elapsed_steps=[1, 2, 3])
    with pytest.raises(TypeError, match=r"seed must be an int.*Received: seed=0.5"):
        cartpole.reset(seed=0.5)
    with pytest.raises(ValueError, match=r"seed must be .* Received: int32 tensor of shape \[3\]"):
        cartpole.reset(seed=[1, 2, 3])
    state = cartpole.make_state(np.zeros((2, 4)), seed=[4, 5])
    assert isinstance(state, TFEnvState) and state.key.numpy().tolist() == [4, 5]
    # Python floats keep float64 precision.
    assert cartpole.make_state([[0.0, 0.0, 0.21, 0.0]] * 2).physics.numpy()[0, 2] == 0.21
