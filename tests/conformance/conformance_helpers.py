"""What the conformance suite builds for every registered algorithm: small spaces and envs,
the algorithm's default config with small sizes, its policy under a named strategy, and
batches sampled and postprocessed by the policy itself.

An algorithm joins the suite by being registered in `tfrl.algorithms.registry.ALGORITHMS`:
the suite reads its config class (the defaults) and `default_policy_class` from there.
"""

from typing import Any, Dict, List, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms.registry import ALGORITHMS, get_algorithm_class
from tfrl.env.multi_agent_env import make_multi_agent
from tfrl.env.registry import register_env
from tfrl.examples.envs.two_step_game import TwoStepGameWithGroupedAgents
from tfrl.policy.sample_batch import SampleBatch
from tfrl.policy.strategy import make_strategy
from graph_options import without_graph_optimizer  # noqa: F401 (re-exported)

ALGORITHM_NAMES = sorted(ALGORITHMS)


# CartPole-like (Box obs, Discrete actions) and Pendulum-like (Box obs, Box actions).
SPACES: Dict[str, Tuple[gym.Space, gym.Space]] = {
    "discrete": (gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(2)),
    "box": (gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
            gym.spaces.Box(-2.0, 2.0, (1,), np.float32)),
}
SPACE_NAMES = sorted(SPACES)

# Sizes only: every key that the algorithm's config has is set, others are left out.
SMALL = {
    "seed": 0,
    "model": {"fcnet_hiddens": [16]},
    "actor_hiddens": [16],  # TD3, DDPG
    "critic_hiddens": [16],
    # SAC's actor and critics (merged into their defaults).
    "policy_model_config": {"fcnet_hiddens": [16]},
    "q_model_config": {"fcnet_hiddens": [16]},
    "num_sgd_iter": 2,
    "sgd_minibatch_size": 16,
    "train_batch_size": 32,
    "rollout_fragment_length": 16,
    "batch_mode": "complete_episodes",
    "num_workers": 0,
    "num_envs_per_worker": 1,
    "min_iter_time_s": 0,  # A2C: iterations of a fixed size, not of 10 s
    # Off-policy (DQN): iterations of one sampling round, learning from the first
    # round on, a target update every other round, the replay buffer in checkpoints.
    "timesteps_per_iteration": 0,
    "num_steps_sampled_before_learning_starts": 16,
    "target_network_update_freq": 32,
    "store_buffer_in_checkpoints": True,
}

# Statistics that are not means over rows: each replica computes its own over its half of
# the minibatch and `learner_stats` averages the replicas' values (weighted by their real
# steps for sequences), which differs from the value over the whole minibatch (explained
# variance divides by the rows' variance).
PER_REPLICA_STATS = {"vf_explained_var"}


def supports(name: str, space: str) -> bool:
    """Whether the algorithm's policy accepts the `space` pair's action space: by its
    class attribute `action_space_types` (a tuple of `gym.Space` classes; absent: all)."""
    policy_class = get_algorithm_class(name).default_policy_class
    types = getattr(policy_class, "action_space_types", None)
    return types is None or isinstance(SPACES[space][1], types)


# (algorithm, space) pairs the suite runs, and those each algorithm must reject clearly.
SUPPORTED = [(a, s) for a in ALGORITHM_NAMES for s in SPACE_NAMES if supports(a, s)]
UNSUPPORTED = [(a, s) for a in ALGORITHM_NAMES for s in SPACE_NAMES if not supports(a, s)]


def supports_recurrent(name: str) -> bool:
    """Whether the algorithm's policy takes recurrent models: by its class attribute
    `supports_recurrent_models` (absent: it does)."""
    policy_class = get_algorithm_class(name).default_policy_class
    return getattr(policy_class, "supports_recurrent_models", True)


# The recurrent checks run each algorithm on one action space, not two (they are the
# suite's slowest cases): what recurrence adds (sequences cut, padded and masked; state
# in and out; the LSTM's weights and optimizer slots) does not depend on the action
# space, and the action distributions' code is checked on both spaces by the
# feed-forward suite for every algorithm. The spaces alternate, so that sequences meet
# both a categorical and a Gaussian head. IMPALA and APPO share one sequence path
# (ImpalaTFPolicy's V-trace per sequence), as A2C and A3C share a policy. An algorithm
# not listed runs on every space it supports.
RECURRENT_ONE_SPACE = {"A2C": "discrete", "A3C": "box", "BC": "discrete", "IMPALA": "discrete",
                       "APPO": "box", "MARWIL": "box", "PG": "discrete", "PPO": "box"}

