"""Load and bad inputs for a `PolicyServerInput` on 127.0.0.1 (bounded in time).

Load: a server serving a `RandomPolicy` (CartPole spaces) in this process, a thread
draining its sample queue (as a learner would); N client processes (spawned) each
send M requests on one keep-alive connection: GET_ACTION on one episode, and every
`--report_every`-th request a REPORT_SAMPLES of a 200-row batch. Reported per run:
requests/s over all clients, p50/p99 latency of each command, errors (exceptions in a
client: a refused request that `PolicyClient` did not retry away), 503s answered
(connection cap) as counted by the server.

Slow senders: the same load with `--attack_clients` clients, first quiet, then while
64 connections trickle their headers (a request line, then one header byte per second)
and 4 trickle 32 MiB bodies (one byte per second); a connection the server closes is
opened again, so that 68 stay open or opening. The slow senders run in a process of
their own (as a real attacker would: in the server's process their thread would compete
for its GIL, which no remote sender can; `--attack_in_process` measures that way).
Quiet and attacked rows alternate `--attack_rounds` times (default 3), and the rows of
all rounds are pooled: REPORT_SAMPLES is every 50th request, so one round has 80 of them
and its p99 is its second-slowest. Target: no errors, the pooled p99 within 2x the
pooled quiet row. Only 127.0.0.1; bounded in count (68 sockets) and time (the load's
run).

Bad inputs: each request of `BAD_INPUTS` is sent once; its status and answer are
printed (a markdown table).

    python bench/bench_policy_server_load.py [--clients=1,4,16] [--requests=300]
        [--max_connections=8] [--timeout=120] [--attack_clients=4] [--attack_requests=1000]
        [--attack_rounds=3] [--attack_in_process]
"""

import argparse
import sys
import http.client
import json
import logging
import multiprocessing as mp
import os
import platform
import socket
import threading
import time

import gymnasium as gym
import numpy as np

# Measure this tree's tfrl, not whichever tfrl is installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

