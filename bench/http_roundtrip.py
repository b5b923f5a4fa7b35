"""HTTP round trips per second of `PolicyClient.get_action` in remote inference mode.

A `PolicyServerInput` on 127.0.0.1 (ephemeral port) serves a `RandomPolicy`; clients
call `get_action` in a loop on one episode each (keep-alive connections). Reported:
one client (latency-bound), and 4 client threads together (the server batches the
waiting episodes into one `compute_actions` call).

    python bench/http_roundtrip.py [--seconds=2]

`bench/bench_env.py` calls `bench_http(seconds=...)`.
"""

import platform
import threading
import time

import gymnasium as gym
import numpy as np


def _round_trips(address: str, seconds: float, num_clients: int) -> float:
    from tfrl.serving.policy_client import PolicyClient

    counts = [0] * num_clients
    start = threading.Barrier(num_clients + 1)

    def run(i):
        client = PolicyClient(address, inference_mode="remote")
        eid = client.start_episode()
        obs = np.zeros(4, np.float32)
        client.get_action(eid, obs)  # warm-up: connection, first poll
        start.wait()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            client.get_action(eid, obs)
            counts[i] += 1
        client.end_episode(eid, obs)
        client.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(num_clients)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def bench_http(seconds: float = 2.0) -> dict:
    """Measures and prints `get_action` round trips/s (1 client; 4 client threads).

    Args:
        seconds: Measuring time per case.

    Returns:
        `{"1 client": rate, "4 clients": rate}` in round trips per second.
    """
    from tfrl.serving.policy_server_input import PolicyServerInput
    from tfrl.examples.policy.random_policy import RandomPolicy
    from tfrl.offline.io_context import IOContext

    policy = RandomPolicy(gym.spaces.Box(-1, 1, (4,), np.float32), gym.spaces.Discrete(2), {"seed": 0})
    # A huge fragment length: the bench measures serving, not batch building.
    ioctx = IOContext(config={"rollout_fragment_length": 10**9})
    results = {}
    with PolicyServerInput(ioctx, "127.0.0.1", 0, policy=policy) as server:
        address = f"127.0.0.1:{server.server_port}"
        for n in (1, 4):
            results[f"{n} client{'s' if n > 1 else ''}"] = rate = _round_trips(address, seconds, n)
            print(f"HTTP get_action round trips (remote inference, {n} client thread(s)): "
                  f"{rate:,.0f}/s")
    return results


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    print(f"{platform.machine()}, Python {platform.python_version()}")
    bench_http(parser.parse_args().seconds)
