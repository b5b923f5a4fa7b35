"""QMixTFPolicy: QMIX for one group of agents (RLlib's `QMixTorchPolicy`, in TensorFlow).

The policy acts for a grouped agent (`MultiAgentEnv.with_agent_groups()`): its
observation space is the Tuple of the N members' spaces (flattened by the rollout
worker's preprocessor; `observation_space.original_space` is the Tuple) and its action
space the Tuple of their Discrete spaces, all alike. A member's space may be a Dict with
an `"obs"` entry (what the agent network sees), an `"action_mask"` entry (`Box(0, 1,
(A,))`: the allowed actions) and a `"state"` entry (the global state the mixer reads;
without it the mixer reads all members' observations).

Acting: one agent network (`model.make_agent_network`, shared by the members) gives each
member's Q-values. The GRU (`agent_network="gru"`, the default) runs one step (in numpy
on a copy of its weights, `model.gru_step_numpy`; `config["inference"]="tf"`: in one
compiled call) on the observations and each member's hidden state (`state_batches[0]` `[B, N, H]`;
`get_initial_state()` at an episode's start) and returns the next state, which the
sampler carries to the next step and stores with the batch (`state_in_0`,
`state_out_0`); the feed-forward network (`"fcnet"`) runs in numpy on a copy of its
weights (refreshed after each change of them; `config["inference"]="tf"`: in one
compiled call instead). Each member takes its best allowed action, or with probability
epsilon a uniform allowed one (drawn from the policy's seeded `sampling_rng`); epsilon
falls linearly from `initial_epsilon` to `final_epsilon` over `epsilon_timesteps` of
the policy's timestep. The actions come back as a tuple of `[B]` arrays, one per member,
as RLlib's.

Learning: `learn_on_batch` arranges the batch as `B` sequences of `T` steps: a replay of
sequences (with `seq_lens`) as it is, a flat batch cut at episode ends and every
`model["max_seq_len"]` steps (the GRU) or as one-step sequences (transitions, the
feed-forward network); then one compiled step per minibatch: `qmix_loss`'s functions on
the online and target agent networks (the GRU unrolled over each sequence from the state
stored with its first step) and mixers (`mixers`), RMSProp (`lr`, or `lr_schedule` over
the timesteps; `optim_alpha`, `optim_eps`) on the agent network's and mixer's weights
with their global norm clipped at `grad_clip`. The team's reward is the batch's
`rewards` (the group's, the members' sum); without a mixer each member learns from its
own reward, which `postprocess_trajectory` reads from the info's `"_group_rewards"` into
the `group_rewards` column. `update_target()` copies the agent network and the mixer
into their targets (the algorithm calls it every `target_network_update_freq` sampled
steps).
"""

from typing import Any, ClassVar, Dict, List, Optional, Sequence, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms.policy_checks import check_no_recurrent_model
from tfrl.algorithms.qmix.mixers import QMixer, VDNMixer
from tfrl.algorithms.qmix.model import gru_step_numpy, make_agent_network
from tfrl.algorithms.qmix.qmix_config import (AGENT_NETWORKS, EXPLORATION_DEFAULTS, MIXERS,
                                              MODEL_DEFAULTS, QMixConfig)
from tfrl.algorithms.qmix.qmix_loss import (
    MASKED_Q, chosen_action_q, qmix_sequence_td_loss, target_agent_q)
from tfrl.core.columns import Columns
from tfrl.env.multi_agent_env import ENV_STATE, GROUP_REWARDS
from tfrl.execution.replay_buffer import WEIGHTS
from tfrl.execution.replay_buffer_rows import piece_ends
from tfrl.models.model_defaults import model_setting
from tfrl.models.action_mask import check_mask_space, uniform_allowed_actions
from tfrl.models.preprocessors import get_preprocessor
from tfrl.models.tf.target_update import assign_weights, hard_update
from tfrl.policy.policy import Policy
from tfrl.policy.numpy_inference import (WeightReader, activation_problem, dense_params,
                                         mlp_forward)
from tfrl.policy.policy_config import FrozenConfig
from tfrl.policy.strategy import make_strategy
from tfrl.utils.schedules import LinearSchedule, make_schedule

# The compiled learning step's inputs, in order: `[B, T, ...]` for B sequences of T steps
# (T = 1: transitions), and the GRU's state at each sequence's start `[B, N, H]`.
LEARNING_INPUTS = ("obs", "state", "actions", "rewards", "terminateds", "next_obs",
                   "next_state", "next_action_mask", "seq_mask", "weights", "h0")
# The column of each member's own reward `[T, N]` (read without a mixer).
GROUP_REWARDS_COLUMN = "group_rewards"
_OBS_KEY, _MASK_KEY = "obs", "action_mask"
_GROUP_HINT = ("Group the agents with MultiAgentEnv.with_agent_groups(), whose grouped agent "
               "has a Tuple of the members' spaces.")


