"""MAPPOTFPolicy: PPO whose value function is a centralized critic.

The policy acts on the agent's own observation only: `model.actor` is the catalog model
(the numpy inference path, the SavedModel export and `compute_single_action` use it
alone; its own value head is held at zero, so `vf_preds` from acting are 0). The value
function is `model.central_vf`, an MLP (`model`'s `fcnet_hiddens`, `fcnet_activation`)
over the critic input that `postprocess_trajectory` builds from the other agents' batches
of the same episode (`critic_input.critic_input_rows`) or from the global state in the
infos (`critic_input.global_state_rows`) into the column `critic_input`. Postprocessing
then replaces `vf_preds` with the central values, bootstraps a cut trajectory with the
central value of its last `new_obs` row and computes GAE. The loss is PPO's
(`PPOTFPolicy.loss_and_stats`, `ppo_loss.ppo_loss`) with `forward` returning the central
values for the batch's `critic_input`.

Yu et al., "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games", 2022,
https://arxiv.org/abs/2103.01955.
"""

from typing import Any, Dict, List, Mapping, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
import tree

from tfrl.algorithms.mappo.critic_input import (CRITIC_INPUT, NEXT_STATE_KEY, STATE_KEY,
                                                critic_input_rows, flat_rows,
                                                global_state_rows)
from tfrl.algorithms.mappo.mappo_config import MAPPOConfig
from tfrl.algorithms.policy_checks import check_no_recurrent_model
from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy
from tfrl.core.columns import Columns
from tfrl.evaluation.postprocessing import compute_advantages
from tfrl.models.catalog import ModelCatalog
from tfrl.models.model_defaults import model_setting
from tfrl.models.tf.tf_model import apply, dense_stack, value_head
from tfrl.policy import space_specs

__all__ = ["MAPPOModel", "MAPPOTFPolicy"]


class MAPPOModel(keras.Model):
    """The actor (catalog model: `call(obs) -> (dist_inputs, value)`, value held at 0)
    and the centralized critic `central_vf` (`[B, D] -> [B]`).

    Args:
        actor: The built catalog model.
        hiddens, activation: The critic's hidden layers.
        critic_input_size: `D`.
    """

    def __init__(self, actor: keras.Model, hiddens: List[int], activation: Any,
                 critic_input_size: int):
        super().__init__(name="mappo")
        self.actor = actor
        self.critic_layers = dense_stack(hiddens, activation, "central_vf")
        self.critic_out = value_head()
        shape = (None, critic_input_size)
        for layer in self.critic_layers:
            layer.build(shape)
            shape = (None, layer.units)
        self.critic_out.build(shape)
        self.critic_input_size = critic_input_size
        self.built = True

    def central_vf(self, critic_input: tf.Tensor, training: bool = False) -> tf.Tensor:
        """The central values `[B]` of critic inputs `[B, D]`."""
        x = apply(self.critic_layers, tf.cast(critic_input, tf.float32))
        return tf.squeeze(self.critic_out(x), axis=-1)

    def call(self, obs, training=False):
        return self.actor(obs, training=training)


