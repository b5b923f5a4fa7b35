"""KLCoeffPolicy: the adaptive KL penalty coefficient PPO and APPO share (RLlib's
`KLCoeffMixin`).

`kl_coeff` starts at the config's `kl_coeff` and lives in a `tf.Variable`
(`kl_coeff_var`, read by the compiled loss, so that a change never retraces it);
`update_kl(sampled_kl)` applies the rule `tfrl.algorithms.ppo.ppo_loss.updated_kl_coeff`
to it. It is part of `get_state()`, and
`stats()` reports it with the learning rate and the entropy coefficient.
"""

from typing import Any, Dict

import tensorflow as tf

from tfrl.algorithms.on_policy_policy import OnPolicyTFPolicy
from tfrl.algorithms.ppo.ppo_loss import updated_kl_coeff

__all__ = ["KLCoeffPolicy"]


class KLCoeffPolicy(OnPolicyTFPolicy):
    """An on-policy policy with an adaptive KL coefficient (config: `kl_coeff`,
    `kl_target`); see the module docstring. A base of `PPOTFPolicy` and (before
    `ImpalaTFPolicy`) of `APPOTFPolicy`."""

    def __init__(self, observation_space, action_space, config=None, *, strategy=None):
        super().__init__(observation_space, action_space, config, strategy=strategy)
        self.kl_coeff = float(self.config["kl_coeff"])
        self.kl_target = float(self.config["kl_target"])
        with self.strategy.scope():
            self.kl_coeff_var = tf.Variable(self.kl_coeff, dtype=tf.float32, trainable=False,
                                            name="kl_coeff")

    @tf.autograph.experimental.do_not_convert
    def stats(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """The current KL coefficient, learning rate and entropy coefficient."""
        return {"cur_kl_coeff": tf.identity(self.kl_coeff_var),
                "cur_lr": tf.cast(self.optimizer.learning_rate, tf.float32),
                "entropy_coeff": tf.identity(self.entropy_coeff)}

    def update_kl(self, sampled_kl: float) -> float:
        """Adapts the KL coefficient to the mean KL of the last update
        (`ppo_loss.updated_kl_coeff`); returns it."""
        self.kl_coeff = updated_kl_coeff(self.kl_coeff, sampled_kl, self.kl_target)
        self.kl_coeff_var.assign(self.kl_coeff)
        return self.kl_coeff

    def get_state(self) -> Dict[str, Any]:
        """The base policy's state plus the current KL coefficient."""
        state = super().get_state()
        state["kl_coeff"] = self.kl_coeff
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result, including the KL coefficient."""
        super().set_state(state)
        if "kl_coeff" in state:
            self.kl_coeff = float(state["kl_coeff"])
            self.kl_coeff_var.assign(self.kl_coeff)
