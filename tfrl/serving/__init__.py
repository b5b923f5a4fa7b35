"""Serving: the HTTP policy server (`PolicyServerInput`), its client (`PolicyClient`), the
wire format they speak, and the loop that runs external episodes against policies.

It sits above `tfrl.evaluation` (the server can hand its samples to a RolloutWorker) and
below `tfrl.backends`. RLlib's paths `tfrl.env.policy_server_input` and
`tfrl.env.policy_client` re-export the two classes. Names are imported lazily.
"""

from tfrl.utils.lazy_exports import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "tfrl.serving.policy_client": ["PolicyClient"],
    "tfrl.serving.policy_server_input": ["PolicyServerInput"],
})