OBS_SPACE = gym.spaces.Box(-10.0, 10.0, (4,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


def _policy():
    """A RandomPolicy whose postprocessing adds `advantages` (as PPO's does)."""
    from tfrl.examples.policy.random_policy import RandomPolicy

    class PostprocessingRandomPolicy(RandomPolicy):
        def postprocess_trajectory(self, batch, other_agent_batches=None, episode=None):
            batch["advantages"] = np.asarray(batch["rewards"], np.float32)
            return batch

    return PostprocessingRandomPolicy(OBS_SPACE, ACT_SPACE)


def _report_batch(rows: int):
    from tfrl.serving.policy_server_checks import reference_batch
    from tfrl.policy.sample_batch import concat_samples
    return concat_samples([reference_batch(_policy(), multiagent=False)] * (rows // 2))


def _client(port: int, requests: int, report_every: int, out: mp.Queue) -> None:
    from tfrl.serving.policy_client import PolicyClient
    client = PolicyClient(f"127.0.0.1:{port}", inference_mode="remote", timeout=30)
    batch = _report_batch(200)
    times = {"GET_ACTION": [], "REPORT_SAMPLES": []}
    errors = []
    try:
        eid = client.start_episode()
    except Exception as e:  # noqa: BLE001 - counted
        out.put((times, [repr(e)]))
        return
    obs = np.zeros(4, np.float32)
    for i in range(requests):
        command = "REPORT_SAMPLES" if report_every and i % report_every == report_every - 1 \
            else "GET_ACTION"
        start = time.perf_counter()
        try:
            if command == "GET_ACTION":
                client.get_action(eid, obs)
            else:
                client._send({"command": "REPORT_SAMPLES", "samples": [batch], "metrics": []})
        except Exception as e:  # noqa: BLE001 - counted
            errors.append(f"{command}: {e!r}"[:200])
            continue
        times[command].append(time.perf_counter() - start)
    client.close()
    out.put((times, errors))


class SlowSenders:
    """`headers` connections trickling their headers and `bodies` trickling 32 MiB bodies
    to 127.0.0.1:`port`, one byte per connection per `interval` s; closed ones reopen."""

    def __init__(self, port: int, headers: int = 64, bodies: int = 4, interval: float = 1.0):
        self.port, self.interval = port, interval
        self.kinds = ["header"] * headers + ["body"] * bodies
        self.socks = [None] * len(self.kinds)
        self.reopened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="SlowSenders", daemon=True)

    def _open(self, kind: str):
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
        if kind == "header":
            sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        else:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n{"
                         % (32 * 2**20))
        return sock

    def _run(self) -> None:
        while not self._stop.is_set():
            for i, kind in enumerate(self.kinds):
                if self._stop.is_set():
                    break
                try:
                    if self.socks[i] is None:
                        self.socks[i] = self._open(kind)
                    else:
                        self.socks[i].sendall(b"X" if kind == "header" else b" ")
                except OSError:  # closed by the server (or refused): open it again
                    if self.socks[i] is not None:
                        self.socks[i].close()
                        self.reopened += 1
                    self.socks[i] = None
            self._stop.wait(self.interval)

    def __enter__(self) -> "SlowSenders":
        for i, kind in enumerate(self.kinds):
            self.socks[i] = self._open(kind)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)
        for sock in self.socks:
            if sock is not None:
                sock.close()


def _slow_senders_process(port: int, ready, stop) -> None:
    """Runs `SlowSenders` on `port` in this (spawned) process until `stop` is set."""
    with SlowSenders(port):
        ready.set()
        stop.wait()


class SlowSendersProcess:
    """`SlowSenders` in a process of their own (started and stopped like `SlowSenders`)."""

    def __init__(self, port: int):
        ctx = mp.get_context("spawn")
        self._ready, self._stop = ctx.Event(), ctx.Event()
        self._proc = ctx.Process(target=_slow_senders_process,
                                 args=(port, self._ready, self._stop), daemon=True)

    def __enter__(self) -> "SlowSendersProcess":
        self._proc.start()
        if not self._ready.wait(60):
            self._proc.kill()
            raise RuntimeError("The slow senders' process did not open its connections "
                               "within 60 s.")
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._proc.join(15)
        if self._proc.is_alive():
            self._proc.kill()


def run_load(num_clients: int, requests: int, report_every: int, max_connections: int,
             timeout: float, slow_senders: bool = False, attack_in_process: bool = False) -> dict:
    from tfrl.serving.policy_server_input import PolicyServerInput
    from tfrl.offline.io_context import IOContext

    server = PolicyServerInput(IOContext(), "127.0.0.1", 0, idle_timeout=0.5,
                               policy=_policy(), max_connections=max_connections)
    stop = threading.Event()

    def drain():
        while not stop.is_set():
            try:
                server.next()
            except RuntimeError:  # stopped
                return

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    attack = None
    if slow_senders:
        attack = (SlowSenders if attack_in_process else SlowSendersProcess)(server.server_port)
    if attack is not None:
        attack.__enter__()
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_client, args=(server.server_port, requests, report_every, out))
             for _ in range(num_clients)]
    start = time.perf_counter()
    for p in procs:
        p.start()
    results = []
    deadline = time.monotonic() + timeout
    while len(results) < num_clients and time.monotonic() < deadline:
        try:
            results.append(out.get(timeout=1.0))
        except Exception:  # noqa: BLE001 - queue.Empty
            pass
    wall = time.perf_counter() - start
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
    if attack is not None:
        attack.__exit__(None, None, None)
    stats = server.stats()
    stop.set()
    server.stop()
    times = {k: np.concatenate([np.asarray(r[0][k]) for r in results] or [np.zeros(0)])
             for k in ("GET_ACTION", "REPORT_SAMPLES")}
    errors = [e for r in results for e in r[1]]
    done = sum(len(t) for t in times.values())
    missing = num_clients - len(results)
    return {"clients": num_clients, "requests": num_clients * requests, "done": done,
            "wall_s": wall, "errors": len(errors) + missing * requests,
            "first_error": errors[0] if errors else ("client timed out" if missing else ""),
            "rejected_busy": stats["rejected_busy"], "queue_full": stats["rejected_queue_full"],
            "slow_closed": (stats.get("rejected_slow_header", 0)
                            + stats.get("rejected_slow_body", 0)),
            "times": times, **_percentiles(times)}


def _percentiles(times: dict) -> dict:
    return {f"{k}_p{q}_ms": (1e3 * np.percentile(v, q) if len(v) else float("nan"))
            for k, v in times.items() for q in (50, 99)}


