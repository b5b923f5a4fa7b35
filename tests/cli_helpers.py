"""Running `tfrl ...` in-process from tests: stdout captured, absl flags reset after."""

import contextlib
import io
import os

from absl import flags

from tfrl.cli.main import main

TUNED_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "tfrl", "tuned")


def tuned(name: str) -> str:
    """The path of `tfrl/tuned/<name>`."""
    return os.path.join(TUNED_DIR, name)


def run_tfrl(*args: str) -> str:
    """Runs `tfrl <args>`, asserts exit status 0 and returns what it printed.

    The absl flags are unparsed afterwards (also on failure), so that the next call
    parses its own.
    """
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            status = main(["tfrl", *args])
    finally:
        flags.FLAGS.unparse_flags()
    assert status == 0, (status, out.getvalue())
    return out.getvalue()
