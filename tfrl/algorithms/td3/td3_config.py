"""DDPGConfig and TD3Config: the deterministic actor-critics' config dataclasses.

RLlib's keys and defaults. DDPG: one critic, no target smoothing, the actor updated with
every critic update, Ornstein-Uhlenbeck exploration noise. TD3 is DDPG's config with
twin critics (`twin_q`), delayed policy updates (`policy_delay=2`), target policy
smoothing (`smooth_target_policy`, `target_noise`, `target_noise_clip`) and Gaussian
exploration noise, with the TD3 paper's other settings (RLlib's TD3Config extends its
DDPGConfig the same way).

Example:
    >>> TD3Config().policy_delay, DDPGConfig().policy_delay
    (2, 1)
    >>> TD3Config.from_dict({"learning_starts": 500}).num_steps_sampled_before_learning_starts
    500
"""

import dataclasses
from typing import Any, ClassVar, Dict, Optional

from tfrl.algorithms.off_policy_config import OffPolicyConfig, replay_buffer_defaults
from tfrl.utils.config_values import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE

__all__ = ["DDPGConfig", "EXPLORATION_NOISES", "TD3Config"]


def _ou_noise() -> Dict[str, Any]:
    # Random actions for the first steps, then Ornstein-Uhlenbeck noise annealed from
    # initial_scale to final_scale over scale_timesteps.
    return {"type": "OrnsteinUhlenbeckNoise", "random_timesteps": 1000, "ou_base_scale": 0.1,
            "ou_theta": 0.15, "ou_sigma": 0.2, "initial_scale": 1.0, "final_scale": 0.02,
            "scale_timesteps": 10000}


def _gaussian_noise() -> Dict[str, Any]:
    # Random actions for the first 10000 steps, then N(0, 0.1) noise, unscaled.
    return {"type": "GaussianNoise", "random_timesteps": 10000, "stddev": 0.1,
            "initial_scale": 1.0, "final_scale": 1.0, "scale_timesteps": 1}


#: The exploration noises (`exploration_config["type"]`) and their default settings: a
#: partial `exploration_config` takes the missing entries from its type's.
EXPLORATION_NOISES = {"OrnsteinUhlenbeckNoise": _ou_noise, "GaussianNoise": _gaussian_noise}


@dataclasses.dataclass(frozen=True)
class DDPGConfig(OffPolicyConfig):
    """DDPG's config: OffPolicyConfig plus the keys below (RLlib's defaults).

    Attributes:
        twin_q: Two critics and the minimum of their targets (TD3).
        policy_delay: Critic updates per actor (and target) update.
        smooth_target_policy: Clipped Gaussian noise on the target actor's actions.
        target_noise, target_noise_clip: That noise's standard deviation and bound.
        use_state_preprocessor: Run the observations through the `model` network first.
        actor_hiddens, actor_hidden_activation: The actor's hidden layers.
        critic_hiddens, critic_hidden_activation: The critics' hidden layers.
        actor_lr, critic_lr: The two optimizers' learning rates (`lr` is not used).
        use_huber, huber_threshold: The critics' loss: Huber with this threshold, or
            (default) half the squared TD error.
        l2_reg: Weight of an L2 penalty on the actor's and critics' weights (None or 0:
            none).

    (`tau`, `n_step`, `replay_buffer_config`, `training_intensity`,
    `num_steps_sampled_before_learning_starts`, `store_buffer_in_checkpoints`: see
    `OffPolicyConfig`. The target networks move by `tau` with every actor update,
    inside the learning call, so `target_network_update_freq` is not used.)
    """

    twin_q: bool = False
    policy_delay: int = 1
    smooth_target_policy: bool = False
    target_noise: float = 0.2
    target_noise_clip: float = 0.5
    use_state_preprocessor: bool = False
    actor_hiddens: list = dataclasses.field(default_factory=lambda: [400, 300])
    actor_hidden_activation: str = "relu"
    critic_hiddens: list = dataclasses.field(default_factory=lambda: [400, 300])
    critic_hidden_activation: str = "relu"
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    use_huber: bool = False
    huber_threshold: float = 1.0
    l2_reg: Optional[float] = 1e-6
    # OffPolicyConfig's keys with DDPG's defaults.
    replay_buffer_config: dict = dataclasses.field(default_factory=replay_buffer_defaults)
    tau: float = 0.002
    target_network_update_freq: int = 0
    num_steps_sampled_before_learning_starts: int = 1500
    # AlgorithmConfig's keys with DDPG's defaults.
    exploration_config: dict = dataclasses.field(default_factory=_ou_noise)
    rollout_fragment_length: int = 1
    train_batch_size: int = 256
    timesteps_per_iteration: int = 1000

    _RANGES: ClassVar[Dict[str, Any]] = {
        "policy_delay": AT_LEAST_ONE, "target_noise": NON_NEGATIVE,
        "target_noise_clip": NON_NEGATIVE, "actor_lr": POSITIVE, "critic_lr": POSITIVE,
        "huber_threshold": POSITIVE, "l2_reg": NON_NEGATIVE}

    def validate(self) -> None:
        super().validate()
        owner = type(self).__name__
        for name in ("actor_hiddens", "critic_hiddens"):
            sizes = getattr(self, name)
            if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1
                       for s in sizes):
                raise ValueError(f"{owner}: {name} must be a list of layer sizes (ints >= 1); "
                                 f"received {sizes!r}.")


@dataclasses.dataclass(frozen=True)
class TD3Config(DDPGConfig):
    """TD3's config: DDPGConfig with TD3's defaults (twin critics, `policy_delay=2`,
    target policy smoothing, Gaussian exploration noise, no L2 penalty, `tau=0.005`,
    batches of 100, a uniform replay buffer of 1M steps, 10000 steps before learning)."""

    twin_q: bool = True
    policy_delay: int = 2
    smooth_target_policy: bool = True
    l2_reg: Optional[float] = 0.0
    replay_buffer_config: dict = dataclasses.field(
        default_factory=lambda: replay_buffer_defaults("MultiAgentReplayBuffer", int(1e6)))
    tau: float = 5e-3
    num_steps_sampled_before_learning_starts: int = 10000
    exploration_config: dict = dataclasses.field(default_factory=_gaussian_noise)
    train_batch_size: int = 100
