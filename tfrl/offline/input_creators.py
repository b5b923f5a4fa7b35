"""From the `input` config key to a rollout worker's `input_creator`.

RLlib's `config["input"]` (`AlgorithmConfig.offline_data(input_=...)`) says where a
worker's experiences come from. tfrl accepts:

- `"sampler"` (the default): the worker samples its own envs
  (`ioctx.default_sampler_input()`);
- a callable `fn(ioctx: IOContext) -> InputReader`, e.g.
  `lambda ioctx: PolicyServerInput(ioctx, "localhost", 9900)`;
- a name given to `register_input(name, fn)`;
- JSON experience files (`tfrl.offline.json_reader.JsonReader`): a file, a directory, a
  glob pattern, or a list of them; TFRecord shards (`*.tfrecord`, see
  `tfrl.offline.tfrecord`) are read by `TFRecordReader`;
- a dict mixing sources with probabilities, e.g. `{"sampler": 0.4, "/data/expert": 0.6}`
  (`tfrl.offline.mixed_input.MixedInput`).

File inputs are shuffled through a buffer of `config["shuffle_buffer_size"]` batches
(`ShuffledInput`; 0: file order). RLlib's `"dataset"` and `"d4rl..."` inputs are not
available; they raise a `ValueError` that says what is accepted.

Example:
    >>> from tfrl.offline.input_reader import InputReader
    >>> class Empty(InputReader):
    ...     def next(self):
    ...         return None
    >>> register_input("empty_example", lambda ioctx: Empty())
    >>> creator = input_creator_from_config("empty_example")
    >>> type(creator(IOContext())).__name__
    'Empty'
    >>> input_creator_from_config(3)
    Traceback (most recent call last):
    ...
    ValueError: Unsupported `input` config value: 3 (int). ...
"""

import difflib
from typing import Any, Callable, Dict

from tfrl.offline.input_reader import InputReader
from tfrl.offline.io_context import IOContext
from tfrl.offline.json_reader import JsonReader, resolve_files
from tfrl.offline.mixed_input import MixedInput, ShuffledInput, check_mixed_input

__all__ = ["register_input", "registry_contains_input", "registry_get_input",
           "input_creator_from_config", "check_input_config"]

InputCreator = Callable[[IOContext], Any]

# `input`'s default: sample the worker's envs (AlgorithmConfig reads it here).
DEFAULT_INPUT = "sampler"

# name -> creator, for the whole process (like RLlib's tune registry).
_INPUT_CREATORS: Dict[str, InputCreator] = {}

_ACCEPTED = ("Accepted: \"sampler\" (sample the worker's envs), a callable "
             "`fn(ioctx: IOContext) -> InputReader` (e.g. `lambda ioctx: PolicyServerInput(ioctx, "
             "'localhost', 9900)`), a name registered with "
             "tfrl.offline.input_creators.register_input, experience files (a path, directory, "
             "glob or list of them), or a dict {source: probability}")


def register_input(name: str, input_creator: InputCreator) -> None:
    """Registers `input_creator` (`IOContext -> InputReader`) under `name`.

    Raises:
        TypeError: If `name` is not a str or `input_creator` is not callable.
        ValueError: If `name` is "sampler" (reserved for the default input).
    """
    if not isinstance(name, str):
        raise TypeError(f"register_input needs a str name; received {type(name).__name__}: "
                        f"{name!r}.")
    if name == "sampler":
        raise ValueError("register_input: 'sampler' is the default input and cannot be "
                         "registered; pick another name.")
    if not callable(input_creator):
        raise TypeError(f"register_input({name!r}, ...) needs a callable taking an IOContext; "
                        f"received {type(input_creator).__name__}: {input_creator!r}.")
    _INPUT_CREATORS[name] = input_creator


def registry_contains_input(name: str) -> bool:
    """Whether `name` was given to `register_input`."""
    return name in _INPUT_CREATORS


def registry_get_input(name: str) -> InputCreator:
    """The creator registered under `name` (KeyError if there is none)."""
    return _INPUT_CREATORS[name]


