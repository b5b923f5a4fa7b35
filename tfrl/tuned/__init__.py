"""Tuned experiment files, shipped inside the package.

Each `<name>.yaml` in this folder is an experiment file (the format of `tfrl train
--config`, see `tfrl.cli.main`) with the settings of a learning test or of RL Zoo;
`README.md` here has a row for each. On the command line a file is named by its stem
(`tfrl train --config=ppo_cartpole`; `tfrl list` shows them all); `tfrl train --algo=PPO
--env=CartPole-v1` uses the tuned file of that pair when there is one.

Example:
    >>> "ppo_cartpole" in names()
    True
    >>> os.path.relpath(path("ppo_cartpole.yaml"), TUNED_DIR), path("no_such_file")
    ('ppo_cartpole.yaml', None)
"""

import os
from typing import List, Optional

#: The folder of the tuned files (inside the installed package).
TUNED_DIR = os.path.dirname(os.path.abspath(__file__))
_SUFFIX = ".yaml"


def names() -> List[str]:
    """The tuned files' names (file stems), sorted."""
    return sorted(f[:-len(_SUFFIX)] for f in os.listdir(TUNED_DIR) if f.endswith(_SUFFIX))


def path(name: str) -> Optional[str]:
    """The path of the tuned file `name` (`"ppo_cartpole"` or `"ppo_cartpole.yaml"`), or
    None if there is none of that name."""
    stem = name[:-len(_SUFFIX)] if name.endswith(_SUFFIX) else name
    return os.path.join(TUNED_DIR, stem + _SUFFIX) if stem in names() else None
