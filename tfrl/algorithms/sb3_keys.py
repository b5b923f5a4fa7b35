"""Stable-Baselines3's argument names and the tfrl (RLlib) config keys that answer them.

A user coming from SB3 writes `learning_rate` or `n_epochs` in a config; the unknown-key
error of `AlgorithmConfig.from_dict` then names tfrl's key instead of the closest
spelling (`learn_input`). `docs/coming-from-sb3.md` explains each row at length.

Each SB3 name maps to answers tried in order: `(marker, answer)`, where the answer
applies to a config class that has the key `marker` (None: any class). So `batch_size`
is `train_batch_size` for the off-policy algorithms (they have `replay_buffer_config`)
and `sgd_minibatch_size` for PPO.

Example:
    >>> sb3_hints({"lr", "sgd_minibatch_size"})["learning_rate"]
    "learning_rate is Stable-Baselines3's name; tfrl's key is lr."
    >>> sb3_hints({"lr", "replay_buffer_config"})["batch_size"]
    "batch_size is Stable-Baselines3's name; tfrl's key is train_batch_size."
"""

from typing import Dict, Iterable, Optional, Sequence, Tuple

_OFF_POLICY = "replay_buffer_config"

#: SB3 (and RL Zoo) name -> ((marker key or None, tfrl's key and notes), ...).
SB3_KEYS: Dict[str, Sequence[Tuple[Optional[str], str]]] = {
    "learning_rate": (("optimization", "optimization: {actor_learning_rate, "
                                       "critic_learning_rate, entropy_learning_rate}"),
                      (None, "lr")),
    "n_steps": ((None, "rollout_fragment_length (per environment; set train_batch_size = "
                       "n_steps * number of envs)"),),
    "batch_size": ((_OFF_POLICY, "train_batch_size"), (None, "sgd_minibatch_size")),
    "n_epochs": ((None, "num_sgd_iter"),),
    "gae_lambda": ((None, "lambda"),),
    "clip_range": ((None, "clip_param"),),
    "clip_range_vf": ((None, "vf_clip_param (SB3's None is a large value such as 1e6)"),),
    "ent_coef": (("initial_alpha", "initial_alpha (alpha is always tuned toward "
                                   "target_entropy, as SB3's 'auto')"),
                 (None, "entropy_coeff")),
    "vf_coef": ((None, "vf_loss_coeff"),),
    "max_grad_norm": ((None, "grad_clip"),),
    "normalize_advantage": ((None, "normalize_advantages (\"minibatch\" is SB3's rule)"),),
    "target_kl": ((None, "none: tfrl has RLlib's adaptive KL penalty instead (kl_coeff, "
                         "kl_target; kl_coeff: 0 is SB3's loss)"),),
    "net_arch": (("q_model_config", "policy_model_config and q_model_config: "
                                    "{fcnet_hiddens: [...]}"),
                 ("actor_hiddens", "actor_hiddens and critic_hiddens"),
                 (None, "model: {fcnet_hiddens: [...]}")),
    "activation_fn": ((None, "model: {fcnet_activation: relu}"),),
    "policy_kwargs": ((None, "model (net_arch is model.fcnet_hiddens)"),),
    "policy": ((None, "none: the model follows from the spaces; set it under model:"),),
    "buffer_size": ((_OFF_POLICY, "replay_buffer_config: {capacity: N}"),),
    "learning_starts": ((_OFF_POLICY, "num_steps_sampled_before_learning_starts"),),
    "train_freq": ((_OFF_POLICY, "rollout_fragment_length (env steps between learning phases, "
                          "per environment)"),),
    "gradient_steps": ((_OFF_POLICY, "training_intensity (gradient_steps * batch_size / "
                              "train_freq)"),),
    "target_update_interval": ((_OFF_POLICY, "target_network_update_freq"),),
    "exploration_fraction": ((_OFF_POLICY, "exploration_config: {epsilon_timesteps: fraction * "
                                    "total steps}"),),
    "exploration_initial_eps": ((_OFF_POLICY, "exploration_config: {initial_epsilon: ...}"),),
    "exploration_final_eps": ((_OFF_POLICY, "exploration_config: {final_epsilon: ...}"),),
    "device": ((None, "num_gpus"),),
    "n_envs": ((None, "num_envs_per_worker"),),
    "normalize": ((None, "observation_filter: MeanStdFilter"),),
    "n_timesteps": ((None, "a stop criterion, not a config key: stop: {timesteps_total: N} "
                           "(or --stop=timesteps_total=N)"),),
    "tensorboard_log": ((None, "none: tfrl train --logdir writes TensorBoard files"),),
    "verbose": ((None, "none: tfrl train --quiet / --verbose"),),
}


def sb3_hints(valid_keys: Iterable[str]) -> Dict[str, str]:
    """SB3 name -> the sentence naming tfrl's key, for a config class with `valid_keys`
    (SB3 names that are valid keys there, such as `gamma`, get none)."""
    valid = set(valid_keys)
    hints = {}
    for name, answers in SB3_KEYS.items():
        if name in valid:
            continue
        for marker, answer in answers:
            if marker is None or marker in valid:
                if answer.startswith("none: "):
                    hints[name] = (f"{name} is Stable-Baselines3's name; tfrl has no such "
                                   f"key: {answer[len('none: '):]}.")
                else:
                    hints[name] = f"{name} is Stable-Baselines3's name; tfrl's key is {answer}."
                break
    return hints