# The pairs the recurrent checks run (use_lstm), and the algorithms that must refuse it.
RECURRENT_SUPPORTED = [(a, s) for a, s in SUPPORTED if supports_recurrent(a)
                       and RECURRENT_ONE_SPACE.get(a, s) == s]
RECURRENT_UNSUPPORTED = [a for a in ALGORITHM_NAMES if not supports_recurrent(a)]


class FixedStart(gym.Wrapper):
    """Every episode starts from the same state (reset with seed 0): the env then carries
    no state across `sample()` calls that a checkpoint would have to hold."""

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=0, options=options)


ENVS = {
    "discrete": "conformance_cartpole",
    "box": "conformance_pendulum",
}
register_env(ENVS["discrete"],
             lambda ctx: FixedStart(gym.make("CartPole-v1", max_episode_steps=24)))
register_env(ENVS["box"],
             lambda ctx: FixedStart(gym.make("Pendulum-v1", max_episode_steps=16)))

# Algorithms whose policy takes none of `SPACES` (QMIX: a group of agents, Tuple spaces)
# are not in the policy-level suites; they run on this grouped multi-agent env where the
# suite trains whole algorithms (the digests), and their own tests cover the rest.
GROUPED_ENV = "conformance_two_step_game"
register_env(GROUPED_ENV, lambda ctx: TwoStepGameWithGroupedAgents(ctx))


# Algorithms for several agents whose policy takes `SPACES` (MAPPO: class attribute
# `multi_agent_only`) run the policy-level suites as usual and train as whole algorithms
# on two agents, each in its own copy of the `space` pair's env (one shared policy).
MULTI_AGENT_ENVS = {space: f"{env}_two_agents" for space, env in ENVS.items()}
for _space, _env in ENVS.items():
    register_env(MULTI_AGENT_ENVS[_space],
                 lambda ctx, _env=_env: make_multi_agent(_env)({**ctx, "num_agents": 2}))


def multi_agent_only(name: str) -> bool:
    """Whether the algorithm trains only on multi-agent envs (`multi_agent_only`)."""
    return bool(getattr(get_algorithm_class(name), "multi_agent_only", False))


def algorithm_config(name: str, **overrides: Any) -> Dict[str, Any]:
    """The registered algorithm's default config dict with the suite's small sizes."""
    _, config_class = get_algorithm_class(name, return_config=True)
    keys = config_class().to_dict()
    small = {key: value for key, value in SMALL.items() if key in keys}
    # Through the config class, so that aliases of a key (min_time_s_per_iteration for
    # min_iter_time_s) agree in the dict.
    return config_class.from_dict({**small, **overrides}).to_dict()


# What a subclass may define and still be its parent's policy (a docstring, the class
# bookkeeping Python adds, and the config class its missing keys default from).
_CONFIG_ONLY_MEMBERS = {"__module__", "__qualname__", "__doc__", "__firstlineno__",
                        "__static_attributes__", "__annotations__", "__abstractmethods__",
                        "_abc_impl", "config_class"}


def policy_twin(name: str) -> Optional[str]:
    """The registered algorithm whose policy-level conformance cases are exactly `name`'s,
    or None: `name`'s policy class only re-declares `config_class` over that algorithm's
    policy class, and with the suite's small sizes both configs are equal (A3C: A2C's
    policy and config, differing only in sampling sizes and iteration time, which the
    suite sets). The policy-level cases (the same compiled functions on the same config)
    run once, for the twin; algorithm-level cases (checkpoints, plans) run for both."""
    policy_class = get_algorithm_class(name).default_policy_class
    if set(vars(policy_class)) - _CONFIG_ONLY_MEMBERS:
        return None
    for other in ALGORITHM_NAMES:
        if (other != name
                and get_algorithm_class(other).default_policy_class in policy_class.__bases__
                and algorithm_config(other) == algorithm_config(name)):
            return other
    return None


def strategy_named(name: str) -> tf.distribute.Strategy:
    """The default strategy, one device, or 2-replica MirroredStrategy on logical CPUs."""
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        return make_strategy({})
    return make_strategy({"num_gpus": 2, "_fake_gpus": True})