def _pooled(rows: list) -> dict:
    """The rows of several rounds as one (their latencies pooled, counts summed)."""
    times = {k: np.concatenate([r["times"][k] for r in rows]) for k in rows[0]["times"]}
    pooled = {k: sum(r[k] for r in rows) for k in ("requests", "done", "wall_s", "errors",
                                                   "rejected_busy", "slow_closed")}
    first_errors = [r["first_error"] for r in rows if r["first_error"]]
    return {**pooled, "clients": rows[0]["clients"], "times": times,
            "first_error": first_errors[0] if first_errors else "", **_percentiles(times)}


def _bad_inputs():
    from tfrl.serving.wire_format import dumps
    from tfrl.policy.sample_batch import SampleBatch
    good = _report_batch(2)

    def with_(column, value):
        b = dict(good)
        b[column] = value
        return dumps({"command": "REPORT_SAMPLES", "samples": [SampleBatch(b)]})

    without_adv = {k: v for k, v in good.items() if k != "advantages"}
    nan_obs = np.array([np.nan, 0, 0, 0], np.float32)
    return [
        ("malformed JSON", b'{"command": "GET_ACT', {}),
        ("unknown command", dumps({"command": "FLY"}), {}),
        ("pickle bytes", b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00\x8c\x01x\x94.", {}),
        ("REPORT_SAMPLES without 'advantages'",
         dumps({"command": "REPORT_SAMPLES", "samples": [SampleBatch(without_adv)]}), {}),
        ("REPORT_SAMPLES action 7 for Discrete(2)", with_("actions", np.array([7, 0])), {}),
        ("REPORT_SAMPLES float actions", with_("actions", np.array([1.0, 0.0])), {}),
        ("REPORT_SAMPLES NaN reward", with_("rewards", np.array([np.nan, 0], np.float32)), {}),
        ("REPORT_SAMPLES NaN observation", with_("obs", np.stack([nan_obs, nan_obs])), {}),
        ("REPORT_SAMPLES extra column", with_("extra", np.zeros(2)), {}),
        ("GET_ACTION NaN observation (started episode)",
         dumps({"command": "GET_ACTION", "episode_id": "{eid}", "observation": nan_obs}), {}),
        ("GET_ACTION observation out of bounds",
         dumps({"command": "GET_ACTION", "episode_id": "{eid}",
                "observation": np.full(4, 11.0, np.float32)}), {}),
        ("LOG_RETURNS NaN reward",
         dumps({"command": "LOG_RETURNS", "episode_id": "{eid}", "reward": float("nan")}), {}),
        ("LOG_RETURNS inf reward",
         dumps({"command": "LOG_RETURNS", "episode_id": "{eid}", "reward": float("inf")}), {}),
        ("LOG_ACTION action 7",
         dumps({"command": "LOG_ACTION", "episode_id": "{eid}",
                "observation": np.zeros(4, np.float32), "action": 7}), {}),
        ("10k nested empty lists",
         b'{"command":"GET_WEIGHTS","x":[' + b"[]," * 10000 + b"[]]}", {}),
        ("Content-Length over the limit (33 MiB)", b"", {"Content-Length": str(33 * 2**20)}),
        ("wrong token (server with a token)", dumps({"command": "GET_WEIGHTS"}),
         {"Authorization": "Bearer nope", "_token": "s3cret"}),
    ]


def run_bad_inputs() -> list:
    from tfrl.serving.policy_client import PolicyClient
    from tfrl.serving.policy_server_input import PolicyServerInput
    from tfrl.offline.io_context import IOContext

    rows = []
    for name, body, headers in _bad_inputs():
        token = headers.pop("_token", None)
        with PolicyServerInput(IOContext(), "127.0.0.1", 0, idle_timeout=0.5, policy=_policy(),
                               auth_token=token) as server:
            client = PolicyClient(f"127.0.0.1:{server.server_port}", inference_mode="remote",
                                  auth_token=token)
            eid = client.start_episode()
            client.get_action(eid, np.zeros(4, np.float32))
            body = body.replace(b"{eid}", eid.encode())
            conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)
            if "Content-Length" in headers:
                conn.putrequest("POST", "/")
                for k, v in headers.items():
                    conn.putheader(k, v)
                conn.endheaders()
            else:
                conn.request("POST", "/", body, headers)
            response = conn.getresponse()
            status, answer = response.status, json.loads(response.read()).get("error")
            conn.close()
            still = client.get_action(eid, np.zeros(4, np.float32)) in (0, 1)
        rows.append((name, status, (answer or "").replace(eid, "<eid>"), still))
    return rows


