"""Stable-Baselines3's argument names and the tfrl (RLlib) config keys that answer them.

A user coming from SB3 writes `learning_rate` or `n_epochs` in a config; the unknown-key
error of `AlgorithmConfig.from_dict` then names tfrl's key instead of the closest
spelling (`learn_input`). `docs/coming-from-sb3.md` explains each row at length
(tests/test_docs_sb3_page.py holds the page and this table to each other).

Each SB3 name maps to answers tried in order, `(marker, key, note)`: an answer applies
to a config class that has `key` (tfrl's key; None for names tfrl has no key for) and
`marker` (None: no further condition). So `batch_size` is `sgd_minibatch_size` for PPO
(it has `clip_param`) and `train_batch_size` for the others, and `gae_lambda` gets an
answer only where `lambda` exists.

Example:
    >>> sb3_hints({"lr", "train_batch_size"})["learning_rate"]
    "learning_rate is Stable-Baselines3's name; tfrl's key is lr."
    >>> sb3_hints({"clip_param", "sgd_minibatch_size", "train_batch_size"})["batch_size"]
    "batch_size is Stable-Baselines3's name; tfrl's key is sgd_minibatch_size."
    >>> sb3_hints({"train_batch_size"})["batch_size"]
    "batch_size is Stable-Baselines3's name; tfrl's key is train_batch_size."
"""

from typing import Dict, Iterable, Optional, Sequence, Tuple

_OFF_POLICY = "replay_buffer_config"
_PPO = "clip_param"
_FCNET = ": {fcnet_hiddens: [...]}"

#: SB3 (and RL Zoo) name -> ((marker key or None, tfrl's key or None, note), ...).
SB3_KEYS: Dict[str, Sequence[Tuple[Optional[str], Optional[str], str]]] = {
    "learning_rate": ((None, "optimization", ": {actor_learning_rate, critic_learning_rate, "
                                             "entropy_learning_rate}"),
                      (None, "lr", "")),
    "n_steps": ((None, "rollout_fragment_length", " (per environment; set train_batch_size = "
                                                  "n_steps * number of envs)"),),
    "batch_size": ((_PPO, "sgd_minibatch_size", ""), (None, "train_batch_size", "")),
    "n_epochs": ((_PPO, "num_sgd_iter", ""),),
    "gae_lambda": ((None, "lambda", ""),),
    "clip_range": ((None, "clip_param", ""),),
    "clip_range_vf": ((None, "vf_clip_param", " (SB3's None is a large value such as 1e6)"),),
    "ent_coef": ((None, "initial_alpha", " (alpha is always tuned toward target_entropy, as "
                                         "SB3's 'auto')"),
                 (None, "entropy_coeff", "")),
    "vf_coef": ((None, "vf_loss_coeff", ""),),
    "max_grad_norm": ((None, "grad_clip", ""),),
    "normalize_advantage": ((None, "normalize_advantages", " (\"minibatch\" is SB3's rule)"),),
    "target_kl": ((_PPO, None, "tfrl has RLlib's adaptive KL penalty instead (kl_coeff, "
                               "kl_target; kl_coeff: 0 is SB3's loss)"),),
    "net_arch": ((None, "policy_model_config", " and q_model_config" + _FCNET),
                 (None, "actor_hiddens", " and critic_hiddens"),
                 (None, "model", _FCNET)),
    "activation_fn": ((None, "policy_model_config", " and q_model_config: {fcnet_activation: "
                                                    "relu}"),
                      (None, "actor_hidden_activation", " and critic_hidden_activation"),
                      (None, "model", ": {fcnet_activation: relu}")),
    "policy_kwargs": ((None, "policy_model_config", " and q_model_config (net_arch is their "
                                                    "fcnet_hiddens)"),
                      (None, "actor_hiddens", " and critic_hiddens (net_arch; activation_fn is "
                                              "actor_hidden_activation)"),
                      (None, "model", " (net_arch is model.fcnet_hiddens)")),
    "policy": ((None, None, "the model follows from the spaces; set it under model:"),),
    "buffer_size": ((None, "replay_buffer_config", ": {capacity: N}"),),
    "learning_starts": ((None, "num_steps_sampled_before_learning_starts", ""),),
    "train_freq": ((_OFF_POLICY, "rollout_fragment_length", " (env steps between learning "
                                                            "phases, per environment)"),),
    "gradient_steps": ((None, "training_intensity", " (gradient_steps * batch_size / "
                                                    "train_freq)"),),
    "target_update_interval": ((None, "target_network_update_freq", ""),),
    "exploration_fraction": ((_OFF_POLICY, "exploration_config",
                              ": {epsilon_timesteps: fraction * total steps}"),),
    "exploration_initial_eps": ((_OFF_POLICY, "exploration_config", ": {initial_epsilon: ...}"),),
    "exploration_final_eps": ((_OFF_POLICY, "exploration_config", ": {final_epsilon: ...}"),),
    "device": ((None, "num_gpus", ""),),
    "n_envs": ((None, "num_envs_per_worker", ""),),
    "normalize": ((None, "observation_filter", ": MeanStdFilter"),),
    "n_timesteps": ((None, None, "it is a stop criterion: stop: {timesteps_total: N} (or "
                                "--stop=timesteps_total=N)"),),
    "tensorboard_log": ((None, None, "tfrl train --logdir writes TensorBoard files"),),
    "verbose": ((None, None, "tfrl train --quiet / --verbose"),),
}


def sb3_hints(valid_keys: Iterable[str]) -> Dict[str, str]:
    """SB3 name -> the sentence naming tfrl's key, for a config class with `valid_keys`
    (SB3 names that are valid keys there, such as `gamma`, get none)."""
    valid = set(valid_keys)
    hints = {}
    for name, answers in SB3_KEYS.items():
        if name in valid:
            continue
        for marker, key, note in answers:
            if (marker is None or marker in valid) and (key is None or key in valid):
                said = f"tfrl's key is {key}{note}" if key else f"tfrl has no such key: {note}"
                hints[name] = f"{name} is Stable-Baselines3's name; {said}."
                break
    return hints
