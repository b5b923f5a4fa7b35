"""RLlib's multi-agent config checks, ported to tfrl.

Ports `rllib/utils/tests/test_check_multi_agent.py` of ray-project/ray at commit
141efa8018e3defee4de8da0578e87238cbf268a: `test_multi_agent_invalid_args`,
`test_multi_agent_bad_policy_ids`, `test_multi_agent_invalid_sub_values`,
`test_setting_multiagent_should_fail`. `assertRaisesRegex` becomes
`pytest.raises(..., match=...)` with RLlib's patterns.
"""

import pytest

from tfrl.algorithms.pg import PGConfig

RLLIB_PATH = "rllib/utils/tests/test_check_multi_agent.py"
RLLIB_COMMIT = "141efa8018e3defee4de8da0578e87238cbf268a"


def test_multi_agent_invalid_args():
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'wrong_key'"):
        PGConfig().multi_agent(policies={"p0"}, policies_to_train=["p0"], wrong_key=1)


def test_multi_agent_bad_policy_ids():
    with pytest.raises(KeyError, match="Policy IDs must always be of type"):
        PGConfig().multi_agent(
            policies={1, "good_id"},
            policy_mapping_fn=lambda aid, episode, worker, **kw: "good_id",
        )


def test_multi_agent_invalid_sub_values():
    with pytest.raises(ValueError,
                       match="config.multi_agent\\(count_steps_by=..\\) must be one of"):
        PGConfig().multi_agent(count_steps_by="invalid_value")


def test_setting_multiagent_should_fail():
    config = PGConfig().multi_agent(policies={
        "pol1": (None, None, None, None),
        "pol2": (None, None, None, {"lr": 0.001}),
    })

    def set_ma(config):
        print(config["multiagent"])  # ok
        config["multiagent"] = {"policies": {"pol1", "pol2"}}  # not ok

    with pytest.raises(AttributeError, match="Cannot set `multiagent` key in an AlgorithmConfig!"):
        set_ma(config)
