"""Algorithms by name: `get_algorithm_class("PPO")` (RLlib's registry).

Example:
    >>> get_algorithm_class("PPO").__name__
    'PPO'
"""

import difflib
import importlib
from typing import List, Tuple

# name -> (algorithm module, class name, config class name, config module). The config
# modules import no TensorFlow: the CLI checks a config with them before TensorFlow
# loads. Every algorithm registered here runs through the conformance suite
# (tests/conformance) with its default config.
ALGORITHMS = {
    "PG": ("tfrl.algorithms.pg.pg", "PG", "PGConfig",
           "tfrl.algorithms.pg.pg_config"),
    "A2C": ("tfrl.algorithms.a2c.a2c", "A2C", "A2CConfig",
            "tfrl.algorithms.a2c.a2c_config"),
    "A3C": ("tfrl.algorithms.a3c.a3c", "A3C", "A3CConfig",
            "tfrl.algorithms.a3c.a3c_config"),
    "PPO": ("tfrl.algorithms.ppo.ppo", "PPO", "PPOConfig",
            "tfrl.algorithms.ppo.ppo_config"),
    "DQN": ("tfrl.algorithms.dqn.dqn", "DQN", "DQNConfig",
            "tfrl.algorithms.dqn.dqn_config"),
    "SAC": ("tfrl.algorithms.sac.sac", "SAC", "SACConfig",
            "tfrl.algorithms.sac.sac_config"),
    "TD3": ("tfrl.algorithms.td3.td3", "TD3", "TD3Config",
            "tfrl.algorithms.td3.td3_config"),
    "DDPG": ("tfrl.algorithms.ddpg.ddpg", "DDPG", "DDPGConfig",
             "tfrl.algorithms.td3.td3_config"),
    "IMPALA": ("tfrl.algorithms.impala.impala", "Impala", "ImpalaConfig",
               "tfrl.algorithms.impala.impala_config"),
    "APPO": ("tfrl.algorithms.appo.appo", "APPO", "APPOConfig",
             "tfrl.algorithms.appo.appo_config"),
    "MARWIL": ("tfrl.algorithms.marwil.marwil", "MARWIL", "MARWILConfig",
               "tfrl.algorithms.marwil.marwil_config"),
    "BC": ("tfrl.algorithms.bc.bc", "BC", "BCConfig",
           "tfrl.algorithms.bc.bc_config"),
    "CQL": ("tfrl.algorithms.cql.cql", "CQL", "CQLConfig",
            "tfrl.algorithms.cql.cql_config"),
    "CQL_DQN": ("tfrl.algorithms.cql_dqn.cql_dqn", "CQLDQN", "CQLDQNConfig",
                "tfrl.algorithms.cql_dqn.cql_dqn_config"),
    "MAPPO": ("tfrl.algorithms.mappo.mappo", "MAPPO", "MAPPOConfig",
              "tfrl.algorithms.mappo.mappo_config"),
    "QMIX": ("tfrl.algorithms.qmix.qmix", "QMix", "QMixConfig",
             "tfrl.algorithms.qmix.qmix_config"),
    "APEX": ("tfrl.algorithms.apex_dqn.apex_dqn", "ApexDQN", "ApexDQNConfig",
             "tfrl.algorithms.apex_dqn.apex_dqn_config"),
    "R2D2": ("tfrl.algorithms.r2d2.r2d2", "R2D2", "R2D2Config",
             "tfrl.algorithms.r2d2.r2d2_config"),
}


def canonical_name(name: str) -> str:
    """The registered spelling of an algorithm name given in any case (`"ppo"` ->
    `"PPO"`, `"cql-dqn"` -> `"CQL_DQN"`); an unknown name comes back unchanged.

    Example:
        >>> canonical_name("ppo"), canonical_name("Impala"), canonical_name("nope")
        ('PPO', 'IMPALA', 'nope')
    """
    key = str(name).upper().replace("-", "_")
    return key if key in ALGORITHMS else name


def _entry(name: str) -> Tuple[str, str, str, str]:
    if name not in ALGORITHMS:
        close = difflib.get_close_matches(str(name), list(ALGORITHMS), n=1, cutoff=0.4)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"Unknown algorithm {name!r}.{hint} Available: "
                         f"{', '.join(sorted(ALGORITHMS))}.")
    return ALGORITHMS[name]


def get_algorithm_class(name: str, return_config: bool = False):
    """The Algorithm class registered as `name` (and its config class if asked).

    Raises:
        ValueError: For an unknown name (naming the closest one).
    """
    module_name, cls_name, config_name, _ = _entry(name)
    module = importlib.import_module(module_name)
    cls = getattr(module, cls_name)
    return (cls, getattr(module, config_name)) if return_config else cls


get_trainer_class = get_algorithm_class  # RLlib 1.x name


def get_config_class(name: str) -> type:
    """The config class of the algorithm registered as `name`, imported from its config
    module only (no TensorFlow, no algorithm or policy module).

    Raises:
        ValueError: For an unknown name (naming the closest one).
    """
    _, _, config_name, config_module = _entry(name)
    return getattr(importlib.import_module(config_module), config_name)


def all_config_classes() -> List[type]:
    """The config classes of every registered algorithm."""
    return [get_config_class(name) for name in ALGORITHMS]