def make_policy(name: str, space: str, strategy: str = "one_device",
                policy_class: Any = None, **overrides: Any) -> Any:
    """The algorithm's default policy on the `space` pair, built from its default config."""
    algo_class = get_algorithm_class(name)
    policy_class = policy_class or algo_class.default_policy_class
    obs_space, action_space = SPACES[space]
    keras.utils.set_random_seed(0)
    return policy_class(obs_space, action_space, algorithm_config(name, **overrides),
                        strategy=strategy_named(strategy))


def sgd_policy_class(name: str) -> type:
    """The algorithm's policy with plain SGD: Adam normalises each gradient entry, which
    turns float rounding differences between strategies into visible weight differences."""
    base = get_algorithm_class(name).default_policy_class

    def make_optimizer(self):
        return keras.optimizers.SGD(0.2)

    return type(f"SGD{base.__name__}", (base,), {"make_optimizer": make_optimizer})


def observations(space: str, rows: int, seed: int) -> np.ndarray:
    obs_space = SPACES[space][0]
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, (rows,) + obs_space.shape).astype(np.float32)


def train_batch(policy: Any, space: str, rows: int, seed: int) -> SampleBatch:
    """A trajectory of `rows` steps acted by `policy` and postprocessed by it (so it holds
    every column the algorithm's loss reads)."""
    rng = np.random.default_rng(seed)
    obs = observations(space, rows + 1, seed)
    actions, _, extras = policy.compute_actions(obs[:-1], explore=True)
    terminateds = np.zeros(rows, bool)
    terminateds[-1] = True
    batch = SampleBatch(obs=obs[:-1], new_obs=obs[1:], actions=actions,
                        rewards=rng.normal(size=rows).astype(np.float32),
                        terminateds=terminateds, truncateds=np.zeros(rows, bool),
                        eps_id=np.zeros(rows, np.int64), t=np.arange(rows), **extras)
    return policy.postprocess_trajectory(batch)


def assert_same_state(got: Any, want: Any, where: str = "state") -> None:
    """Bit-for-bit equality of two nested states (dicts, lists, arrays, scalars)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (where, got, want)
        for key in want:
            assert_same_state(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same_state(a, b, f"{where}[{i}]")
    else:
        np.testing.assert_array_equal(got, want, err_msg=where, strict=True)


# ------------------------------------------------------------------ recurrent models

#: The model overrides of the suite's recurrent variant: the catalog's LSTM (`use_lstm`),
#: short sequences so that a train batch holds many, some of them padded.
RECURRENT_MODEL = {"fcnet_hiddens": [16], "use_lstm": True, "lstm_cell_size": 8,
                   "max_seq_len": 4}

#: `RECURRENT_MODEL` with the value head on the policy's LSTM (`vf_share_layers`): one
#: LSTM instead of two, about half the tracing time of a learning step, for the checks
#: whose property does not depend on the value network having its own LSTM (tracing
#: once, the same update on one device and 2 replicas). State round trips and exports keep
#: `RECURRENT_MODEL` (four state tensors: the value LSTM's too); the value LSTM's
#: training path has its own tests (tests/test_recurrent_training_path.py).
SHARED_RECURRENT_MODEL = {**RECURRENT_MODEL, "vf_share_layers": True}

#: Episode lengths of a recurrent train batch of 32 / 48 rows: most are not a multiple
#: of max_seq_len, so sequences are cut short at episode ends and padded for learning;
#: both give an even number of sequences (10, 14), which 2 replicas can split.
RECURRENT_EPISODES = {32: (9, 10, 13), 48: (10, 21, 17)}


def make_recurrent_policy(name: str, space: str, strategy: str = "one_device",
                          policy_class: Any = None, model: Optional[Dict[str, Any]] = None,
                          **overrides: Any) -> Any:
    """`make_policy` with the suite's LSTM (`model`, default `RECURRENT_MODEL`)."""
    return make_policy(name, space, strategy, policy_class=policy_class,
                       model=model or RECURRENT_MODEL, **overrides)


def assert_each_function_traced_once(policy: Any, info: Dict[str, Any]) -> None:
    """The policy's compiled functions (acting, values, learning, gradients and their
    application) each traced once; `info`: its last `learn_on_batch` result."""
    assert set(policy.num_traces) >= {"compute_actions", "value", "learn_on_batch",
                                      "compute_gradients", "apply_gradients"}
    assert all(count == 1 for count in policy.num_traces.values()), policy.num_traces
    assert info["learner_stats"]["num_traces"] == 1


