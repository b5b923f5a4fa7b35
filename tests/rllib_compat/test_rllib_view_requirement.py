"""RLlib's own ViewRequirement tests, ported to tfrl.

Ported from `rllib/policy/tests/test_view_requirement.py` at ray-project/ray commit
8e6b094502e01b13ec1de06e72ba445a2071e776. Covers: test_serialize_view_requirement
(`import gym` becomes gymnasium).
"""

import json

import gymnasium as gym

from tfrl.policy.view_requirement import ViewRequirement

RLLIB_PATH = "rllib/policy/tests/test_view_requirement.py"
RLLIB_COMMIT = "8e6b094502e01b13ec1de06e72ba445a2071e776"


def test_serialize_view_requirement():
    """A ViewRequirement round-trips through a JSON-serializable dict."""
    vr = ViewRequirement("obs", shift=[-1], used_for_training=False,
                         used_for_compute_actions=True, batch_repeat_value=1)
    d = vr.to_dict()
    assert d["data_col"] == "obs"
    assert d["space"]["space"] == "box"

    # The dict survives JSON.
    s = json.dumps(d)
    d2 = json.loads(s)

    assert d2["used_for_training"] is False
    assert d2["used_for_compute_actions"] is True

    vr2 = ViewRequirement.from_dict(d2)
    assert vr2.data_col == "obs"
    assert isinstance(vr2.space, gym.spaces.Box)
