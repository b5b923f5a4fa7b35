"""QMixConfig: QMIX's config dataclass (re-exported by `tfrl.algorithms.qmix.qmix`, RLlib's
path).

RLlib's QMIX keys and defaults on top of `OffPolicyConfig` (replay buffer, learning
start, target updates), and tfrl's `agent_network` ("gru", RLlib's recurrent agent
network, or "fcnet"). `exploration_config` is merged into its default as DQN's is, and
checked by DQN's check (`EpsilonGreedy` only). RLlib 1.x's `grad_norm_clipping` is an
alias of `grad_clip`.

Example:
    >>> config = QMixConfig().training(mixer="vdn", mixing_embed_dim=8)
    >>> config.mixer, config.mixing_embed_dim, config.optim_alpha, config.agent_network
    ('vdn', 8, 0.99, 'gru')
    >>> config.training(model={"lstm_cell_size": 16}).model["fcnet_activation"]
    'relu'
    >>> QMixConfig.from_dict({"grad_norm_clipping": 5.0}).grad_clip
    5.0
"""

import copy
import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Optional

from tfrl.algorithms.dqn.dqn_config import check_epsilon_greedy
from tfrl.algorithms.off_policy_config import OffPolicyConfig, replay_buffer_defaults
from tfrl.utils.config_values import AT_LEAST_ONE, POSITIVE, UNIT_INTERVAL, OneOf

# The mixers QMIX knows: the monotonic mixing network, the sum, and none (independent
# Q-learning of each agent on its own reward).
MIXERS = ("qmix", "vdn", None)

EXPLORATION_DEFAULTS: Dict[str, Any] = {
    "type": "EpsilonGreedy",
    "initial_epsilon": 1.0,
    "final_epsilon": 0.01,
    "epsilon_timesteps": 40000,
}
# The agent networks QMIX builds (`model.make_agent_network`): RLlib's recurrent one and a
# feed-forward one.
AGENT_NETWORKS = ("gru", "fcnet")
# QMIX's model defaults over `MODEL_DEFAULTS` (a given `model` is merged into them): the
# GRU's width (RLlib's `lstm_cell_size`), and the feed-forward network's layers of the
# same width. `max_seq_len` (the longest replayed sequence) is MODEL_DEFAULTS'.
MODEL_DEFAULTS: Dict[str, Any] = {"lstm_cell_size": 64, "fcnet_hiddens": [64],
                                  "fcnet_activation": "relu"}


def _field(default: Any) -> Any:
    return dataclasses.field(default_factory=lambda: copy.deepcopy(default))


@dataclasses.dataclass(frozen=True)
class QMixConfig(OffPolicyConfig):
    """QMIX's config (RLlib's QMIX defaults): `OffPolicyConfig`'s replay and target keys
    plus QMIX's own.

    Attributes:
        mixer: How the agents' chosen Q-values make the team's: "qmix" (the monotonic
            mixing network, conditioned on the global state), "vdn" (their sum), or None
            (no mixing: each agent learns from its own reward, `"_group_rewards"` of the
            group's info).
        mixing_embed_dim: Width of the mixing network's hidden layer (and of its
            hypernetworks' outputs).
        double_q: Double Q-learning (the online agent network picks each agent's next
            action, the target network values it).
        optim_alpha: RMSProp's decay (`rho`; torch's `alpha`).
        optim_eps: RMSProp's epsilon.
        exploration_config: `EpsilonGreedy` per agent with `initial_epsilon`,
            `final_epsilon`, `epsilon_timesteps` (linear over the policy's timesteps);
            merged into the defaults.

        agent_network: The agent network shared by the group's agents: "gru" (RLlib's:
            a dense layer and a GRU cell of `model["lstm_cell_size"]` units, then the
            Q-values; replayed as sequences of at most `model["max_seq_len"]` steps) or
            "fcnet" (feed-forward, `model["fcnet_hiddens"]` with `fcnet_activation`;
            replayed transition by transition).
        model: Merged into QMIX's defaults (`lstm_cell_size` 64, `fcnet_hiddens` [64],
            `fcnet_activation` "relu"). The catalog's `use_lstm`/`use_attention` wrappers
            are refused (the agent network is QMIX's own).

    `n_step` must be 1 and `replay_buffer_config["replay_sequence_length"]` 1 (the GRU's
    sequences are `model["max_seq_len"]` long).
    """

    # RLlib's QMIX defaults that differ from the common / off-policy ones.
    lr: float = 5e-4
    grad_clip: Optional[float] = 10.0
    train_batch_size: int = 32
    rollout_fragment_length: int = 4
    batch_mode: str = "complete_episodes"
    timesteps_per_iteration: int = 1000
    min_iter_time_s: float = 1.0
    shuffle_sequences: bool = False
    model: dict = _field(MODEL_DEFAULTS)
    replay_buffer_config: dict = dataclasses.field(
        default_factory=lambda: replay_buffer_defaults("ReplayBuffer", 1000))
    exploration_config: dict = _field(EXPLORATION_DEFAULTS)
    evaluation_config: dict = _field({"explore": False})
    # QMIX's own keys.
    mixer: Optional[str] = "qmix"
    mixing_embed_dim: int = 32
    double_q: bool = True
    optim_alpha: float = 0.99
    optim_eps: float = 1e-5
    agent_network: str = "gru"

    _RANGES: ClassVar[Dict[str, Any]] = {
        "mixing_embed_dim": AT_LEAST_ONE, "optim_alpha": UNIT_INTERVAL, "optim_eps": POSITIVE,
        "agent_network": OneOf(AGENT_NETWORKS)}
    _MERGED_DICTS: ClassVar[tuple] = ("replay_buffer_config", "exploration_config", "model")

    @classmethod
    def from_dict(cls, config: Optional[Mapping[str, Any]] = None) -> "QMixConfig":
        return super().from_dict(_without_grad_norm_clipping(config))  # type: ignore[return-value]

    def training(self, **kwargs: Any) -> "QMixConfig":
        """Sets training keys (RLlib's `grad_norm_clipping` is `grad_clip`)."""
        return super().training(**_without_grad_norm_clipping(kwargs))  # type: ignore[return-value]

    def validate(self) -> None:
        super().validate()

        def fail(msg: str) -> None:
            raise ValueError(f"QMixConfig: {msg}")

        if self.mixer not in MIXERS:
            fail(f"mixer must be one of {MIXERS}; received {self.mixer!r}.")
        if self.n_step != 1:
            fail(f"n_step must be 1 (QMIX learns from one-step transitions); received "
                 f"{self.n_step!r}.")
        length = self.replay_buffer_config["replay_sequence_length"]
        if length != 1:
            fail("replay_buffer_config['replay_sequence_length'] must be 1 (QMIX replays "
                 "transitions, or with agent_network='gru' sequences of model['max_seq_len'] "
                 f"steps); received {length!r}.")
        check_epsilon_greedy(self.exploration_config, type(self).__name__)


def _without_grad_norm_clipping(config: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """`config` with RLlib 1.x's `grad_norm_clipping` given as `grad_clip`."""
    config = dict(config or {})
    if "grad_norm_clipping" in config:
        value = config.pop("grad_norm_clipping")
        if "grad_clip" in config and config["grad_clip"] != value:
            raise ValueError(
                "QMixConfig: grad_norm_clipping (RLlib 1.x's name) and grad_clip are both "
                f"given and differ ({value!r} vs {config['grad_clip']!r}); give grad_clip only.")
        config["grad_clip"] = value
    return config
