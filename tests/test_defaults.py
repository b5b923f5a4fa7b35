"""One source for each default: tfrl/ does not spell a config key's default a second time.

The defaults of config keys live in the config classes (`PolicyConfig`, `AlgorithmConfig`
and every registered algorithm's config, with their dict-valued defaults such as
`multiagent` or `replay_buffer_config`) and in `MODEL_DEFAULTS`. Code that reads such a
key reads the resolved config (`config[key]`) or the one source
(`model_setting(model_config, key)`, `policy_default(key)`, a module constant the config
class also uses), never `config.get(key, <a literal>)`, which would drift from the
config class the day its default changes.

The scan: every `<x>.get("<key>", <literal>)` call in tfrl/ (an AST walk; a literal is
anything `ast.literal_eval` takes, None excepted: `.get(key, None)` is `.get(key)`)
whose key is a known config key fails, unless `ALLOWED` names it with the reason.
"""

import ast
import dataclasses
import pathlib
from typing import Dict, List, Tuple

import pytest

from tfrl.algorithms.algorithm_config import FIELD_KEYS, AlgorithmConfig, OnPolicyConfig
from tfrl.algorithms.off_policy_config import OffPolicyConfig
from tfrl.algorithms.registry import all_config_classes
from tfrl.models.model_defaults import MODEL_DEFAULTS, model_setting
from tfrl.policy.policy_config import PolicyConfig, policy_default

TFRL = pathlib.Path(__file__).resolve().parent.parent / "tfrl"

# (file under tfrl/, key) -> why a literal default is right there. Each entry must still
# match a call (a stale entry fails `test_every_allowed_default_is_still_there`).
ALLOWED: Dict[Tuple[str, str], str] = {
    ("cli/commands.py", "env_config"):
        "`exp.config` is the experiment file's own dict before it is resolved; `{}` means "
        "'none given' (the algorithm's resolved config gets its default when built).",
    ("serving/external_env_runner.py", "rollout_fragment_length"):
        "the policy client/server's config may be partial; 200 is also the fallback for "
        "'auto' and bad values; tfrl.serving sits below tfrl.algorithms (AlgorithmConfig).",
    ("evaluation/rollout_worker/rollout_worker.py", "gamma"):
        "a RolloutWorker may be built on its own from a partial policy_config (as in "
        "RLlib); AlgorithmConfig lives in tfrl.algorithms, above tfrl.evaluation.",
    ("evaluation/rollout_worker/args.py", "framework"):
        "a RolloutWorker may be built on its own from a partial policy_config (as in "
        "RLlib); AlgorithmConfig lives in tfrl.algorithms, above tfrl.evaluation.",
}


def _dict_keys(value) -> List[str]:
    return [k for k in value if isinstance(k, str)] if isinstance(value, dict) else []


def config_keys() -> Dict[str, str]:
    """Known config key -> where its default is defined."""
    keys: Dict[str, str] = {}
    classes = [PolicyConfig, AlgorithmConfig, OnPolicyConfig, OffPolicyConfig,
               *all_config_classes()]
    for cls in classes:
        defaults = cls()
        for field in dataclasses.fields(cls):
            keys.setdefault(FIELD_KEYS.get(field.name, field.name), cls.__name__)
            for sub in _dict_keys(getattr(defaults, field.name)):  # multiagent, replay_buffer_config...
                keys.setdefault(sub, f"{cls.__name__}.{field.name}")
    for key in MODEL_DEFAULTS:
        keys.setdefault(key, "MODEL_DEFAULTS")
    return keys


def _is_literal(node: ast.expr) -> bool:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return False
    return value is not None


def literal_defaults(source: str, keys: Dict[str, str]) -> List[Tuple[int, str, str]]:
    """(line, key, call) of each `.get("<key>", <literal>)` in `source` with a known key."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and len(node.args) == 2 and not node.keywords
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str) and node.args[0].value in keys
                and _is_literal(node.args[1])):
            found.append((node.lineno, node.args[0].value, ast.unparse(node)))
    return found


@pytest.fixture(scope="module")
def scan() -> List[Tuple[str, int, str, str]]:
    keys = config_keys()
    return [(path.relative_to(TFRL).as_posix(), line, key, call)
            for path in sorted(TFRL.rglob("*.py"))
            for line, key, call in literal_defaults(path.read_text(), keys)]


def test_no_config_default_is_spelled_twice(scan):
    keys = config_keys()
    offending = [f"tfrl/{path}:{line}: {call} (default defined in {keys[key]})"
                 for path, line, key, call in scan if (path, key) not in ALLOWED]
    assert not offending, (
        "These calls spell a config key's default a second time; read the resolved config "
        "(config[key]), model_setting(model_config, key), policy_default(key) or the "
        "constant the config class uses, or add the call to ALLOWED with the reason:\n"
        + "\n".join(offending))


def test_every_allowed_default_is_still_there(scan):
    present = {(path, key) for path, _, key, _ in scan}
    assert not set(ALLOWED) - present, f"stale ALLOWED entries: {sorted(set(ALLOWED) - present)}"


def test_the_scan_finds_a_literal_default_and_passes_the_one_source():
    keys = {"max_seq_len": "MODEL_DEFAULTS", "lr": "PolicyConfig"}
    source = ("a = model.get('max_seq_len', 20)\n"
              "b = config.get('lr', -1e-3)\n"
              "c = config.get('lr', [1, 2])\n"
              "d = model_setting(model, 'max_seq_len')\n"
              "e = config.get('lr', DEFAULT_LR)\n"
              "f = config.get('lr', None)\n"
              "g = config.get('other_key', 3)\n")
    assert [(line, key) for line, key, _ in literal_defaults(source, keys)] == [
        (1, "max_seq_len"), (2, "lr"), (3, "lr")]


def test_config_keys_cover_policy_algorithm_model_and_subdict_keys():
    keys = config_keys()
    assert keys["jit_compile"] == "PolicyConfig"
    assert keys["lambda"] == "OnPolicyConfig"  # field lambda_, key "lambda"
    assert keys["count_steps_by"] == "AlgorithmConfig.multiagent"
    assert keys["max_seq_len"] == "MODEL_DEFAULTS"
    assert keys["opt_type"] == "ImpalaConfig"


def test_model_setting_reads_the_config_then_model_defaults():
    assert model_setting({"max_seq_len": 7}, "max_seq_len") == 7
    assert model_setting({}, "max_seq_len") == MODEL_DEFAULTS["max_seq_len"] == 20
    hiddens = model_setting({}, "post_fcnet_hiddens")
    hiddens.append(4)  # a copy: MODEL_DEFAULTS stays as it was
    assert MODEL_DEFAULTS["post_fcnet_hiddens"] == []
    with pytest.raises(KeyError, match="'max_len' is not a model config key"):
        model_setting({}, "max_len")


def test_policy_default_is_policy_configs_default():
    assert policy_default("num_gpus") == PolicyConfig().num_gpus == 0
    assert policy_default("learner_workers") == 1
    assert policy_default("model") == {}
    with pytest.raises(KeyError, match="'gamma' is not a PolicyConfig key"):
        policy_default("gamma")