def check_input_config(value: Any) -> None:
    """Raises a `ValueError` unless `value` is an accepted `input` config value.

    Registered names are looked up when the worker is built (so a name registered after
    the config was made still works); here any other str must name existing files (a
    ValueError names the pattern, and the closest registered name if there is one); a
    list must name files; a dict must map sources to probabilities summing to 1.
    """
    if _is_sampler(value) or callable(value):
        return
    if isinstance(value, str):
        if registry_contains_input(value):
            return
        try:
            resolve_files(value, who="`input`")
        except ValueError as e:
            close = difflib.get_close_matches(value, ["sampler", *_INPUT_CREATORS], n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"Unsupported `input` config value: {value!r} (str).{hint} {e} "
                             f"{_ACCEPTED}.") from None
        return
    if isinstance(value, (list, tuple)) and value:
        resolve_files(list(value), who="`input`")
        return
    if isinstance(value, dict):
        check_mixed_input(value)
        for source in value:
            if not (_is_sampler(source) or callable(source)):
                check_input_config(source)
        return
    raise ValueError(f"Unsupported `input` config value: {value!r} ({type(value).__name__}). "
                     f"{_ACCEPTED}.")


def _default_sampler_input(ioctx: IOContext) -> Any:
    return ioctx.default_sampler_input()


def input_creator_from_config(value: Any) -> InputCreator:
    """The worker's `input_creator` for a config `input` value.

    The returned function checks what a user creator returns: a TypeError names the
    object when it is not an InputReader (an object with a `next()` method).

    Raises:
        ValueError: If `value` is not accepted (see the module docstring).
    """
    check_input_config(value)
    if _is_sampler(value):
        return _default_sampler_input
    if isinstance(value, str) and registry_contains_input(value):
        return checked_input_creator(registry_get_input(value))
    if callable(value):
        return checked_input_creator(value)
    if isinstance(value, dict):
        return _MixedCreator(dict(value))
    return _FileCreator(value)


class _FileCreator:
    """`IOContext -> JsonReader` (or TFRecordReader) over files, shuffled as configured."""

    def __init__(self, inputs: Any):
        self.inputs = inputs

    def __call__(self, ioctx: IOContext) -> InputReader:
        if is_tfrecord_input(self.inputs):
            # deferred: TensorFlow is loaded only when TFRecord files are read
            from tfrl.offline.tfrecord import TFRecordReader
            return TFRecordReader(self.inputs, ioctx)
        reader: InputReader = JsonReader(self.inputs, ioctx)
        n = int(ioctx.config.get("shuffle_buffer_size") or 0)
        if n > 1:
            seed = ioctx.config.get("seed")
            reader = ShuffledInput(reader, n, seed=None if seed is None
                                   else int(seed) + ioctx.worker_index)
        return reader


class _MixedCreator:
    """`IOContext -> MixedInput`."""

    def __init__(self, dist: Dict[Any, float]):
        self.dist = dist

    def __call__(self, ioctx: IOContext) -> InputReader:
        dist = {(_FileCreator(k) if not (_is_sampler(k) or callable(k)) else k): p
                for k, p in self.dist.items()}
        return MixedInput(dist, ioctx)


class _CheckedInputCreator:
    """An input creator whose result is checked to be an InputReader."""

    def __init__(self, creator: InputCreator):
        self.creator = creator

    def __call__(self, ioctx: IOContext) -> Any:
        reader = self.creator(ioctx)
        if reader is None and ioctx.default_sampler_input() is None:
            return None  # e.g. the default creator of a worker without an env
        if not (isinstance(reader, InputReader) or callable(getattr(reader, "next", None))):
            raise TypeError(
                f"The `input` creator {_name(self.creator)} returned {type(reader).__name__}: "
                f"{reader!r:.200}. It must return an InputReader (an object with a next() "
                "method returning a SampleBatch), e.g. PolicyServerInput(ioctx, address, port).")
        return reader


def checked_input_creator(creator: InputCreator) -> InputCreator:
    """Wraps `creator` so that a result other than an InputReader raises a TypeError."""
    if isinstance(creator, _CheckedInputCreator) or creator is _default_sampler_input:
        return creator
    return _CheckedInputCreator(creator)


def is_tfrecord_input(inputs: Any) -> bool:
    """Whether file `inputs` name TFRecord shards (`*.tfrecord`, or a directory of them)."""
    files = resolve_files(inputs, who="`input`")
    return all(f.endswith(".tfrecord") for f in files)


def _is_sampler(value: Any) -> bool:
    return isinstance(value, str) and value == DEFAULT_INPUT


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
