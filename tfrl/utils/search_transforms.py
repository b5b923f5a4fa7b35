"""Config keys derived from searched variables: a sweep's `variables:` and `derived:`.

A sweep may search variables that are not config keys (RL Zoo's `n_steps_pow`,
`one_minus_gamma`, ...) and set config keys from them through a small fixed set of
transforms (nothing is evaluated as code):

    NAME                               the variable's value (a string names a variable)
    3, 0.5                             a number
    {pow2: X}                          2 ** X (X an integer)
    {one_minus: X}                     1 - X
    {product: [X, Y, ...]}             X * Y * ...
    {min: [X, Y, ...]}                 the smallest
    {lookup: NAME, table: {a: v, ...}} the table's value at the variable's value

where X, Y are transforms again, e.g. `{product: [{pow2: n_steps_pow}, 8]}`.

`parse_transform` checks one (a `ValueError` says what was received, what is expected
and how to fix it); `evaluate` computes it; `derive_config` turns a trial's config (the
variables' values at top-level keys, the derivation under `DERIVED_KEY`) into the
algorithm's config, which is what a trial of `tfrl tune` does before building its
algorithm. No Ray, no TensorFlow.

Example:
    >>> tree = parse_transform("train_batch_size", {"product": [{"pow2": "p"}, 8]}, ["p"])
    >>> evaluate(tree, {"p": 5})
    256
"""

import copy
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

#: The config key of a trial's config holding its derivation: `{"variables": [names],
#: "derived": {config key: transform spec}}`.
DERIVED_KEY = "_tfrl_derived"

#: Transform -> what it takes.
TRANSFORMS = {
    "pow2": "one value (an integer): 2 ** value",
    "one_minus": "one value: 1 - value",
    "product": "a list of two or more values: their product",
    "min": "a list of two or more values: the smallest",
    "lookup": "a variable's name, with table: {its value: the config value, ...}",
}
_FORMS = ("a variable's name, a number, or one of {pow2: X}, {one_minus: X}, "
          "{product: [X, Y]}, {min: [X, Y]}, {lookup: NAME, table: {...}}")

Tree = Tuple[Any, ...]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_transform(key: str, spec: Any, variables: Iterable[str],
                    choices: Optional[Mapping[str, Sequence[Any]]] = None,
                    where: str = "tune.derived") -> Tree:
    """Checks the transform `spec` of the config key `key`; returns its tree.

    Args:
        key: The derived config key (for messages).
        spec: The transform, as written in the sweep file.
        variables: The declared variables' names.
        choices: Variable -> its choices, for variables drawn by `choice` (a `lookup`
            table must cover every one).
        where: The section's name in messages.

    Raises:
        ValueError: For anything else than the forms above, an undeclared variable, or a
            lookup table missing one of the variable's choices.
    """
    names = list(variables)
    at = f"{where}.{key}"
    if isinstance(spec, str):
        if spec not in names:
            declared = ", ".join(names) or "none"
            raise ValueError(f"{at} uses {spec!r}, which is not a declared variable "
                             f"(declared in tune.variables: {declared}); declare it there "
                             "or fix the name.")
        return ("var", spec)
    if _number(spec):
        return ("const", spec)
    if not isinstance(spec, dict) or not spec:
        raise ValueError(f"{at} is {spec!r}; expected {_FORMS}.")
    ops = [op for op in spec if op in TRANSFORMS]
    if len(ops) != 1 or (ops[0] == "lookup" and set(spec) != {"lookup", "table"}) or (
            ops[0] != "lookup" and len(spec) != 1):
        raise ValueError(f"{at} is {spec!r}; expected one transform ({', '.join(TRANSFORMS)}) "
                         f"per mapping, i.e. {_FORMS}.")
    op = ops[0]
    arg = spec[op]
    if op in ("pow2", "one_minus"):
        return (op, parse_transform(key, arg, names, choices, where))
    if op in ("product", "min"):
        if not isinstance(arg, list) or len(arg) < 2:
            raise ValueError(f"{at}: {op} takes {TRANSFORMS[op]}; received {arg!r}. "
                             f"Write e.g. {{{op}: [{{pow2: n_steps_pow}}, 8]}}.")
        return (op, [parse_transform(key, a, names, choices, where) for a in arg])
    # lookup
    table = spec["table"]
    if not isinstance(arg, str) or arg not in names:
        raise ValueError(f"{at}: lookup takes {TRANSFORMS['lookup']}; received "
                         f"lookup: {arg!r} (declared variables: {', '.join(names) or 'none'}).")
    if not isinstance(table, dict) or not table:
        raise ValueError(f"{at}: lookup's table maps each value of {arg!r} to a config "
                         f"value, e.g. table: {{tiny: [64], small: [64, 64]}}; received "
                         f"{table!r}.")
    missing = [c for c in (choices or {}).get(arg, ()) if c not in table]
    if missing:
        raise ValueError(f"{at}: lookup's table has no entry for {missing[0]!r}, one of "
                         f"{arg!r}'s choices {list(choices[arg])}; add it to the table.")
    return ("lookup", arg, copy.deepcopy(table))


def evaluate(tree: Tree, values: Mapping[str, Any]) -> Any:
    """The value of a parsed transform for the variables' `values`.

    Raises:
        ValueError: If pow2 gets a non-integer, or a lookup a value not in its table.
    """
    op = tree[0]
    if op == "var":
        return values[tree[1]]
    if op == "const":
        return tree[1]
    if op == "pow2":
        exponent = evaluate(tree[1], values)
        if not isinstance(exponent, int) or isinstance(exponent, bool):
            raise ValueError(f"pow2 takes an integer; received {exponent!r} (draw the "
                             "variable with randint or randint_inclusive).")
        return 2 ** exponent
    if op == "one_minus":
        return 1 - evaluate(tree[1], values)
    if op == "product":
        result = 1
        for arg in tree[1]:
            result = result * evaluate(arg, values)
        return result
    if op == "min":
        return min(evaluate(arg, values) for arg in tree[1])
    value = values[tree[1]]  # lookup
    if value not in tree[2]:
        raise ValueError(f"lookup of {tree[1]!r}: its value {value!r} is not in the table "
                         f"({list(tree[2])}).")
    return copy.deepcopy(tree[2][value])


def _set_dotted(config: Dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = config
    for part in parts[:-1]:
        child = node.get(part)
        node[part] = child = dict(child) if isinstance(child, dict) else {}
        node = child
    node[parts[-1]] = value


def derive_config(config: Mapping[str, Any]) -> Dict[str, Any]:
    """A trial's config with its derivation applied: the derived keys set (dotted keys
    into nested dicts), the variables and `DERIVED_KEY` removed. A config without
    `DERIVED_KEY` comes back as a dict, unchanged.

    Example:
        >>> derive_config({"lr": 0.1, "p": 3, DERIVED_KEY: {
        ...     "variables": ["p"], "derived": {"train_batch_size": {"pow2": "p"}}}})
        {'lr': 0.1, 'train_batch_size': 8}
    """
    config = dict(config)
    spec = config.pop(DERIVED_KEY, None)
    if spec is None:
        return config
    names: List[str] = list(spec["variables"])
    values = {name: config.pop(name) for name in names}
    for key, transform in spec["derived"].items():
        _set_dotted(config, key, evaluate(parse_transform(key, transform, names), values))
    return config
