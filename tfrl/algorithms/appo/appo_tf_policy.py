"""APPOTFPolicy: IMPALA's policy with PPO's clipped surrogate and a target network.

The loss is `appo_loss.appo_surrogate_loss` on the current policy `pi`, the behaviour
policy `mu` (the sampled `action_logp`) and the target network `pi_target`, a copy of
the model that `update_target()` refreshes (the APPO plan calls it every
`target_update_frequency * num_sgd_iter * minibatch_buffer_size` learner passes). With
V-trace (`vtrace=True`), the advantages and value targets are V-trace's for the ratios
`pi_target / mu` (`impala_tf_policy.vtrace_row_targets`: the whole batch's targets on
every replica); without, GAE's from postprocessing. With `use_kl_loss` the loss adds
`kl_coeff * KL[pi_target || pi]`, and `update_kl(kl)` adapts `kl_coeff` as PPO does.
The target weights and the KL coefficient are part of `get_state()`.

Recurrent models learn on sequences as IMPALA's do (see `impala_tf_policy`); the target
network runs on the same sequences from the sampled `state_in_*`.
"""

from typing import Any, ClassVar, Dict, Tuple

import keras
import numpy as np
import tensorflow as tf
import tree

from tfrl.algorithms.appo.appo_config import APPOConfig
from tfrl.algorithms.appo.appo_loss import appo_surrogate_loss
from tfrl.algorithms.impala.impala_tf_policy import ImpalaTFPolicy
from tfrl.algorithms.ppo.kl_coeff import KLCoeffPolicy
from tfrl.algorithms.on_policy_policy import OnPolicyTFPolicy
from tfrl.core.columns import Columns
from tfrl.policy import space_specs
from tfrl.policy.train_columns import autograph_converted


class APPOTFPolicy(KLCoeffPolicy, ImpalaTFPolicy):
    """APPO's policy (config: `APPOConfig`'s fields)."""

    config_class: ClassVar[type] = APPOConfig

    def __init__(self, observation_space, action_space, config=None, *, strategy=None):
        super().__init__(observation_space, action_space, config, strategy=strategy)
        with self.strategy.scope():
            self.target_model = self.make_model()
            obs = space_specs.zeros_batch(self.observation_space, 1)
            if self._recurrent:  # one sequence of one step
                self.target_model(
                    (tree.map_structure(lambda o: o[:, None], obs),
                     [s[None] for s in self._initial_state], tf.ones([1], tf.int32)),
                    **{k: v[:, None] for k, v in self._acting.zero_prev(1).items()})
            else:
                self.target_model(obs)
        self.update_target()

    def target_dist_inputs(self, train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """The target network's action-distribution inputs for the train batch
        (`[n, k]`; a recurrent model's sequences: `[B, T, k]`, from the sampled
        `state_in_*`), without gradient."""
        obs = train_batch[Columns.OBS]
        if not self._recurrent:
            dist_inputs, _ = self.target_model(obs, training=False)
        else:
            dist_inputs, _, _ = self.target_model(
                (obs, self.sequence_state_in(train_batch), train_batch[Columns.SEQ_LENS]),
                training=False, **self.sequence_prev(train_batch))
        return tf.stop_gradient(dist_inputs)

    def update_target(self) -> None:
        """Copies the model's weights into the target network."""
        for target, source in zip(self.target_model.weights, self.model.weights):
            target.assign(source)

    def get_target_weights(self):
        """The target network's weights (numpy, `target_model.weights` order)."""
        return [np.asarray(v.numpy()) for v in self.target_model.weights]

    def postprocess_trajectory(self, sample_batch: Any, other_agent_batches: Any = None,
                               episode: Any = None) -> Any:
        """With V-trace: the batch unchanged; without: GAE (`lambda`, `use_gae`)."""
        if self.config["vtrace"]:
            return sample_batch
        return OnPolicyTFPolicy.postprocess_trajectory(self, sample_batch, other_agent_batches,
                                                       episode)

    @tf.autograph.experimental.do_not_convert  # plain TF ops; converting costs seconds
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """APPO's loss (see the module docstring) and its stats."""
        config = self.config
        dist_inputs, values, state_out = self.forward_with_state(model, train_batch)
        curr = dist_class(dist_inputs, model)  # [n, k] (sequences: [B, T, k])
        target = dist_class(self.target_dist_inputs(train_batch), model)
        actions = train_batch[Columns.ACTIONS]
        behaviour_logp = train_batch[Columns.ACTION_LOGP]  # [n]
        target_logp = target.logp(actions)  # [n]
        value_targets, advantages, mask = self.targets(
            train_batch, target_logp - behaviour_logp, values, state_out)
        loss, stats = appo_surrogate_loss(
            curr.logp(actions), behaviour_logp, target_logp, advantages, curr.entropy(),
            target.kl(curr), values, value_targets, clip_param=config["clip_param"],
            vf_loss_coeff=config["vf_loss_coeff"], entropy_coeff=self.entropy_coeff,
            kl_coeff=self.kl_coeff_var, use_kl_loss=config["use_kl_loss"], mask=mask)
        return loss, {**stats, **autograph_converted(self.stats)(train_batch)}

    def loss(self, model: keras.Model, dist_class: type,
             train_batch: Dict[str, tf.Tensor]) -> tf.Tensor:
        """APPO's loss alone (RLlib's signature)."""
        return APPOTFPolicy.loss_and_stats(self, model, dist_class, train_batch)[0]

    def get_state(self) -> Dict[str, Any]:
        """ImpalaTFPolicy's state plus the KL coefficient and the target weights."""
        state = super().get_state()
        state["target_weights"] = self.get_target_weights()
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result (the target network from the weights if the
        state has no target weights)."""
        super().set_state(state)
        target_weights = state.get("target_weights")
        if target_weights is None:
            self.update_target()
        else:
            if len(target_weights) != len(self.target_model.weights):
                raise ValueError(
                    f"{type(self).__name__}.set_state(): 'target_weights' holds "
                    f"{len(target_weights)} arrays; the target network has "
                    f"{len(self.target_model.weights)}. Restore a state of the same model.")
            for variable, value in zip(self.target_model.weights, target_weights):
                variable.assign(value)
