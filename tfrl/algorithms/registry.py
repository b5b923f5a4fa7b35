"""Algorithms by name: `get_algorithm_class("PPO")` (RLlib's registry).

Example:
    >>> get_algorithm_class("PPO").__name__
    'PPO'
"""

import difflib
import importlib
from typing import List, Tuple

# name -> (module, class name, config class name). Every algorithm registered here runs
# through the conformance suite (tests/conformance) with its default config.
ALGORITHMS = {
    "PG": ("tfrl.algorithms.pg.pg", "PG", "PGConfig"),
    "A2C": ("tfrl.algorithms.a2c.a2c", "A2C", "A2CConfig"),
    "A3C": ("tfrl.algorithms.a3c.a3c", "A3C", "A3CConfig"),
    "PPO": ("tfrl.algorithms.ppo.ppo", "PPO", "PPOConfig"),
    "DQN": ("tfrl.algorithms.dqn.dqn", "DQN", "DQNConfig"),
    "SAC": ("tfrl.algorithms.sac.sac", "SAC", "SACConfig"),
    "TD3": ("tfrl.algorithms.td3.td3", "TD3", "TD3Config"),
    "DDPG": ("tfrl.algorithms.ddpg.ddpg", "DDPG", "DDPGConfig"),
    "IMPALA": ("tfrl.algorithms.impala.impala", "Impala", "ImpalaConfig"),
    "APPO": ("tfrl.algorithms.appo.appo", "APPO", "APPOConfig"),
    "MARWIL": ("tfrl.algorithms.marwil.marwil", "MARWIL", "MARWILConfig"),
    "BC": ("tfrl.algorithms.bc.bc", "BC", "BCConfig"),
    "CQL": ("tfrl.algorithms.cql.cql", "CQL", "CQLConfig"),
    "CQL_DQN": ("tfrl.algorithms.cql_dqn.cql_dqn", "CQLDQN", "CQLDQNConfig"),
}


def _entry(name: str) -> Tuple[str, str, str]:
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
    module_name, cls_name, config_name = _entry(name)
    module = importlib.import_module(module_name)
    cls = getattr(module, cls_name)
    return (cls, getattr(module, config_name)) if return_config else cls


get_trainer_class = get_algorithm_class  # RLlib 1.x name


def all_config_classes() -> List[type]:
    """The config classes of every registered algorithm."""
    return [get_algorithm_class(name, return_config=True)[1] for name in ALGORITHMS]
