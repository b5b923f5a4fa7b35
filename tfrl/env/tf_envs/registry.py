"""The names of the TF-native envs: `"tfrl/<gymnasium id>"` -> the env class.

Example:
    >>> env = make_tf_env("tfrl/Pendulum-v1", num_envs=4)
    >>> env, env.observation_space.shape, env.max_episode_steps
    (TFPendulum(Pendulum-v1, num_envs=4), (3,), 200)
"""

import difflib
from typing import Dict, Type

from tfrl.env.tf_envs.acrobot import TFAcrobot
from tfrl.env.tf_envs.cartpole import TFCartPole
from tfrl.env.tf_envs.continuous_mountain_car import TFMountainCarContinuous
from tfrl.env.tf_envs.mountain_car import TFMountainCar
from tfrl.env.tf_envs.pendulum import TFPendulum
from tfrl.env.registry import TF_ENV_PREFIX
from tfrl.env.tf_envs.tf_vector_env import TFVectorEnv
from tfrl.utils.error import EnvError

TF_ENVS: Dict[str, Type[TFVectorEnv]] = {
    f"{TF_ENV_PREFIX}{cls.env_id}": cls
    for cls in (TFCartPole, TFPendulum, TFAcrobot, TFMountainCar, TFMountainCarContinuous)
}


def make_tf_env(env_id: str, num_envs: int, **kwargs) -> TFVectorEnv:
    """The TF-native vector env named `env_id` (a key of `TF_ENVS`).

    Args:
        env_id: E.g. "tfrl/CartPole-v1".
        num_envs: How many sub-envs to step together.
        **kwargs: `max_episode_steps`, `dtype` (see `TFVectorEnv`).
    """
    if env_id not in TF_ENVS:
        close = difflib.get_close_matches(str(env_id), TF_ENVS, n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise EnvError(f"No TF-native env named {env_id!r}; the TF-native envs are "
                       f"{sorted(TF_ENVS)}.{hint}")
    return TF_ENVS[env_id](num_envs, **kwargs)
