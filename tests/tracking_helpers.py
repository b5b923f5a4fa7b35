"""Readers of what the tracking tools wrote offline: an MLflow file store and a W&B
offline run directory (its `run-<id>.wandb` transaction log)."""

import glob
import json
import os
import struct

#: The .wandb log: a 7-byte file header, then 32 KiB blocks of chunks, each with a
#: 7-byte header (CRC-32, length, type: 1 full, 2 first, 3 middle, 4 last), as in LevelDB.
WANDB_BLOCK = 32768
WANDB_CHUNK_HEADER = struct.Struct("<IHB")


def wandb_records(path):
    """The protobuf `Record`s of a `.wandb` file, in order."""
    from wandb.proto import wandb_internal_pb2

    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b":W&B", data[:7]
    pos, pending, records = 7, b"", []
    while pos + WANDB_CHUNK_HEADER.size <= len(data):
        left = WANDB_BLOCK - pos % WANDB_BLOCK
        if left < WANDB_CHUNK_HEADER.size:  # the block's zero padding
            pos += left
            continue
        _, length, kind = WANDB_CHUNK_HEADER.unpack_from(data, pos)
        if length == 0 and kind == 0:
            pos += left
            continue
        start = pos + WANDB_CHUNK_HEADER.size
        pending += data[start:start + length]
        pos = start + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def wandb_offline_run(directory):
    """`{"history": [row, ...], "config": {key: value}, "artifacts": {name: [file, ...]}}`
    of the one offline run under `directory` (its `wandb/offline-run-*`)."""
    runs = (glob.glob(os.path.join(directory, "run-*.wandb")) or glob.glob(
        os.path.join(directory, "**", "offline-run-*", "run-*.wandb"), recursive=True))
    assert len(runs) == 1, runs
    out = {"history": [], "config": {}, "artifacts": {}, "path": runs[0]}
    for record in wandb_records(runs[0]):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            out["history"].append({item.key or "/".join(item.nested_key):
                                   json.loads(item.value_json) for item in record.history.item})
        elif kind in ("config", "run"):  # wandb.init's config is in the run record
            items = record.config.update if kind == "config" else record.run.config.update
            out["config"].update({item.key or "/".join(item.nested_key):
                                  json.loads(item.value_json) for item in items})
        elif kind == "artifact":
            out["artifacts"][record.artifact.name] = sorted(
                entry.path for entry in record.artifact.manifest.contents)
    return out


def wandb_offline_runs(directory):
    """`wandb_offline_run` of every offline run under `directory`."""
    runs = glob.glob(os.path.join(directory, "**", "offline-run-*"), recursive=True)
    return [wandb_offline_run(run) for run in sorted(runs)]


def checkpoint_files(checkpoint_dir):
    """The relative paths of the files under a checkpoint directory."""
    return sorted(os.path.relpath(os.path.join(root, name), checkpoint_dir)
                  for root, _, names in os.walk(checkpoint_dir) for name in names)
