"""MARWILTFPolicy: monotonic advantage re-weighted imitation learning (and BC).

Loss: `marwil_loss.marwil_loss` on the model's `log pi(a_t | s_t)` and `V(s_t)` and the
returns of the logged rewards (Wang et al., NeurIPS 2018). Postprocessing adds
`advantages` = the discounted returns `R_t` (`compute_advantages` without GAE or critic,
as RLlib's MARWIL), bootstrapped with `V(new_obs[-1])` when a trajectory was cut. The
moving average of the squared advantages is a `tf.Variable` moved inside the compiled
learn step after each applied minibatch update (`moving_average_sqd_adv_norm_update_rate`,
in `commit_step_stats`: a step the non-finite guard refuses leaves it as it was); it is
part of the policy's state.

Example:
    >>> import gymnasium as gym, numpy as np
    >>> from tfrl.data.sample_batch import SampleBatch
    >>> policy = MARWILTFPolicy(gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2),
    ...                         {"seed": 0, "gamma": 0.5, "model": {"fcnet_hiddens": [8]}})
    >>> batch = policy.postprocess_trajectory(SampleBatch(
    ...     obs=np.zeros((3, 4), np.float32), actions=np.zeros(3, np.int64),
    ...     rewards=np.ones(3, np.float32), terminateds=np.array([False, False, True])))
    >>> batch["advantages"].tolist(), policy.get_state()["moving_average_sqd_adv_norm"]
    ([1.75, 1.5, 1.0], 100.0)
"""

from typing import Any, Dict, Tuple

import gymnasium as gym
import keras
import tensorflow as tf

from tfrl.algorithms.marwil.marwil_config import MARWILConfig
from tfrl.algorithms.marwil.marwil_loss import marwil_loss
from tfrl.algorithms.on_policy_policy import OnPolicyTFPolicy
from tfrl.core.columns import Columns
from tfrl.evaluation.postprocessing import bootstrap_value, compute_advantages
from tfrl.policy.train_columns import autograph_converted


class MARWILTFPolicy(OnPolicyTFPolicy):
    """MARWIL (config: `MARWILConfig`'s fields);
    behavior cloning with `beta=0`."""

    config_class = MARWILConfig
    # Columns a file input must hold for this policy (checked by JsonReader).
    offline_input_columns = (Columns.OBS, Columns.ACTIONS, Columns.REWARDS)

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Any = None, **kwargs: Any):
        super().__init__(observation_space, action_space, config, **kwargs)
        with self.strategy.scope():
            self.moving_average_sqd_adv_norm = tf.Variable(
                float(self.config["moving_average_sqd_adv_norm_start"]), dtype=tf.float32,
                trainable=False, name="moving_average_sqd_adv_norm",
                aggregation=tf.VariableAggregation.MEAN)

    def postprocess_trajectory(self, sample_batch: Any, other_agent_batches: Any = None,
                               episode: Any = None) -> Any:
        """Adds `advantages` (and `value_targets`): the discounted returns."""
        last_r = bootstrap_value(self, sample_batch) if Columns.NEXT_OBS in sample_batch \
            else 0.0
        return compute_advantages(sample_batch, last_r, self.config["gamma"], 1.0,
                                  use_gae=False, use_critic=False)

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """`marwil_loss` on the model's outputs (the squared-advantage average moves in
        `commit_step_stats`, once the step is applied)."""
        dist_inputs, values = self.forward(model, train_batch)  # [B, n], [B]
        beta = float(self.config["beta"])
        loss, stats = marwil_loss(
            dist_class(dist_inputs, model).logp(train_batch[Columns.ACTIONS]),  # [B]
            train_batch[Columns.ADVANTAGES],  # [B] returns
            values,  # [B]
            beta=beta, vf_coeff=float(self.config["vf_coeff"]),
            moving_average_sqd_adv_norm=self.moving_average_sqd_adv_norm,
            mask=self.valid_mask(train_batch))
        return loss, {**stats, **autograph_converted(self.stats)(train_batch)}

    def commit_step_stats(self, stats: Dict[str, tf.Tensor]) -> None:
        """After an applied update: moves the average toward this step's mean squared
        advantage (by the update rate; not for BC, `beta=0`). A non-finite mean leaves
        it as it is."""
        if float(self.config["beta"]) == 0.0:
            return
        rate = float(self.config["moving_average_sqd_adv_norm_update_rate"])
        old = tf.identity(self.moving_average_sqd_adv_norm)
        new = old + rate * (tf.cast(stats["adv_squared_mean"], tf.float32) - old)
        self.moving_average_sqd_adv_norm.assign(tf.where(tf.math.is_finite(new), new, old))

    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """The MARWIL loss alone (RLlib's signature)."""
        return MARWILTFPolicy.loss_and_stats(self, model, dist_class, train_batch)[0]

    @tf.autograph.experimental.do_not_convert
    def stats(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """The learning rate and the moving average of the squared advantages (the
        value this step's loss used)."""
        return {"cur_lr": tf.cast(self.optimizer.learning_rate, tf.float32),
                "moving_average_sqd_adv_norm": tf.identity(self.moving_average_sqd_adv_norm)}

    def get_state(self) -> Dict[str, Any]:
        """OnPolicyTFPolicy's state plus the moving average."""
        state = super().get_state()
        state["moving_average_sqd_adv_norm"] = float(self.moving_average_sqd_adv_norm.numpy())
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result."""
        super().set_state(state)
        if "moving_average_sqd_adv_norm" in state:
            self.moving_average_sqd_adv_norm.assign(float(state["moving_average_sqd_adv_norm"]))