def _print_attack_row(name: str, r: dict) -> None:
    print(f"| {name} | {r['clients']} | "
          f"{r['done']}/{r['requests']} | {r['done'] / r['wall_s']:.0f} | "
          f"{r['GET_ACTION_p50_ms']:.1f} / {r['GET_ACTION_p99_ms']:.1f} | "
          f"{r['REPORT_SAMPLES_p50_ms']:.1f} / {r['REPORT_SAMPLES_p99_ms']:.1f} | "
          f"{r['errors']} | {r['rejected_busy']} | {r['slow_closed']} |", flush=True)
    if r["first_error"]:
        print(f"  first error: {r['first_error']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--report_every", type=int, default=50)
    parser.add_argument("--max_connections", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--attack_clients", type=int, default=4)
    parser.add_argument("--attack_requests", type=int, default=1000,
                        help="requests per client in the slow-senders rows (long enough "
                             "for several header_timeout rounds)")
    parser.add_argument("--attack_rounds", type=int, default=3,
                        help="quiet and slow-senders rows, alternated this many times; the "
                             "last two rows pool all rounds (REPORT_SAMPLES is every 50th "
                             "request: one round's p99 of 80 is its second-slowest)")
    parser.add_argument("--attack_in_process", action="store_true",
                        help="run the slow senders as a thread of the server's process "
                             "(competing for its GIL) instead of a process of their own")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the refusals' warnings would drown the tables
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print("\n| clients | requests | req/s | GET_ACTION p50 / p99 ms | REPORT_SAMPLES (200 rows) "
          "p50 / p99 ms | errors | 503 (busy) answered |")
    print("|---|---|---|---|---|---|---|")
    for n in [int(c) for c in args.clients.split(",")]:
        r = run_load(n, args.requests, args.report_every, args.max_connections, args.timeout)
        print(f"| {n} | {r['done']}/{r['requests']} | {r['done'] / r['wall_s']:.0f} | "
              f"{r['GET_ACTION_p50_ms']:.1f} / {r['GET_ACTION_p99_ms']:.1f} | "
              f"{r['REPORT_SAMPLES_p50_ms']:.1f} / {r['REPORT_SAMPLES_p99_ms']:.1f} | "
              f"{r['errors']} | {r['rejected_busy']} |", flush=True)
        if r["first_error"]:
            print(f"  first error: {r['first_error']}")
    print("\n| slow connections open | clients | requests | req/s | GET_ACTION p50 / p99 ms | "
          "REPORT_SAMPLES p50 / p99 ms | errors | 503 (busy) | slow senders closed |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows: dict = {False: [], True: []}
    names = {False: "none (quiet)", True: "64 headers + 4 bodies"
             + (" (in the server's process)" if args.attack_in_process else "")}
    for round_ in range(args.attack_rounds):
        for slow in (False, True):
            r = run_load(args.attack_clients, args.attack_requests, args.report_every,
                         args.max_connections, args.timeout, slow_senders=slow,
                         attack_in_process=args.attack_in_process)
            rows[slow].append(r)
            _print_attack_row(f"{names[slow]}, round {round_ + 1}", r)
    if args.attack_rounds > 1:
        pooled = {slow: _pooled(rows[slow]) for slow in rows}
        for slow in (False, True):
            _print_attack_row(f"**{names[slow]}, {args.attack_rounds} rounds pooled**",
                              pooled[slow])
    else:
        pooled = {slow: rows[slow][0] for slow in rows}
    print("\np99 under slow senders / quiet p99 (target <= 2): " + ", ".join(
        f"{k} {pooled[True][f'{k}_p99_ms'] / pooled[False][f'{k}_p99_ms']:.2f}x"
        for k in ("GET_ACTION", "REPORT_SAMPLES")) + "; load average "
        f"{os.getloadavg()[0]:.1f}")
    print("\n| bad input | status | answer | served next request |")
    print("|---|---|---|---|")
    for name, status, answer, still in run_bad_inputs():
        text = answer if len(answer) <= 150 else answer[:147] + "..."
        print(f"| {name} | {status} | {text.replace('|', '/')} | {'yes' if still else 'NO'} |")


if __name__ == "__main__":
    main()
