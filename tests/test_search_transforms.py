"""A sweep's searched variables and the config keys derived from them (`tune.variables`,
`tune.derived`; tfrl/utils/search_transforms.py and its checks in tfrl/cli/sweep.py):
the transforms by hand numbers, a trial config's derivation, and bad specs refused with
what was received and how to fix it. No Ray, no TensorFlow."""

import pytest

from tfrl.cli.experiment import CliError, Experiment
from tfrl.cli.sweep import check_sweep, parse_sweep, sample_configs, trial_values
from tfrl.utils.search_transforms import (DERIVED_KEY, derive_config, evaluate,
                                          parse_transform)

VARIABLES = ["n_steps_pow", "batch_size_pow", "one_minus_gamma", "net_arch"]
NETS = {"tiny": [64], "small": [64, 64], "medium": [256, 256]}
ROLLOUT = {"product": [{"pow2": "n_steps_pow"}, 8]}


@pytest.mark.parametrize("spec, expected", [
    ("n_steps_pow", 5),
    (8, 8),
    ({"pow2": "n_steps_pow"}, 32),
    (ROLLOUT, 256),
    ({"one_minus": "one_minus_gamma"}, 0.998),
    # the Zoo's minibatch within the rollout: 2**10 = 1024 > 32 * 8 = 256
    ({"min": [{"pow2": "batch_size_pow"}, ROLLOUT]}, 256),
    ({"min": [{"pow2": 3}, ROLLOUT]}, 8),
    ({"lookup": "net_arch", "table": NETS}, [256, 256]),
])
def test_transforms_by_hand(spec, expected):
    values = {"n_steps_pow": 5, "batch_size_pow": 10, "one_minus_gamma": 0.002,
              "net_arch": "medium"}
    assert evaluate(parse_transform("key", spec, VARIABLES), values) == pytest.approx(expected)


def test_a_trial_config_is_derived_and_its_variables_removed():
    config = {"lr": 0.1, "model": {"fcnet_activation": "relu"}, "n_steps_pow": 6,
              "net_arch": "tiny", DERIVED_KEY: {
                  "variables": ["n_steps_pow", "net_arch"],
                  "derived": {"train_batch_size": ROLLOUT,
                              "model.fcnet_hiddens": {"lookup": "net_arch", "table": NETS}}}}
    assert derive_config(config) == {
        "lr": 0.1, "train_batch_size": 512,
        "model": {"fcnet_activation": "relu", "fcnet_hiddens": [64]}}
    assert config["model"] == {"fcnet_activation": "relu"}  # not changed in place
    assert derive_config({"lr": 0.1}) == {"lr": 0.1}


@pytest.mark.parametrize("spec, message", [
    ("n_step_pow", "tune.derived.key uses 'n_step_pow', which is not a declared variable "
                   "(declared in tune.variables: n_steps_pow, batch_size_pow, "
                   "one_minus_gamma, net_arch); declare it there or fix the name."),
    ({"pow3": "n_steps_pow"}, "tune.derived.key is {'pow3': 'n_steps_pow'}; expected one "
                              "transform (pow2, one_minus, product, min, lookup) per mapping"),
    ({"pow2": "n_steps_pow", "one_minus": "one_minus_gamma"}, "expected one transform"),
    ({"product": [8]}, "tune.derived.key: product takes a list of two or more values: their "
                       "product; received [8]. Write e.g. {product: [{pow2: n_steps_pow}, 8]}."),
    ({"lookup": "net_arch", "table": {"tiny": [64]}},
     "tune.derived.key: lookup's table has no entry for 'small', one of 'net_arch''s choices "
     "['tiny', 'small', 'medium']; add it to the table."),
    ({"lookup": "net_arch"}, "expected one transform"),
    ("2 ** n_steps_pow * 8", "not a declared variable"),  # no expressions evaluated
    ([1, 2], "tune.derived.key is [1, 2]; expected a variable's name, a number, or one of"),
    (True, "tune.derived.key is True; expected"),
])
def test_bad_transforms_are_refused_with_the_fix(spec, message):
    with pytest.raises(ValueError) as info:
        parse_transform("key", spec, VARIABLES,
                        choices={"net_arch": ["tiny", "small", "medium"]})
    assert message in str(info.value)


