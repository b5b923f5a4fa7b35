"""What PG, A2C and PPO policies share: return/advantage postprocessing and schedules.

`OnPolicyTFPolicy` is a `TFPolicy` that

- postprocesses each trajectory with `postprocessing.compute_gae_for_sample_batch` (GAE
  or discounted returns, bootstrapped as `postprocessing.bootstrap_value` says);
- keeps the learning rate and the entropy coefficient in `tf.Variable`s, moved along
  RLlib's `lr_schedule` / `entropy_coeff_schedule` (`[[timestep, value], ...]`) in
  `on_global_var_update`, so that the compiled learn step never retraces.

Subclasses override `loss_and_stats`: model outputs through `forward`, handed to the
algorithm's pure loss function (e.g. `ppo_loss.ppo_loss`), whose stats they join with
`stats()`; their `loss` returns the loss alone (RLlib's signature).
"""

from typing import Any, ClassVar, Dict, Optional

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms.algorithm_config import OnPolicyConfig
from tfrl.algorithms.sequencing import add_sequences
from tfrl.core.columns import Columns
from tfrl.evaluation.postprocessing import compute_gae_for_sample_batch
from tfrl.models.model_defaults import model_setting
from tfrl.policy.optimizers import FusedAdam
from tfrl.policy.tf_policy import TFPolicy
from tfrl.utils.schedules import make_schedule

class OnPolicyTFPolicy(TFPolicy):
    """A TFPolicy with advantage postprocessing and lr / entropy schedules.

    Args:
        observation_space: Observation space of one agent.
        action_space: Action space of one agent.
        config: The algorithm config dict (missing keys: the defaults of
            `config_class`); adds to `TFPolicy`'s keys `gamma`, `lambda`, `use_gae`,
            `use_critic`, `lr_schedule`, `entropy_coeff`, `entropy_coeff_schedule`,
            `no_done_at_end`, `optimizer` (Adam's keyword arguments).
        strategy: See `TFPolicy`.
    """

    # Each algorithm's policy names its algorithm's config class.
    config_class: ClassVar[type] = OnPolicyConfig

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Optional[dict] = None, *,
                 strategy: Optional[tf.distribute.Strategy] = None):
        config = {**self.default_config(), **(config or {})}
        # (IMPALA's policy has no GAE keys: absent means no GAE.)
        if config.get("use_gae") and not config["use_critic"]:
            raise ValueError(
                f"{type(self).__name__}: use_gae=True needs a value function; received "
                "use_critic=False. Set use_gae=False or use_critic=True."
            )
        super().__init__(observation_space, action_space, config, strategy=strategy)
        self._lr_schedule = make_schedule(self.config["lr"], self.config["lr_schedule"])
        self._entropy_schedule = make_schedule(self.config["entropy_coeff"],
                                               self.config["entropy_coeff_schedule"])
        with self.strategy.scope():
            self.entropy_coeff = tf.Variable(self._entropy_schedule.value(0), dtype=tf.float32,
                                             trainable=False, name="entropy_coeff")
        self._set_schedules(0)

    def loss_reads_next_obs(self) -> bool:
        """Whether the loss reads `new_obs` (PG, A2C and PPO: no; postprocessing
        bootstraps from its last row). If not, `view_requirements["new_obs"]` is marked
        `used_for_training=False` and samplers drop the column after postprocessing, as
        RLlib does after tracing the loss (a pixel batch is then half the size). A
        subclass whose loss reads `new_obs` returns True."""
        return False

    def _set_view_requirements(self) -> None:
        super()._set_view_requirements()
        self.view_requirements[Columns.NEXT_OBS].used_for_training = self.loss_reads_next_obs()

    def make_optimizer(self) -> keras.optimizers.Optimizer:
        """Adam(`lr`) with the keyword arguments of config `optimizer` (e.g.
        `{"epsilon": 1e-5}`, or `{"epsilon": 1e-5, "epsilon_form": "torch"}` for torch's and
        SB3's Adam); `FusedAdam`, Keras' Adam with TensorFlow's fused update."""
        kwargs = dict(self.config.get("optimizer") or {})
        try:
            return FusedAdam(learning_rate=self.config["lr"], **kwargs)
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"config['optimizer'] holds keyword arguments for keras.optimizers.Adam (plus "
                f"epsilon_form: 'keras' or 'torch'); "
                f"received {kwargs!r}, which Adam rejects: {e}") from None

    def _set_schedules(self, timestep: int) -> None:
        self.optimizer.learning_rate = self._lr_schedule.value(timestep)
        self.entropy_coeff.assign(self._entropy_schedule.value(timestep))

    def on_global_var_update(self, global_vars: Dict[str, Any]) -> None:
        """Stores the timestep and moves the lr and entropy coefficient along their
        schedules."""
        super().on_global_var_update(global_vars)
        if "timestep" in global_vars:
            self._set_schedules(int(global_vars["timestep"]))

    @property
    def cur_lr(self) -> float:
        """The optimizer's current learning rate."""
        return float(np.asarray(self.optimizer.learning_rate))

    def postprocess_trajectory(self, sample_batch: Any, other_agent_batches: Any = None,
                               episode: Any = None) -> Any:
        """Adds `advantages` and `value_targets` (`compute_gae_for_sample_batch`)."""
        return compute_gae_for_sample_batch(self, sample_batch, other_agent_batches, episode)

    def train_batch(self, samples: Any) -> Any:
        """Recurrent models learn on sequences: row batches (as sampled) are cut into
        them (`add_sequences`); other batches are returned as they are."""
        if (self.is_recurrent() and isinstance(samples, dict)
                and Columns.SEQ_LENS not in samples):
            return add_sequences(samples, int(model_setting(self.config["model"], "max_seq_len")))
        return samples

    def get_state(self) -> Dict[str, Any]:
        """TFPolicy's state plus the current entropy coefficient."""
        state = super().get_state()
        state["entropy_coeff"] = float(self.entropy_coeff.numpy())
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result, including the schedules' position."""
        super().set_state(state)
        self._set_schedules(self.global_timestep)
        if "entropy_coeff" in state:
            self.entropy_coeff.assign(float(state["entropy_coeff"]))