class MAPPOTFPolicy(PPOTFPolicy):
    """MAPPO's policy (config: `MAPPOConfig`'s fields); see the module docstring.

    Raises:
        ValueError: For a recurrent model, or a critic input that cannot be built
            ("global_state" without `critic_state_size`).
    """

    config_class = MAPPOConfig
    supports_recurrent_models = False

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Optional[dict] = None, *,
                 strategy: Optional[tf.distribute.Strategy] = None):
        check_no_recurrent_model(config or {}, type(self).__name__,
                                 "MAPPO's actor and centralized critic are feed-forward.")
        merged = {**self.default_config(), **(config or {})}
        own = int(flat_rows(space_specs.zeros_batch(observation_space, 1)).shape[1])
        self.critic_kind = merged["critic_input"]
        agents = merged["critic_agents"]
        sizes = merged["critic_obs_sizes"]
        if self.critic_kind == "global_state":
            if merged["critic_state_size"] is None:
                raise ValueError(
                    f"{type(self).__name__}: critic_input='global_state' needs the state's "
                    "size (critic_state_size), which MAPPO reads from the env; received "
                    "critic_state_size=None. Train with MAPPO, set critic_state_size, or "
                    "use critic_input='all_obs'.")
            self.critic_input_size = own + int(merged["critic_state_size"])
        elif agents is not None:
            if sizes is None:
                raise ValueError(
                    f"{type(self).__name__}: critic_agents={agents!r} needs the size of each "
                    "agent's observation (critic_obs_sizes), which MAPPO reads from the "
                    "env; received critic_obs_sizes=None.")
            # Own slot first, then the others: the sizes of all agents.
            self.critic_input_size = int(sum(sizes))
        else:  # a policy built by hand: its own observation only
            self.critic_input_size = own
        self.own_size = own
        super().__init__(observation_space, action_space, config, strategy=strategy)
        self._central_value = tf.function(
            self._central_value_graph, reduce_retracing=False,
            input_signature=[tf.TensorSpec([None, self.critic_input_size], tf.float32)])

    # ------------------------------------------------------------------ model

    def make_model(self) -> keras.Model:
        """`MAPPOModel`: the catalog actor (value head held at zero) and the critic."""
        actor_config = {**dict(self.config["model"]), "vf_share_layers": True}
        actor = ModelCatalog.get_model(self.observation_space, self.action_space,
                                       self.num_outputs, actor_config)
        actor(space_specs.zeros_batch(self.observation_space, 1))
        value_out = getattr(getattr(actor, "inner", actor), "value_out", None)
        if value_out is not None:
            for weight in value_out.weights:
                weight.assign(tf.zeros_like(weight))
            value_out.trainable = False
        model_config = self.config["model"]
        return MAPPOModel(actor, list(model_setting(model_config, "fcnet_hiddens")),
                          model_setting(model_config, "fcnet_activation"),
                          self.critic_input_size)

    @property
    def action_model(self) -> keras.Model:
        """The actor: acting reads the agent's own observation only."""
        return self.model.actor

    def forward(self, model: keras.Model, train_batch: Dict[str, tf.Tensor]
                ) -> Tuple[tf.Tensor, tf.Tensor]:
        """`(dist_inputs, central values)` of a train batch: the actor on `obs`, the
        critic on `critic_input` (what PPO's loss reads as the values)."""
        dist_inputs, _ = super().forward(model, train_batch)
        return dist_inputs, model.central_vf(train_batch[CRITIC_INPUT], training=True)

    def _central_value_graph(self, critic_input: tf.Tensor) -> tf.Tensor:
        self.num_traces["central_value"] = self.num_traces.get("central_value", 0) + 1
        return self.model.central_vf(critic_input)

    def central_value(self, critic_input: Any) -> np.ndarray:
        """The centralized critic's values `[B]` of critic inputs `[B, D]`.

        Raises:
            ValueError: If the inputs are not `[B, critic_input_size]`.
        """
        x = np.asarray(critic_input, np.float32)
        if x.ndim != 2 or x.shape[1] != self.critic_input_size:
            raise ValueError(
                f"{type(self).__name__}.central_value() takes critic inputs of shape "
                f"[B, {self.critic_input_size}]; received shape {x.shape}.")
        return self._central_value(tf.constant(x)).numpy()

    # --------------------------------------------------------- postprocessing

    def own_agent_id(self, batch: Any, others: Mapping[Any, Any], episode: Any) -> Any:
        """The id of the agent whose trajectory `batch` is: the episode's agent at the
        batch's `agent_index`, else the one agent of `critic_agents` without a batch
        in `others`.

        Raises:
            ValueError: If neither tells.
        """
        agents = self.config["critic_agents"]
        if episode is not None and Columns.AGENT_INDEX in batch and len(batch):
            seen = episode.get_agents()
            index = int(batch[Columns.AGENT_INDEX][0])
            if 0 <= index < len(seen) and seen[index] in agents:
                return seen[index]
        missing = [a for a in agents if a not in others]
        if len(missing) == 1:
            return missing[0]
        raise ValueError(
            f"{type(self).__name__}: cannot tell which agent of critic_agents={agents!r} "
            f"this trajectory belongs to (other agents' batches: {sorted(map(str, others))}). "
            "Pass the episode, or other_agent_batches for every other agent.")

    def critic_inputs(self, batch: Any, other_agent_batches: Optional[Mapping] = None,
                      episode: Any = None, column: str = Columns.OBS) -> np.ndarray:
        """The critic's input `[T, critic_input_size]` for `batch`'s rows (`column`
        `obs`), or for the states after them (`new_obs`); `other_agent_batches`: agent
        id -> `(policy, batch)` of the same episode, as samplers pass them."""
        if self.critic_kind == "global_state":
            key = STATE_KEY if column == Columns.OBS else NEXT_STATE_KEY
            return global_state_rows(batch, int(self.config["critic_state_size"]), key)
        agents = self.config["critic_agents"]
        if agents is None:
            return flat_rows(batch[column])
        others = {a: pb[1] for a, pb in (other_agent_batches or {}).items()}
        me = self.own_agent_id(batch, others, episode)
        order = [a for a in agents if a != me]
        sizes = [n for a, n in zip(agents, self.config["critic_obs_sizes"]) if a != me]
        return critic_input_rows(batch, others, order, sizes, column)

    def postprocess_trajectory(self, sample_batch: Any, other_agent_batches: Any = None,
                               episode: Any = None) -> Any:
        """Adds `critic_input`, the central `vf_preds`, `advantages` and
        `value_targets` (GAE bootstrapped with the central value after the last row)."""
        config = self.config
        sample_batch[CRITIC_INPUT] = self.critic_inputs(sample_batch, other_agent_batches,
                                                        episode)
        sample_batch[Columns.VF_PREDS] = self.central_value(sample_batch[CRITIC_INPUT])
        terminateds = sample_batch.get(Columns.TERMINATEDS)
        if terminateds is None:
            terminateds = sample_batch.get(Columns.DONES)
        if terminateds is not None and bool(terminateds[-1]) and not config["no_done_at_end"]:
            last_r = 0.0
        else:
            last = {k: tree.map_structure(lambda v: v[-1:], sample_batch[k])
                    for k in (Columns.NEXT_OBS, Columns.T, Columns.INFOS,
                              Columns.AGENT_INDEX) if k in sample_batch}
            last_r = float(self.central_value(self.critic_inputs(
                last, other_agent_batches, episode, Columns.NEXT_OBS))[0])
        return compute_advantages(sample_batch, last_r, config["gamma"], config["lambda"],
                                  use_gae=config["use_gae"], use_critic=True)
