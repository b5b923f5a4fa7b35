"""Offline I/O: input readers (where a rollout worker's experiences come from), output
writers, IOContext, and the `input` config key (`tfrl.offline.input_creators`)."""

from tfrl.offline.input_creators import register_input
from tfrl.offline.input_reader import InputReader
from tfrl.offline.io_context import IOContext
from tfrl.offline.output_writer import NoopOutput, OutputWriter

__all__ = ["IOContext", "InputReader", "NoopOutput", "OutputWriter", "register_input"]