class GroupLayout:
    """Where a grouped agent's parts sit in its flat (preprocessed) observation: N
    segments of one member each, and in a segment the agent network's observation
    features, the action mask and the state.

    Args:
        observation_space: The policy's observation space (preprocessed, with
            `original_space`, or the raw Tuple).
        action_space: The Tuple of the members' Discrete action spaces.
        owner: The name errors start with.

    Raises:
        ValueError: For spaces QMIX cannot take (see the module docstring).
    """

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, owner: str):
        if not isinstance(action_space, gym.spaces.Tuple) or not action_space.spaces:
            raise ValueError(
                f"{owner} needs a Tuple action space, one Discrete per agent of the group; "
                f"received {action_space}. {_GROUP_HINT}")
        first = action_space.spaces[0]
        if not isinstance(first, gym.spaces.Discrete):
            raise ValueError(f"{owner} needs Discrete actions for each agent of the group "
                             f"(one Q-value per action); received action space {action_space}.")
        if any(s != first for s in action_space.spaces):
            raise ValueError(f"{owner}: the agents of a group must have the same action space "
                             f"(they share one network); received {action_space}.")
        raw = getattr(observation_space, "original_space", observation_space)
        if not isinstance(raw, gym.spaces.Tuple):
            raise ValueError(
                f"{owner} needs a Tuple observation space, one entry per agent of the group; "
                f"received {raw}. {_GROUP_HINT}")
        if len(raw.spaces) != len(action_space.spaces):
            raise ValueError(
                f"{owner}: the observation space has {len(raw.spaces)} agents and the action "
                f"space {len(action_space.spaces)}; received {raw} and {action_space}.")
        member = raw.spaces[0]
        if any(str(s) != str(member) for s in raw.spaces):
            raise ValueError(f"{owner}: the agents of a group must have the same observation "
                             f"space (they share one network); received {raw}.")
        self.raw_space = raw
        self.preprocessed = hasattr(observation_space, "original_space")
        self.preprocessor = get_preprocessor(raw)(raw)
        self.n_agents = len(raw.spaces)
        self.n_actions = int(first.n)
        self.segment = get_preprocessor(member)(member).size
        self.obs_range = (0, self.segment)
        self.mask_range: Optional[Tuple[int, int]] = None
        self.state_range: Optional[Tuple[int, int]] = None
        if isinstance(member, gym.spaces.Dict):
            if _OBS_KEY not in member.spaces:
                raise ValueError(
                    f"{owner}: an agent's Dict observation needs an {_OBS_KEY!r} entry (what "
                    f"the agent network sees), with optional {_MASK_KEY!r} and {ENV_STATE!r} "
                    f"entries; received {member}.")
            start = 0
            for key, child in member.spaces.items():
                size = get_preprocessor(child)(child).size
                if key == _OBS_KEY:
                    self.obs_range = (start, start + size)
                elif key == _MASK_KEY:
                    check_mask_space(child, self.n_actions, _MASK_KEY)
                    self.mask_range = (start, start + size)
                elif key == ENV_STATE:
                    self.state_range = (start, start + size)
                start += size
        self.obs_size = self.obs_range[1] - self.obs_range[0]
        self.state_size = (self.state_range[1] - self.state_range[0] if self.state_range
                           else self.n_agents * self.obs_size)
        self.flat_size = self.n_agents * self.segment

    def flat(self, obs_batch: Any, owner: str) -> np.ndarray:
        """The observations as a flat float32 `[B, N * segment]` batch."""
        if not self.preprocessed:
            return np.asarray(self.preprocessor.transform_batch(obs_batch), np.float32)
        flat = np.asarray(obs_batch, np.float32)
        if flat.ndim != 2 or flat.shape[1] != self.flat_size:
            raise ValueError(
                f"{owner}: observations must be a batch of flat (preprocessed) grouped "
                f"observations [B, {self.flat_size}]; received shape {flat.shape}.")
        return flat

    def split(self, flat: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray], np.ndarray]:
        """`(obs [B, N, obs_size], action mask [B, N, A] or None, state [B, S])`."""
        segments = flat.reshape(len(flat), self.n_agents, self.segment)  # [B, N, seg]
        obs = segments[:, :, self.obs_range[0]:self.obs_range[1]]
        mask = (None if self.mask_range is None
                else segments[:, :, self.mask_range[0]:self.mask_range[1]])
        state = (segments[:, 0, self.state_range[0]:self.state_range[1]] if self.state_range
                 else obs.reshape(len(flat), -1))
        return np.ascontiguousarray(obs), mask, np.ascontiguousarray(state)