def test_pow2_of_a_float_is_refused():
    with pytest.raises(ValueError, match=r"pow2 takes an integer; received 5.5 \(draw the "
                                         r"variable with randint or randint_inclusive\)"):
        evaluate(parse_transform("k", {"pow2": "n_steps_pow"}, VARIABLES), {"n_steps_pow": 5.5})


ZOOISH = {"variables": {"n_steps_pow": {"randint_inclusive": [5, 6]},
                        "net_arch": {"choice": ["tiny", "medium"]}},
          "derived": {"train_batch_size": ROLLOUT,
                      "model.fcnet_hiddens": {"lookup": "net_arch", "table": NETS}},
          "space": {"lr": {"loguniform": [1e-4, 1e-3]}}, "num_samples": 12, "seed": 0}


def test_sampled_configs_hold_the_derived_keys():
    """`--dry_run`'s numpy draws: randint_inclusive reaches its high, the derived keys are
    set, the variables are not config keys; a trial's values show both."""
    base = {"train_batch_size": 64, "model": {"fcnet_activation": "tanh"}}
    sweep = parse_sweep(ZOOISH)
    configs = sample_configs(sweep, base)
    assert {c["train_batch_size"] for c in configs} == {256, 512}
    assert {tuple(c["model"]["fcnet_hiddens"]) for c in configs} == {(64,), (256, 256)}
    assert all(set(c) == {"train_batch_size", "model", "lr"} for c in configs)
    assert all(c["model"]["fcnet_activation"] == "tanh" for c in configs)
    trial = {**base, "n_steps_pow": 6, "net_arch": "tiny", "lr": 3e-4,
             DERIVED_KEY: sweep.derivation()}
    assert trial_values(sweep, trial) == {
        "n_steps_pow": 6, "net_arch": "tiny", "train_batch_size": 512,
        "model.fcnet_hiddens": [64], "lr": 3e-4}


@pytest.mark.parametrize("change, message", [
    ({"derived": {}}, "tune.variables needs tune.derived (e.g. variables: {n_steps_pow: "
                      "{randint_inclusive: [5, 12]}} with derived: {train_batch_size: "
                      "{product: [{pow2: n_steps_pow}, 8]}}); or put config keys to search "
                      "directly in tune.space."),
    ({"variables": {**ZOOISH["variables"], "n_epochs": {"choice": [1, 5]}}},
     "tune.variables.n_epochs is used by no key of tune.derived; use it there (e.g. lr: "
     "learning_rate) or remove it."),
    ({"variables": {"n.pow": {"randint": [1, 3]}}}, "tune.variables: the name 'n.pow' is "
                                                    "not an identifier"),
    ({"variables": {**ZOOISH["variables"], "x": {"grid_search": [1, 2]}}},
     "tune.variables.x: a variable is drawn, not a grid; use choice"),
    ({"variables": {**ZOOISH["variables"], "x": {"randint_inclusive": [1.5, 3]}}},
     "tune.variables.x: randint_inclusive takes [low, high] integers (both included, "
     "Optuna's suggest_int); received [1.5, 3]."),
    ({"space": {"train_batch_size": {"choice": [64]}}},
     "tune.derived.train_batch_size is also searched in tune.space; keep one."),
    ({"derived": {**ZOOISH["derived"], "gamma": "one_minus_gama"}},
     "tune.derived.gamma uses 'one_minus_gama', which is not a declared variable"),
])
def test_variables_and_derived_mistakes_are_errors(change, message):
    with pytest.raises(CliError) as info:
        parse_sweep({**ZOOISH, **change})
    assert message in str(info.value)


def test_a_variable_named_like_a_config_key_is_refused():
    """The trial removes the variables from its config: a variable named `gamma` would
    take PPO's `gamma` with it."""
    doc = {"variables": {"gamma": {"uniform": [0.9, 0.99]}}, "derived": {"lambda": "gamma"}}
    exp = Experiment(algo="PPO", env="CartPole-v1", config={"train_batch_size": 64})
    with pytest.raises(CliError, match="tune.variables.gamma is a config key of PPO; a "
                                       "variable is not a config key"):
        check_sweep(exp, parse_sweep(doc))
