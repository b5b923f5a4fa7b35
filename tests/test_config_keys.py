"""check_keys: unknown configuration keys are rejected with the closest valid key."""

import pytest

from tfrl.utils.config_keys import UnknownKeyError, check_keys, closest_key


def test_valid_keys_pass():
    check_keys({}, [], "config")
    check_keys({"a": 1, "b": 2}, ["a", "b", "c"], "config")


def test_unknown_key_names_closest_and_valid_keys():
    with pytest.raises(ValueError) as info:
        check_keys({"num_workers": 1, "rollout_fragment_lenght": 5},
                   ["num_workers", "rollout_fragment_length", "seed"], "trainer config")
    msg = str(info.value)
    assert "Unknown trainer config key 'rollout_fragment_lenght'" in msg
    assert "Did you mean 'rollout_fragment_length'?" in msg
    assert "Valid keys are: num_workers, rollout_fragment_length, seed." in msg


def test_error_is_also_a_type_error():
    with pytest.raises(TypeError, match="Unknown RolloutWorker argument key 'num_env'"):
        check_keys({"num_env": 3}, ["num_envs"], "RolloutWorker argument")
    assert issubclass(UnknownKeyError, ValueError)


def test_no_suggestion_when_nothing_is_close_and_several_unknown():
    with pytest.raises(ValueError) as info:
        check_keys({"zzz": 1, "qqq": 2}, ["num_workers"], "config")
    msg = str(info.value)
    assert "Did you mean" not in msg
    assert "(also unknown: ['qqq'])" in msg


def test_closest_key():
    assert closest_key("seeed", ["seed", "env"]) == "seed"
    assert closest_key("xyz", ["seed"]) is None