def batched_initial_state(policy: Any, rows: int) -> List[np.ndarray]:
    """The policy's initial state repeated for `rows` agents."""
    return [np.repeat(s[None], rows, axis=0) for s in policy.get_initial_state()]


def recurrent_train_batch(policy: Any, space: str, rows: int, seed: int) -> SampleBatch:
    """Episodes (lengths `RECURRENT_EPISODES[rows]`) acted step by step by the recurrent
    `policy`, carrying its state as a sampler does (`state_in_<i>` / `state_out_<i>` on
    every row), each postprocessed by the policy, then concatenated. `learn_on_batch`
    cuts them into sequences."""
    rng = np.random.default_rng(seed)
    episodes = []
    for eps_id, length in enumerate(RECURRENT_EPISODES[rows]):
        obs = observations(space, length + 1, seed * 100 + eps_id)
        state = batched_initial_state(policy, 1)
        columns: Dict[str, list] = {}
        for t in range(length):
            actions, state_out, extras = policy.compute_actions(obs[t:t + 1], state,
                                                                explore=True)
            row = {"actions": actions[0], **{k: v[0] for k, v in extras.items()}}
            row.update({f"state_in_{i}": s[0] for i, s in enumerate(state)})
            row.update({f"state_out_{i}": s[0] for i, s in enumerate(state_out)})
            for key, value in row.items():
                columns.setdefault(key, []).append(value)
            state = state_out
        terminateds = np.zeros(length, bool)
        terminateds[-1] = True
        batch = SampleBatch(obs=obs[:-1], new_obs=obs[1:],
                            rewards=rng.normal(size=length).astype(np.float32),
                            terminateds=terminateds, truncateds=np.zeros(length, bool),
                            eps_id=np.full(length, eps_id, np.int64), t=np.arange(length),
                            **{k: np.stack(v) for k, v in columns.items()})
        episodes.append(policy.postprocess_trajectory(batch))
    return SampleBatch.concat_samples(episodes)


def assert_exported_states_follow_the_live_policy(policy: Any, loaded: Any, rows: int = 3,
                                                  steps: int = 12) -> None:
    """`rows` agents step `steps` times through the live recurrent `policy` and through its
    loaded SavedModel, each side carrying its own state: actions, values and states agree
    at every step; sampling in the SavedModel moves the state the same way."""
    signature = loaded.signatures["deterministic_action"]
    num_states = policy.num_state_tensors()
    # [h, c], plus the value's own [h_vf, c_vf] without vf_share_layers; attention: one
    # memory per transformer unit.
    assert num_states == len(policy.get_initial_state()) >= 1
    assert sorted(signature.structured_input_signature[1]) == [
        "obs"] + [f"state_in_{i}" for i in range(num_states)]
    live_state = exported_state = batched_initial_state(policy, rows)
    for t in range(steps):
        obs = np.random.default_rng(100 + t).uniform(
            -1.0, 1.0, (rows,) + policy.observation_space.shape).astype(np.float32)
        actions, live_state, extras = policy.compute_actions(obs, live_state, explore=False)
        out = signature(obs=tf.constant(obs), **{
            f"state_in_{i}": tf.constant(s) for i, s in enumerate(exported_state)})
        exported_state = [out[f"state_out_{i}"].numpy() for i in range(num_states)]
        np.testing.assert_allclose(out["actions"].numpy(), actions, rtol=1e-5, atol=1e-6,
                                   err_msg=f"step {t}")
        np.testing.assert_allclose(out["vf_preds"].numpy(), extras["vf_preds"], rtol=1e-5,
                                   atol=1e-6, err_msg=f"step {t}")
        for i in range(num_states):
            np.testing.assert_allclose(exported_state[i], live_state[i], rtol=1e-5,
                                       atol=1e-6, err_msg=f"step {t}, state {i}")
    # The state moved away from the initial one: the check covers the recurrence.
    assert np.abs(live_state[0]).max() > 1e-3
    # Sampling changes the actions, not the next state (no prev-action inputs here).
    inputs = {"obs": tf.constant(obs),
              **{f"state_in_{i}": tf.constant(s) for i, s in enumerate(live_state)}}
    sampled = loaded.signatures["stochastic_action"](**inputs)
    greedy = signature(**inputs)
    assert sampled["actions"].numpy().shape == (rows,) + policy.action_space.shape
    for i in range(num_states):
        np.testing.assert_array_equal(sampled[f"state_out_{i}"].numpy(),
                                      greedy[f"state_out_{i}"].numpy())


