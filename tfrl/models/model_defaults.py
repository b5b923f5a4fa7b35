"""MODEL_DEFAULTS: the model config keys and their defaults, in one place.

`tfrl.models.catalog` re-exports `MODEL_DEFAULTS` (RLlib's path). This module imports
nothing of tfrl, so every model module (and the policy layer) reads a default from here
(`model_setting`) instead of spelling it again.

Example:
    >>> model_setting({"max_seq_len": 8}, "max_seq_len"), model_setting({}, "max_seq_len")
    (8, 20)
"""

import copy
import difflib
from typing import Any, Dict, Mapping

# The model config keys and their defaults (RLlib's classic-stack MODEL_DEFAULTS).
# Note: tfrl defaults `vf_share_layers` to False (separate value network).
MODEL_DEFAULTS: Dict[str, Any] = {
    "_disable_preprocessor_api": False,
    "_disable_action_flattening": False,
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "tanh",
    "conv_filters": None,
    "conv_activation": "relu",
    # Image observations: the layout of rank-3 observations (None: channels-first iff a
    # shape (C, H, W) has C <= 4 < H, W; or "channels_last" / "channels_first"), and
    # whether uint8 images are scaled to [0, 1] inside the model (see
    # tfrl.models.tf.visionnet; SB3's `normalize_images`).
    "conv_data_format": None,
    "normalize_images": True,
    # The image encoder's compute dtype: "float32", or "bfloat16" (Keras' mixed_bfloat16
    # policy: bf16 math, float32 weights; the encoder's output, the heads and the loss
    # stay float32). Opt-in: fewer CPU cycles per conv step where the CPU has bf16
    # instructions; learning with it is not yet checked against float32 returns.
    "conv_compute_dtype": "float32",
    "post_fcnet_hiddens": [],
    "post_fcnet_activation": "relu",
    "free_log_std": False,
    "no_final_linear": False,
    "vf_share_layers": False,
    "use_lstm": False,
    "max_seq_len": 20,
    "lstm_cell_size": 256,
    "lstm_use_prev_action": False,
    "lstm_use_prev_reward": False,
    "_time_major": False,
    "use_attention": False,
    "attention_num_transformer_units": 1,
    "attention_dim": 64,
    "attention_num_heads": 1,
    "attention_head_dim": 32,
    "attention_memory_inference": 50,
    "attention_memory_training": 50,
    "attention_position_wise_mlp_dim": 32,
    "attention_init_gru_gate_bias": 2.0,
    "attention_use_n_prev_actions": 0,
    "attention_use_n_prev_rewards": 0,
    "framestack": True,
    "dim": 84,
    "grayscale": False,
    "zero_mean": True,
    "custom_model": None,
    "custom_model_config": {},
    "custom_action_dist": None,
    "custom_preprocessor": None,
    "encoder_latent_dim": None,
    "always_check_shapes": False,
    # tfrl: the key of a Dict observation's action mask (see tfrl.models.action_mask);
    # None turns built-in masking off (the mask then reaches the model as features).
    "action_mask_key": "action_mask",
}
# RLlib's initializer keys; tfrl uses normc (as RLlib's defaults) and accepts only None.
_INITIALIZER_KEYS = tuple(
    f"{layer}_{kind}{suffix}"
    for layer, kind in (
        ("fcnet", "weights_initializer"), ("fcnet", "bias_initializer"),
        ("conv", "kernel_initializer"), ("conv", "bias_initializer"),
        ("post_fcnet", "weights_initializer"), ("post_fcnet", "bias_initializer"),
        ("lstm", "weights_initializer"), ("lstm", "bias_initializer"),
    )
    for suffix in ("", "_config")
)
MODEL_DEFAULTS.update({key: None for key in _INITIALIZER_KEYS})


def model_setting(model_config: Mapping[str, Any], key: str) -> Any:
    """`model_config[key]`, or its `MODEL_DEFAULTS` value where `model_config` (a model
    config dict, merged with the defaults or not) lacks the key.

    Raises:
        KeyError: For a key that is not a model config key (naming the key).
    """
    if key not in MODEL_DEFAULTS:
        raise KeyError(f"{key!r} is not a model config key; see MODEL_DEFAULTS for the keys.")
    return model_config[key] if key in model_config else copy.copy(MODEL_DEFAULTS[key])


def check_model_keys(model_config: Mapping[str, Any]) -> None:
    """Raises for a key of `model_config` that is not a model config key (naming the
    closest one). `tfrl.models.catalog.merge_model_config` checks the values too.

    Raises:
        ValueError: For an unknown key.
    """
    for key in model_config:
        if key not in MODEL_DEFAULTS:
            close = difflib.get_close_matches(key, list(MODEL_DEFAULTS), n=1)
            hint = f"Did you mean {close[0]!r}?" if close else "See MODEL_DEFAULTS for valid keys."
            raise ValueError(f"Unknown model config key. Received: {key!r}. {hint}")