class QMixTFPolicy(Policy):
    """QMIX's policy for one group of agents (config: `QMixConfig`'s fields); see the
    module docstring.

    Args:
        observation_space: The group's (preprocessed) observation space.
        action_space: The Tuple of the members' Discrete action spaces.
        config: Policy config; missing keys take `QMixConfig`'s defaults.
        strategy: The `tf.distribute.Strategy` to build under (one device only).

    Raises:
        ValueError: For spaces that are not a group's (see `GroupLayout`), a catalog
            recurrent model (`use_lstm`, `use_attention`), an unknown `agent_network`, or
            a strategy with more than one replica.
    """

    config_class = QMixConfig
    # The action spaces it accepts (read by the conformance suite too).
    action_space_types: ClassVar[Tuple[type, ...]] = (gym.spaces.Tuple,)
    # The catalog's recurrent wrappers (use_lstm, use_attention) are refused: the agent
    # network is QMIX's own (its GRU). Read by the conformance suite too.
    supports_recurrent_models: ClassVar[bool] = False

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Optional[dict] = None, *,
                 strategy: Optional[tf.distribute.Strategy] = None):
        owner = type(self).__name__
        check_no_recurrent_model(config or {}, owner,
                                 hint="QMIX builds its own agent network: set them to False "
                                      "(agent_network='gru', the default, is recurrent).")
        self.layout = GroupLayout(observation_space, action_space, owner)
        super().__init__(observation_space, action_space, config or {})
        self.config = FrozenConfig({**self.default_config(), **self.config})
        config = self.config
        if config["mixer"] not in MIXERS:
            raise ValueError(f"{owner}: mixer must be one of {MIXERS}; received "
                             f"{config['mixer']!r}.")
        if config["agent_network"] not in AGENT_NETWORKS:
            raise ValueError(f"{owner}: agent_network must be one of {AGENT_NETWORKS}; "
                             f"received {config['agent_network']!r}.")
        self.recurrent = config["agent_network"] == "gru"
        model_config = {**MODEL_DEFAULTS, **config["model"]}
        # The longest sequence a flat batch is cut into (the GRU's learning).
        self.max_seq_len = int(model_setting(model_config, "max_seq_len"))
        self.strategy = strategy if strategy is not None else make_strategy(config)
        if self.strategy.num_replicas_in_sync != 1:
            raise ValueError(f"{owner} learns on one device; received a strategy with "
                             f"{self.strategy.num_replicas_in_sync} replicas (num_gpus="
                             f"{config['num_gpus']!r}). Set num_gpus to 0 or 1.")
        seed = config["seed"]
        if seed is not None:
            keras.utils.set_random_seed(int(seed))
        self.sampling_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        # A partial exploration_config (a policy built from a dict) takes the defaults.
        exploration = {**EXPLORATION_DEFAULTS, **config["exploration_config"]}
        self.epsilon_schedule = LinearSchedule(
            exploration["epsilon_timesteps"], exploration["final_epsilon"],
            initial_p=exploration["initial_epsilon"])
        self._lr_schedule = make_schedule(config["lr"], config["lr_schedule"])
        layout = self.layout
        with self.strategy.scope():
            self.model = make_agent_network(layout.obs_size, layout.n_actions,
                                            config["agent_network"], model_config)
            self.target_model = make_agent_network(layout.obs_size, layout.n_actions,
                                                   config["agent_network"], model_config)
            self.mixer = self._make_mixer()
            self.target_mixer = self._make_mixer()
            self.optimizer = keras.optimizers.RMSprop(
                learning_rate=config["lr"], rho=config["optim_alpha"],
                epsilon=config["optim_eps"])
            self.optimizer.build(self.trainable_variables)
            self.num_grad_updates = tf.Variable(0, dtype=tf.int64, trainable=False,
                                                name="num_grad_updates")
        self.update_target()
        self.num_traces: Dict[str, int] = {}
        # Numpy acting: the GRU's weights, or the feed-forward network's dense layers,
        # copied when `weights_version` (counting changes of the weights) moved past
        # `_numpy_version`.
        self.hidden_size = self.model.hidden_size if self.recurrent else 0
        dense = [layer for layer in self.model.layers if isinstance(layer, keras.layers.Dense)]
        self._numpy_acting = config["inference"] != "tf" and (
            self.recurrent or activation_problem(dense[:-1]) is None)
        self._dense_layers = dense
        self._weight_reader = WeightReader(self.model.weights)
        self._numpy_layers: List[Any] = []
        self.weights_version, self._numpy_version = 0, -1
        # The learning inputs: B sequences of T steps (T = 1: transitions).
        n, bt = layout.n_agents, (None, None)
        obs_spec = tf.TensorSpec(bt + (n, layout.obs_size), tf.float32)
        state_spec = tf.TensorSpec(bt + (layout.state_size,), tf.float32)
        mask_spec = tf.TensorSpec(bt + (n, layout.n_actions), tf.float32)
        steps_spec = tf.TensorSpec(bt, tf.float32)
        k = 1 if config["mixer"] else n
        batch_specs = [obs_spec, state_spec, tf.TensorSpec(bt + (n,), tf.int32),
                       tf.TensorSpec(bt + (k,), tf.float32), steps_spec, obs_spec, state_spec,
                       mask_spec, steps_spec, steps_spec,
                       tf.TensorSpec((None, n, self.hidden_size), tf.float32)]
        acting_specs = [tf.TensorSpec((None, n, layout.obs_size), tf.float32)]
        if self.recurrent:
            acting_specs.append(tf.TensorSpec((None, n, self.hidden_size), tf.float32))
        self._q_fn = tf.function(self._q_values_graph, input_signature=acting_specs,
                                 autograph=False)
        self._train_fn = tf.function(self._train_graph, input_signature=batch_specs,
                                     autograph=False)
        self._td_fn = tf.function(self._td_error_graph, input_signature=batch_specs,
                                  autograph=False)

    @classmethod
    def default_config(cls) -> Dict[str, Any]:
        """The defaults of this policy's keys: `QMixConfig().to_dict()`."""
        return cls.config_class().to_dict()

    def _make_mixer(self) -> Optional[keras.Model]:
        if self.config["mixer"] == "qmix":
            return QMixer(self.layout.n_agents, self.layout.state_size,
                          self.config["mixing_embed_dim"])
        if self.config["mixer"] == "vdn":
            return VDNMixer()
        return None

    @property
    def trainable_variables(self) -> List[tf.Variable]:
        """The agent network's and the mixer's trainable weights."""
        mixer = self.mixer.trainable_variables if self.mixer is not None else []
        return list(self.model.trainable_variables) + list(mixer)

    # --------------------------------------------------------------- acting

    def get_initial_state(self) -> List[np.ndarray]:
        """The GRU's state at an episode's start: zeros `[N, lstm_cell_size]` (one row per
        agent of the group); `[]` for the feed-forward network."""
        if not self.recurrent:
            return []
        return [np.zeros((self.layout.n_agents, self.hidden_size), np.float32)]

    @property
    def cur_epsilon(self) -> float:
        """Epsilon at the policy's current timestep."""
        return float(self.epsilon_schedule.value(self.global_timestep))

    def compute_actions(self, obs_batch: Any, state_batches: Optional[List[Any]] = None,
                        prev_action_batch: Any = None, prev_reward_batch: Any = None,
                        info_batch: Any = None, episodes: Any = None,
                        explore: Optional[bool] = None, timestep: Optional[int] = None,
                        **kwargs) -> Tuple[Any, List[np.ndarray], Dict[str, np.ndarray]]:
        """Each member's best allowed action, or with probability epsilon (at `timestep`,
        default `global_timestep`; only with `explore`) a uniform allowed one: a tuple of
        N `[B]` int arrays. The GRU reads its state from `state_batches` (`[[B, N, H]]`;
        None or `[]`: the initial state) and returns the next one."""
        explore = self.config["explore"] if explore is None else explore
        step = self.global_timestep if timestep is None else int(timestep)
        obs, mask, _ = self.layout.split(self.layout.flat(obs_batch, type(self).__name__))
        state_out: List[np.ndarray] = []
        if self.recurrent:
            q, h = self._acting_q_rnn(obs, state_batches)
            state_out = [h]
        else:
            q = self._acting_q(obs)  # [B, N, A]
        rows, n_agents, n_actions = q.shape
        allowed = np.ones(q.shape, bool) if mask is None else mask > 0.5  # [B, N, A]
        actions = np.where(allowed, q, MASKED_Q).argmax(axis=-1)  # [B, N]
        if explore:
            epsilon = self.epsilon_schedule.value(step)
            rng = self.sampling_rng
            explore_entries = rng.random((rows, n_agents)) < epsilon  # [B, N]
            random_actions = uniform_allowed_actions(
                allowed.reshape(-1, n_actions), rng).reshape(rows, n_agents)
            actions = np.where(explore_entries, random_actions, actions)
        self.global_timestep += rows
        dtype = self.action_space.spaces[0].dtype
        return tuple(actions[:, i].astype(dtype) for i in range(n_agents)), state_out, {}

    def _acting_q_rnn(self, obs: np.ndarray, state_batches: Optional[List[Any]]
                      ) -> Tuple[np.ndarray, np.ndarray]:
        """`obs [B, N, obs_size]` and the GRU's state -> `(q [B, N, A], next state
        [B, N, H])`, in numpy (`gru_step_numpy`) or one compiled call."""
        expected = (len(obs), self.layout.n_agents, self.hidden_size)
        if not state_batches:
            h = np.zeros(expected, np.float32)
        else:
            h = np.asarray(state_batches[0], np.float32)
            if len(state_batches) != 1 or h.shape != expected:
                raise ValueError(
                    f"{type(self).__name__}.compute_actions(): the GRU's state is one array "
                    f"[B, N, H] = {list(expected)} (state_out of the previous step, or "
                    "get_initial_state() per row at an episode's start); received "
                    f"{[np.shape(s) for s in state_batches]}.")
        if not self._numpy_acting:
            q, h_next = self._q_fn(tf.constant(obs), tf.constant(h))
            return q.numpy(), h_next.numpy()
        if self._numpy_version != self.weights_version:
            self._numpy_layers = self._weight_reader.read()
            self._numpy_version = self.weights_version
        rows, n_agents, size = obs.shape
        q, h_next = gru_step_numpy(self._numpy_layers, obs.reshape(rows * n_agents, size),
                                   h.reshape(rows * n_agents, self.hidden_size))
        return (q.reshape(rows, n_agents, self.layout.n_actions),
                h_next.reshape(rows, n_agents, self.hidden_size))

    def _acting_q(self, obs: np.ndarray) -> np.ndarray:
        """`[B, N, obs_size]` -> `[B, N, A]` Q-values, in numpy or one compiled call."""
        if not self._numpy_acting:
            return self._q_fn(tf.constant(obs)).numpy()
        if self._numpy_version != self.weights_version:
            values = iter(self._weight_reader.read())
            last = len(self._dense_layers) - 1
            self._numpy_layers = [dense_params(values, layer, activation=i < last)
                                  for i, layer in enumerate(self._dense_layers)]
            self._numpy_version = self.weights_version
        rows, n_agents, size = obs.shape
        q = mlp_forward(obs.reshape(rows * n_agents, size), self._numpy_layers)
        return q.reshape(rows, n_agents, self.layout.n_actions)

    def _q_values_graph(self, obs: tf.Tensor, h: Optional[tf.Tensor] = None) -> Any:
        self.num_traces["compute_actions"] = self.num_traces.get("compute_actions", 0) + 1
        if h is None:
            return self._agent_q(self.model, obs)
        shape = tf.shape(obs)  # [B, N, obs_size]
        q, h_next = self.model.step(tf.reshape(obs, [-1, self.layout.obs_size]),
                                    tf.reshape(h, [-1, self.hidden_size]))
        return (tf.reshape(q, [shape[0], shape[1], self.layout.n_actions]),
                tf.reshape(h_next, [shape[0], shape[1], self.hidden_size]))

    def _agent_q(self, model: keras.Model, obs: tf.Tensor, training: bool = False) -> tf.Tensor:
        """`[B, N, obs_size]` -> `[B, N, A]`: the shared network on every member."""
        layout = self.layout
        flat = tf.reshape(obs, [-1, layout.obs_size])  # [B * N, obs_size]
        return tf.reshape(model(flat, training=training), [-1, layout.n_agents, layout.n_actions])

    # ------------------------------------------------------------- learning

    def postprocess_trajectory(self, sample_batch: Any, other_agent_batches: Any = None,
                               episode: Any = None) -> Any:
        """Without a mixer, adds the `group_rewards` column `[T, N]`: each member's own
        reward (the info's `"_group_rewards"`).

        Raises:
            ValueError: If a row's info has no `"_group_rewards"` of N rewards.
        """
        if self.config["mixer"] is not None or sample_batch.count == 0:
            return sample_batch
        rewards = []
        for t, info in enumerate(sample_batch[Columns.INFOS]):
            own = info.get(GROUP_REWARDS) if isinstance(info, dict) else None
            if own is None or len(own) != self.layout.n_agents:
                raise ValueError(
                    f"{type(self).__name__} with mixer=None learns each agent from its own "
                    f"reward, the info's {GROUP_REWARDS!r} ({self.layout.n_agents} rewards); "
                    f"row {t} has info {info!r}. Group the agents with "
                    "MultiAgentEnv.with_agent_groups() (which writes them), or use a mixer.")
            rewards.append(own)
        sample_batch[GROUP_REWARDS_COLUMN] = np.asarray(rewards, np.float32)
        return sample_batch

    def _row_inputs(self, samples: Any) -> List[np.ndarray]:
        """The batch's columns per row: `LEARNING_INPUTS` up to `weights`, without
        `seq_mask`."""
        layout, owner = self.layout, type(self).__name__
        obs, _, state = layout.split(layout.flat(samples[Columns.OBS], owner))
        next_obs, next_mask, next_state = layout.split(
            layout.flat(samples[Columns.NEXT_OBS], owner))
        rows = len(obs)
        actions = samples[Columns.ACTIONS]
        actions = (np.stack([np.asarray(a) for a in actions], axis=1)
                   if isinstance(actions, (tuple, list)) else np.asarray(actions))
        actions = actions.reshape(rows, layout.n_agents).astype(np.int32)
        if self.config["mixer"] is None:
            if GROUP_REWARDS_COLUMN not in samples:
                raise ValueError(
                    f"{owner} with mixer=None needs the {GROUP_REWARDS_COLUMN!r} column "
                    "(each agent's reward), which postprocess_trajectory adds; the batch has "
                    f"columns {sorted(samples.keys())}.")
            rewards = np.asarray(samples[GROUP_REWARDS_COLUMN], np.float32)
        else:
            rewards = np.asarray(samples[Columns.REWARDS], np.float32)[:, None]
        terminateds = np.asarray(samples[Columns.TERMINATEDS], np.float32)
        if next_mask is None:
            next_mask = np.ones((rows, layout.n_agents, layout.n_actions), np.float32)
        weights = (np.asarray(samples[WEIGHTS], np.float32) if WEIGHTS in samples
                   else np.ones(rows, np.float32))
        return [obs, state, actions, rewards, terminateds, next_obs, next_state,
                np.asarray(next_mask, np.float32), weights]

    def _sequence_layout(self, samples: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray,
                                                      np.ndarray, np.ndarray]:
        """Where the batch's real rows go in `[B, T]` sequences: `(rows, seq_id, offset,
        seq_lens, first_rows)`: row `rows[i]` is step `offset[i]` of sequence `seq_id[i]`;
        `first_rows` the rows of the sequences' first steps (empty for a batch with
        `seq_lens`, whose `state_in_0` is one per sequence).

        A batch with `seq_lens` (a replay of sequences, zero-padded or not) keeps its
        sequences; a flat batch is cut at episode ends (`piece_ends`) and every
        `model["max_seq_len"]` steps. The feed-forward network's flat batch is one-step
        sequences (transitions)."""
        n = samples.count
        given = samples.get(Columns.SEQ_LENS)
        if given is not None:
            seq_lens = np.asarray(given, np.int64)
            seq_id = np.repeat(np.arange(len(seq_lens)), seq_lens)
            starts = np.concatenate(([0], np.cumsum(seq_lens)[:-1])).astype(np.int64)
            offset = np.arange(len(seq_id)) - starts[seq_id]
            padded_len = samples.max_seq_len if samples.zero_padded else None
            rows = (seq_id * padded_len + offset if padded_len else np.arange(len(seq_id)))
            return rows, seq_id, offset, seq_lens, np.zeros(0, np.int64)
        rows = np.arange(n)
        if not self.recurrent:
            return rows, rows, np.zeros(n, np.int64), np.ones(n, np.int64), rows
        ends = piece_ends(samples)
        first = np.concatenate(([True], ends[:-1] != ends[1:])) if n else np.zeros(0, bool)
        piece_start = np.maximum.accumulate(np.where(first, rows, 0)) if n else rows
        offset = (rows - piece_start) % self.max_seq_len
        seq_id = np.cumsum(offset == 0) - 1
        seq_lens = np.bincount(seq_id) if n else np.zeros(0, np.int64)
        return rows, seq_id, offset, seq_lens, np.flatnonzero(offset == 0)

    def _learning_inputs(self, samples: Any) -> Tuple[List[np.ndarray], Tuple[np.ndarray, ...]]:
        """The compiled step's inputs (`LEARNING_INPUTS`) from a batch, and
        where its rows went (`(rows, seq_id, offset)`, for `td_errors`).

        Raises:
            ValueError: For a sequence batch and the feed-forward network, or a
                `state_in_0` column of another shape than the GRU's state.
        """
        if Columns.SEQ_LENS in samples and not self.recurrent:
            raise ValueError(
                f"{type(self).__name__}.learn_on_batch(): received a sequence batch (with "
                "'seq_lens') for the feed-forward agent network (agent_network='fcnet'); "
                "pass transitions, or use agent_network='gru'.")
        rows, seq_id, offset, seq_lens, first_rows = self._sequence_layout(samples)
        num_seqs, max_len = len(seq_lens), int(seq_lens.max(initial=1))

        def padded(value: np.ndarray) -> np.ndarray:  # rows -> [B, T, ...]
            out = np.zeros((num_seqs, max_len) + value.shape[1:], value.dtype)
            out[seq_id, offset] = value[rows]
            return out

        inputs = [padded(x) for x in self._row_inputs(samples)]
        seq_mask = (np.arange(max_len)[None, :] < seq_lens[:, None]).astype(np.float32)
        n = self.layout.n_agents
        h0 = np.zeros((num_seqs, n, self.hidden_size), np.float32)
        if self.recurrent and "state_in_0" in samples:
            state = np.asarray(samples["state_in_0"], np.float32)
            h0 = state if Columns.SEQ_LENS in samples else state[first_rows]
            if h0.shape != (num_seqs, n, self.hidden_size):
                raise ValueError(
                    f"{type(self).__name__}.learn_on_batch(): 'state_in_0' must hold the GRU's "
                    f"state [N, H] = [{n}, {self.hidden_size}] per "
                    f"{'sequence' if Columns.SEQ_LENS in samples else 'row'}; received shape "
                    f"{state.shape}.")
        weights = inputs.pop()
        inputs += [seq_mask, weights, h0]
        return inputs, (rows, seq_id, offset)

    def learn_on_batch(self, samples: Any, *, num_sgd_iter: Optional[int] = None,
                       sgd_minibatch_size: Optional[int] = None,
                       shuffle_sequences: Optional[bool] = None) -> Dict[str, Any]:
        """`num_sgd_iter` (default 1) passes over `samples` in minibatches of about
        `sgd_minibatch_size` steps (default: all), one compiled step each (replayed
        rows and sequences come shuffled already). Transitions are cut into minibatches
        of `sgd_minibatch_size` rows; sequences into `floor(steps / sgd_minibatch_size)`
        minibatches of whole sequences. Returns `{"learner_stats": ...}`, the stats
        averaged over the steps."""
        inputs, _ = self._learning_inputs(samples)
        seq_mask = inputs[LEARNING_INPUTS.index("seq_mask")]  # [B, T]
        num_seqs, steps = len(seq_mask), int(seq_mask.sum())
        if not sgd_minibatch_size:
            size = num_seqs
        elif seq_mask.shape[1] == 1:  # transitions
            size = int(sgd_minibatch_size)
        else:
            size = max(1, num_seqs // max(1, steps // int(sgd_minibatch_size)))
        all_stats: List[Dict[str, float]] = []
        for _ in range(int(num_sgd_iter or 1)):
            for start in range(0, num_seqs, size):
                part = [tf.constant(x[start:start + size]) for x in inputs]
                stats = self._train_fn(*part)
                self.weights_version += 1
                all_stats.append({k: float(v) for k, v in stats.items()})
        learner_stats = {k: float(np.mean([s[k] for s in all_stats])) for k in all_stats[0]}
        learner_stats["cur_epsilon"] = self.cur_epsilon
        learner_stats["num_grad_updates"] = int(self.num_grad_updates.numpy())
        return {"learner_stats": learner_stats}

    def _sequence_q(self, obs: tf.Tensor, next_obs: tf.Tensor, h0: tf.Tensor
                    ) -> Tuple[tf.Tensor, tf.Tensor, Optional[tf.Tensor]]:
        """`(q_t, q_tp1_target, q_tp1_online or None)`, each `[B, T, N, A]`: the online
        network on `o_t`, the target (and for double Q the online) network on `o_{t+1}`.

        The GRU unrolls each network over the sequence from `h0` (the state stored with
        its first step); `o_{t+1}` is read from the state after `o_0..o_t`, one more step
        of the network (so a sequence's last next observation is valued too)."""
        layout = self.layout

        def next_q(model: keras.Model, h: tf.Tensor) -> tf.Tensor:
            q, _ = model.step(tf.reshape(next_obs, [-1, layout.obs_size]),
                              tf.reshape(h, [-1, self.hidden_size]))
            return tf.reshape(q, tf.concat([tf.shape(h)[:3], [layout.n_actions]], axis=0))

        double_q = self.config["double_q"]
        if self.recurrent:
            q_t, h = self.model.unroll(obs, h0)  # [B, T, N, A], [B, T, N, H]
            _, h_target = self.target_model.unroll(obs, h0)
            return (q_t, next_q(self.target_model, h_target),
                    next_q(self.model, h) if double_q else None)

        def agent_q(model: keras.Model, x: tf.Tensor) -> tf.Tensor:
            shape = tf.shape(x)  # [B, T, N, obs_size]
            q = model(tf.reshape(x, [-1, layout.obs_size]))
            return tf.reshape(q, tf.concat([shape[:3], [layout.n_actions]], axis=0))

        return (agent_q(self.model, obs), agent_q(self.target_model, next_obs),
                agent_q(self.model, next_obs) if double_q else None)

    def _loss(self, batch: Sequence[tf.Tensor], training: bool
              ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """`qmix_loss`'s functions on a batch of `_learning_inputs` (see the module
        docstring)."""
        (obs, state, actions, rewards, terminateds, next_obs, next_state, next_mask,
         seq_mask, weights, h0) = batch
        q_t, q_tp1_target, q_tp1_online = self._sequence_q(obs, next_obs, h0)

        def steps(x: Optional[tf.Tensor]) -> Optional[tf.Tensor]:  # [B, T, ...] -> [B*T, ...]
            if x is None:
                return None
            return tf.reshape(x, tf.concat([[-1], tf.shape(x)[2:]], axis=0))

        chosen = chosen_action_q(steps(q_t), steps(actions))  # [B*T, N]
        target = target_agent_q(steps(q_tp1_target), steps(q_tp1_online), steps(next_mask))
        mixer, target_mixer = self.mixer, self.target_mixer
        if mixer is None or target_mixer is None:  # each agent on its own reward
            q_tot_t, q_tot_tp1 = chosen, target
        else:
            q_tot_t = mixer(chosen, steps(state))  # [B*T, 1]
            q_tot_tp1 = target_mixer(target, steps(next_state))
        bt_k = tf.concat([tf.shape(seq_mask), [-1]], axis=0)  # [B, T, K]
        return qmix_sequence_td_loss(
            tf.reshape(q_tot_t, bt_k), rewards, terminateds, tf.reshape(q_tot_tp1, bt_k),
            seq_mask, None, weights, gamma=self.config["gamma"])

    def _train_graph(self, *batch: tf.Tensor) -> Dict[str, tf.Tensor]:
        self.num_traces["learn_on_batch"] = self.num_traces.get("learn_on_batch", 0) + 1
        variables = self.trainable_variables
        with tf.GradientTape() as tape:
            loss, stats = self._loss(batch, training=True)
        grads = tape.gradient(loss, variables)
        clip = self.config["grad_clip"]
        if clip is not None:
            grads, grad_norm = tf.clip_by_global_norm(grads, clip)
        else:
            grad_norm = tf.linalg.global_norm(grads)
        self.optimizer.apply_gradients(zip(grads, variables))
        self.num_grad_updates.assign_add(1)
        stats = {k: v for k, v in stats.items() if k != "td_error"}
        stats["grad_norm"] = grad_norm
        stats["cur_lr"] = tf.cast(self.optimizer.learning_rate, tf.float32)
        return stats

    def _td_error_graph(self, *batch: tf.Tensor) -> tf.Tensor:
        self.num_traces["compute_td_error"] = self.num_traces.get("compute_td_error", 0) + 1
        return self._loss(batch, training=False)[1]["td_error"]

    def td_errors(self, batch: Any) -> np.ndarray:
        """Per-row TD errors `[rows]` (a zero-padded batch's padding rows too) under the
        current weights (the mean over the
        entries of a step; 0 on a sequence's padding rows), for prioritized replay, in
        one compiled call. A replayed sequence's priority is the largest of its rows'
        (`PrioritizedReplayBuffer.update_priorities`)."""
        inputs, (rows, seq_id, offset) = self._learning_inputs(batch)
        td = self._td_fn(*[tf.constant(x) for x in inputs]).numpy()  # [B, T]
        out = np.zeros(len(batch[Columns.TERMINATEDS]), np.float32)  # padding rows too
        out[rows] = td[seq_id, offset]
        return out

    def on_global_var_update(self, global_vars: Dict[str, Any]) -> None:
        """Stores the timestep (epsilon's position) and moves the lr along `lr_schedule`."""
        super().on_global_var_update(global_vars)
        if "timestep" in global_vars:
            self.optimizer.learning_rate = self._lr_schedule.value(int(global_vars["timestep"]))

    def update_target(self) -> None:
        """Copies the agent network and the mixer into their targets."""
        hard_update(self.target_model.weights, self.model.weights)
        if self.mixer is not None and self.target_mixer is not None:
            hard_update(self.target_mixer.weights, self.mixer.weights)

    # ---------------------------------------------------------------- state

    def get_weights(self) -> Dict[str, Optional[List[np.ndarray]]]:
        """`{"model", "target_model", "mixer", "target_mixer"}` -> lists of arrays (the
        mixers' None without weights), as RLlib's."""
        def arrays(model: Optional[keras.Model]) -> Optional[List[np.ndarray]]:
            if model is None or not model.weights:
                return None
            return [np.array(v.numpy()) for v in model.weights]

        return {"model": arrays(self.model), "target_model": arrays(self.target_model),
                "mixer": arrays(self.mixer), "target_mixer": arrays(self.target_mixer)}

    def set_weights(self, weights: Dict[str, Optional[List[np.ndarray]]]) -> None:
        """Sets `get_weights()`'s dict.

        Raises:
            ValueError: If it is not such a dict, or its arrays do not fit.
        """
        expected = ("model", "target_model", "mixer", "target_mixer")
        if not isinstance(weights, dict) or set(weights) != set(expected):
            raise ValueError(
                f"{type(self).__name__}.set_weights() takes get_weights()'s dict with keys "
                f"{list(expected)}; received "
                f"{sorted(weights) if isinstance(weights, dict) else type(weights).__name__}.")
        for key, model in zip(expected, (self.model, self.target_model, self.mixer,
                                         self.target_mixer)):
            values = weights[key]
            if values is not None and model is not None:
                assign_weights(model.weights, values, f"set_weights(): {key!r}")
        self.weights_version += 1

    def get_state(self) -> Dict[str, Any]:
        """The weights, the global timestep, the optimizer's variables, the update count,
        the sampling generator's state and RLlib's `cur_epsilon`."""
        state = super().get_state()
        state["optimizer_variables"] = [np.array(v.numpy()) for v in self.optimizer.variables]
        state["num_grad_updates"] = int(self.num_grad_updates.numpy())
        state["sampling_rng"] = self.sampling_rng.bit_generator.state
        state["cur_epsilon"] = self.cur_epsilon
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state()` result."""
        super().set_state(state)
        if "optimizer_variables" in state:
            assign_weights(self.optimizer.variables, state["optimizer_variables"],
                           "set_state(): 'optimizer_variables'")
        if "num_grad_updates" in state:
            self.num_grad_updates.assign(int(state["num_grad_updates"]))
        if "sampling_rng" in state:
            self.sampling_rng.bit_generator.state = state["sampling_rng"]
        self.optimizer.learning_rate = self._lr_schedule.value(self.global_timestep)