def make_algorithm(algo, space, **overrides):
    """The algorithm on the `space` pair's env (`"grouped"`: `GROUPED_ENV`; two agents
    of it for a `multi_agent_only` algorithm)."""
    env = (GROUPED_ENV if space == "grouped" else
           MULTI_AGENT_ENVS[space] if multi_agent_only(algo) else ENVS[space])
    return get_algorithm_class(algo)(config=algorithm_config(algo, env=env, **overrides))


def learner_stats(result):
    return result["info"]["learner"]["default_policy"]["learner_stats"]


def trace(result):
    return (result["timesteps_total"], result["episodes_total"], result["episode_reward_mean"],
            learner_stats(result))


# MAPPO's policy acts and samples through PPO's catalog actor and distributions (PPO's
# cases cover both spaces); what it adds, the centralized critic, does not depend on the
# action space: its policy-level cases run on one space (its algorithm-level ones on both).
POLICY_ONE_SPACE = {"MAPPO": "discrete"}

# The pairs the policy-level suites run: every supported pair but a `policy_twin`'s (whose
# cases would repeat its twin's exactly) and but the spaces `POLICY_ONE_SPACE` leaves out.
POLICY_SUPPORTED = [(a, s) for a, s in SUPPORTED if policy_twin(a) is None
                    and POLICY_ONE_SPACE.get(a, s) == s]
RECURRENT_POLICY_SUPPORTED = [(a, s) for a, s in RECURRENT_SUPPORTED if policy_twin(a) is None]

#: The pairs of the most expensive recurrent check (one device and 2 replicas):
#: APPO's is costly (its target network is built and traced with each policy) and its
#: sequences take IMPALA's code path, which the check runs; APPO keeps the
#: algorithm-level checks.
RECURRENT_STRATEGY_SUPPORTED = [(a, s) for a, s in RECURRENT_POLICY_SUPPORTED if a != "APPO"]


def assert_state_round_trips_and_export_follows(algo: str, space: str, tmp_path: Any,
                                                model: Optional[Dict[str, Any]] = None,
                                                export_rows: int = 3,
                                                export_steps: int = 12,
                                                export: bool = True) -> None:
    """A recurrent policy (`model`, default `RECURRENT_MODEL`) that learned once and
    another one (other seed) set to its state: states round-trip bit for bit, both act
    and learn alike; then (with `export`) the source's SavedModel (state in, state out)
    acts like it step by step (`export_rows` agents, `export_steps` steps)."""
    source = make_recurrent_policy(algo, space, model=model)
    source.learn_on_batch(recurrent_train_batch(source, space, 32, seed=1))
    state = source.get_state()
    assert state["num_grad_updates"] > 0
    target = make_recurrent_policy(algo, space, model=model, seed=123)
    target.set_state(state)
    assert_same_state(target.get_state(), state)
    # Recurrent models act on the TF inference path: its sampling generator is restored,
    # so the restored policy samples the same actions.
    obs = observations(space, 5, 2)
    states = batched_initial_state(source, 5)
    assert_same_state(target.compute_actions(obs, states, explore=True),
                      source.compute_actions(obs, states, explore=True), "sampled actions")
    # One actor acts for both: their clocks agree.
    actor = make_recurrent_policy(algo, space, model=model, seed=7)
    for seed in (2, 3):
        obs = observations(space, 5, seed)
        states = [s + 0.5 for s in batched_initial_state(source, 5)]
        assert_same_state(target.compute_actions(obs, states, explore=False),
                          source.compute_actions(obs, states, explore=False),
                          "compute_actions")
        batch = recurrent_train_batch(actor, space, 48, seed=seed)
        assert_same_state(target.learn_on_batch(batch)["learner_stats"],
                          source.learn_on_batch(batch)["learner_stats"], "learner_stats")
    assert_same_state(target.get_state(), source.get_state())
    if not export:
        return
    # The SavedModel (state in, state out) acts like the live policy step by step.
    source.export_model(str(tmp_path / "model"))
    assert_exported_states_follow_the_live_policy(
        source, tf.saved_model.load(str(tmp_path / "model")), rows=export_rows,
        steps=export_steps)
