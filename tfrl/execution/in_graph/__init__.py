"""The in-graph training path: sampling, advantages and learning of an on-policy
iteration in one compiled call, for TF-native environments (`tfrl.env.tf_envs`)."""

from tfrl.execution.in_graph.advantages import time_major_advantages
from tfrl.execution.in_graph.in_graph_iteration import (InGraphIteration,
                                                        check_in_graph_config,
                                                        gymnasium_env, in_graph_spaces)

__all__ = ["InGraphIteration", "check_in_graph_config", "gymnasium_env", "in_graph_spaces",
           "time_major_advantages"]
