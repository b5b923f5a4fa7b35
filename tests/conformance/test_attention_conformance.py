"""The attention variant (`model: use_attention`, GTrXL) of the recurrent conformance
checks: a trained PPO, IMPALA or APPO policy's state (the memory) round-trips bit for
bit, a restored policy acts and learns alike, and its SavedModel (memory in, memory out)
acts like the live policy step by step (PPO: over 1,000 steps), past the memory's
length many times."""

import pytest

from conformance_helpers import RECURRENT_MODEL, assert_state_round_trips_and_export_follows
from conformance_helpers import without_graph_optimizer  # noqa: F401 (autouse)

#: A tiny GTrXL (memory 3 < max_seq_len 4: training sequences reach past the memory).
ATTENTION_MODEL = {"fcnet_hiddens": [16], "use_attention": True,
                   "max_seq_len": RECURRENT_MODEL["max_seq_len"],
                   "attention_num_transformer_units": 1, "attention_dim": 8,
                   "attention_num_heads": 2, "attention_head_dim": 4,
                   "attention_memory_inference": 3, "attention_memory_training": 3,
                   "attention_position_wise_mlp_dim": 8}


@pytest.mark.parametrize("algo,space,steps", [
    ("PPO", "discrete", 1000),
    # IMPALA and APPO learn on the memory's sequences through V-trace per sequence. The
    # export (TFPolicy's, the same for every algorithm) is followed for fewer steps,
    # still past the memory's length several times; APPO (steps 0) skips it: its case
    # with the export cost ~33 s (a target network per policy).
    ("IMPALA", "discrete", 20),
    ("APPO", "box", 0),
])
def test_attention_state_round_trips_and_the_export_follows(algo, space, steps, tmp_path):
    # ~20-25 s a case on a loaded 2-core VM, most of it building and tracing 3 policies.
    assert_state_round_trips_and_export_follows(algo, space, tmp_path, model=ATTENTION_MODEL,
                                                export_rows=2, export_steps=steps,
                                                export=steps > 0)
