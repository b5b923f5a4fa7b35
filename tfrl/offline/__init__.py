"""Offline I/O: input readers (where a rollout worker's experiences come from) and IOContext."""
