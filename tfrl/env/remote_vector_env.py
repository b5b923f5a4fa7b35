"""RemoteVectorEnv: sub-environments in their own processes (or Ray actors), batched as they answer.

`convert_to_base_env(..., remote_envs=True)` inserts it (config `remote_worker_envs`);
users rarely build one themselves. Each sub-env steps in parallel with the others and
with the sampler's policy inference; `poll()` returns whichever sub-envs have answered:

    env = RemoteVectorEnv(make_env, num_envs=4, multiagent=False,
                          remote_env_batch_wait_ms=10)
    obs, rewards, terminateds, truncateds, infos, _ = env.poll()  # reset obs, rewards None
    env.send_actions({env_id: {"agent0": policy(o["agent0"])} for env_id, o in obs.items()})
    ...
    env.stop()

With `backend="process"` (the default) every sub-env runs in an OS process started with
"spawn", so `make_env` must be picklable by cloudpickle (module-level functions,
partials and most lambdas are; closures over locks, files or sockets are not) and a
script must guard its entry point with `if __name__ == "__main__":`. With
`backend="ray"` every sub-env is a Ray actor (`pip install 'tfrl[ray]'`).
"""

import logging
import math
import numbers
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from tfrl.env.base_env_interface import ASYNC_RESET_RETURN, BaseEnv
from tfrl.env.utils.sub_env_processes import ProcessEnvPool
from tfrl.env.utils.sub_env_runner import DUMMY_AGENT_ID, SubEnvError
from tfrl.utils.backend_registry import REMOTE_ENV_POOL, load_backend
from tfrl.utils.typing import EnvID, MultiEnvDict

logger = logging.getLogger(__name__)

BACKENDS = ("process", "ray")

__all__ = ["RemoteVectorEnv", "SubEnvError"]


class RemoteVectorEnv(BaseEnv):
    """A BaseEnv whose sub-envs run remotely; `poll()` batches whichever are ready.

    Args:
        make_env: Callable producing one (non-vectorized) env given its vector index;
            called once per sub-env inside the sub-env's process or actor.
        num_envs: Number of sub-envs (env ids `0..num_envs-1`).
        multiagent: Whether the sub-envs are `MultiAgentEnv`s (dict actions and
            results keyed by agent id) rather than single-agent gymnasium envs.
        remote_env_batch_wait_ms: How long `poll()` waits for all pending sub-envs to
            answer before returning those that have; 0 returns as soon as at least one
            has. `poll()` always waits until at least one has answered. The first
            `poll()` waits for every sub-env's first reset, whatever this value: the
            sub-env processes (or actors) start at different speeds, and with a short
            wait the first ones up would otherwise fill the first fragments alone.
        existing_envs: Already created sub-envs. Ray actor handles (`backend="ray"`)
            are used as sub-envs `0..len(existing_envs)-1`. Local env objects cannot be
            moved into another process: all sub-envs are then made by `make_env(i)`,
            and the first existing env only supplies `observation_space` and
            `action_space`.
        backend: `"process"`: one OS process per sub-env. `"ray"`: one Ray actor per
            sub-env (needs Ray: `pip install 'tfrl[ray]'`).
        timeout_s: Longest time `poll()` waits for any sub-env to answer (and any
            single synchronous request takes) before raising `TimeoutError`; None waits
            forever. A sub-env process that dies is reported at once either way.

    Attributes:
        poll_timeout: `remote_env_batch_wait_ms / 1000` (seconds).

    Raises:
        ValueError: For a bad `num_envs`, `remote_env_batch_wait_ms`, `backend` or
            `timeout_s`.
        TypeError: If `make_env` cannot be pickled for another process.
        ImportError: For `backend="ray"` without Ray installed.
    """

    def __init__(
        self,
        make_env: Callable[[int], Any],
        num_envs: int,
        multiagent: bool,
        remote_env_batch_wait_ms: float,
        existing_envs: Optional[List[Any]] = None,
        *,
        backend: str = "process",
        timeout_s: Optional[float] = 300.0,
    ):
        _validate_args(num_envs, remote_env_batch_wait_ms, backend, timeout_s)
        self.make_env = make_env
        self.num_envs = int(num_envs)
        self.multiagent = bool(multiagent)
        self.poll_timeout = remote_env_batch_wait_ms / 1000
        self.existing_envs = list(existing_envs or [])
        self.backend = backend
        self._timeout_s = timeout_s
        if backend == "process":
            self._pool = ProcessEnvPool(make_env, self.num_envs, self.multiagent, timeout_s)
        else:  # "ray": `tfrl.backends` registers it (this layer does not import Ray).
            pool_cls = load_backend(REMOTE_ENV_POOL, backend)
            self._pool = pool_cls(make_env, self.num_envs, self.multiagent,
                                  self.existing_envs, timeout_s)
        self._stopped = False
        self._started = False  # every sub-env has answered once
        # Per env id: requests in flight, oldest first, as [kind, keep]; replies of
        # requests with keep=False (superseded by a try_reset) are dropped.
        self._requests: Dict[int, List[list]] = {i: [] for i in range(self.num_envs)}
        # Episode ended (or never started) and no reset sent since: the next poll resets.
        self._needs_reset: Set[int] = set(range(self.num_envs))
        # Agents that may get an action now, per env id returned by poll (not ended).
        self._awaiting: Dict[int, Set[Any]] = {}
        # Agents observed in each sub-env's current episode (for rewards None vs 0.0).
        self._seen: Dict[int, Set[Any]] = {i: set() for i in range(self.num_envs)}
        local = next((e for e in self.existing_envs if hasattr(e, "observation_space")), None)
        if local is not None:
            self.observation_space = local.observation_space
            self.action_space = getattr(local, "action_space", None)
        else:
            try:
                self.observation_space, self.action_space = self._pool.call(0, "spaces")
            except BaseException:
                self.stop()
                raise

    @property
    def timeout_s(self) -> Optional[float]:
        """Longest wait for a sub-env's answer, in seconds (None: no limit); settable."""
        return self._timeout_s

    @timeout_s.setter
    def timeout_s(self, value: Optional[float]) -> None:
        _check_timeout_s(value)
        self._timeout_s = self._pool.timeout_s = value

    def poll(
        self,
    ) -> Tuple[MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict, MultiEnvDict]:
        """Waits for sub-envs to answer; returns the results of those that have.

        First resets (asynchronously) every sub-env whose episode ended, or never
        started, unless `try_reset` already did. Every observed agent appears in all
        five dicts: its reward is None for its first observation in an episode (so
        for all agents right after a reset) unless the env gave one, and 0.0 for a
        returning agent the env gave none; flags default to False, infos to `{}`.

        Returns:
            `(obs, rewards, terminateds, truncateds, infos, off_policy_actions)`, each
            keyed by env id then agent id; `off_policy_actions` is always empty.

        Raises:
            SubEnvError: If a sub-env raised (its index and traceback in the message)
                or its process died.
            TimeoutError: If no sub-env answered within `timeout_s`.
            RuntimeError: After `stop()`, or if no sub-env has a request in flight.
        """
        self._check_running()
        for env_id in sorted(self._needs_reset):
            self._submit_reset(env_id, seed=None, options=None)
        if not any(self._requests.values()):
            raise RuntimeError(
                "poll() has nothing to wait for: every sub-env is waiting for actions. "
                f"Call send_actions() for env ids {sorted(self._awaiting)} first."
            )
        out = ({}, {}, {}, {}, {})
        results = self._gather(wait_for_all=not self._started)
        self._started = True
        for env_id, (kind, result) in sorted(results.items()):
            if kind == "reset":
                self._seen[env_id] = set()
                obs, infos = result
                result = (obs, {}, {"__all__": False}, {"__all__": False}, infos)
            self._observe(env_id, out, *result)
        return out + ({},)

    def send_actions(self, action_dict: MultiEnvDict) -> None:
        """Steps each sub-env in `action_dict` (`env_id -> agent_id -> action`).

        Only sub-envs returned by the last `poll()` whose episode goes on may be
        stepped, with actions for agents of their last observations that are not done.
        Each sub-env starts its step at once; its result arrives through `poll()`.

        Raises:
            TypeError: If `action_dict` is not a dict.
            ValueError: For an unknown env id, a sub-env or agent that is not waiting
                for an action, or a single-agent entry other than `{"agent0": action}`.
        """
        self._check_running()
        if not isinstance(action_dict, dict):
            raise TypeError(
                "send_actions() expects a dict env_id -> {agent_id: action}; received "
                f"{type(action_dict).__name__}."
            )
        for env_id, actions in action_dict.items():
            env_id = self._check_env_id(env_id, "send_actions")
            if env_id not in self._awaiting:
                raise ValueError(f"Cannot send actions to sub-env {env_id}: "
                                 f"{self._why_not_waiting(env_id)}")
            if not isinstance(actions, dict) or (
                not self.multiagent and list(actions) != [DUMMY_AGENT_ID]
            ):
                expected = "{agent_id: action}" if self.multiagent else "{'agent0': action}"
                raise ValueError(
                    f"Actions for sub-env {env_id} must be a dict {expected}; received "
                    f"{actions!r}."
                )
            unexpected = set(actions) - self._awaiting[env_id]
            if unexpected:
                raise ValueError(
                    f"Cannot send actions to agents {sorted(unexpected, key=repr)} of sub-env "
                    f"{env_id}: they were not in its last observations, or they are done. "
                    f"Agents waiting for an action: {sorted(self._awaiting[env_id], key=repr)}."
                )
        for env_id, actions in action_dict.items():
            env_id = int(env_id)
            action = actions if self.multiagent else actions[DUMMY_AGENT_ID]
            self._pool.submit(env_id, "step", action)
            self._requests[env_id].append(["step", True])
            del self._awaiting[env_id]

    def try_reset(
        self,
        env_id: Optional[EnvID] = None,
        *,
        seed: Optional[int] = None,
        options: Optional[dict] = None,
    ) -> str:
        """Starts an asynchronous reset of sub-env `env_id` (all if None).

        The reset observation arrives through a later `poll()` (reward None). A
        request still in flight to that sub-env is superseded: its result is dropped.
        With `env_id=None` and an int `seed`, sub-env `i` is reset with `seed + i`.
        Sub-envs whose episode ended need no `try_reset`: the next `poll()` resets
        them (without seed) if nothing else did.

        Returns:
            `ASYNC_RESET_RETURN`.

        Raises:
            ValueError: For an unknown `env_id`.
        """
        self._check_running()
        if env_id is None:
            for i in range(self.num_envs):
                self._submit_reset(i, seed=None if seed is None else seed + i, options=options)
        else:
            self._submit_reset(self._check_env_id(env_id, "try_reset"), seed, options)
        return ASYNC_RESET_RETURN

    def get_sub_environments(self, as_dict: bool = False) -> Any:
        """Handles of the sub-envs: `SubEnvProcess` objects, or Ray actor handles."""
        handles = self._pool.handles()
        return dict(enumerate(handles)) if as_dict else handles

    def get_agent_ids(self) -> set:
        """`{"agent0"}` for single-agent sub-envs; else asks the first sub-env."""
        if not self.multiagent:
            return {DUMMY_AGENT_ID}
        local = next((e for e in self.existing_envs if hasattr(e, "get_agent_ids")), None)
        if local is not None:
            return set(local.get_agent_ids())
        return set(self._pool.call(0, "call", "get_agent_ids"))

    def stop(self) -> None:
        """Closes every sub-env and ends its process or actor (idempotent)."""
        if not self._stopped:
            self._stopped = True
            self._pool.stop()

    def _submit_reset(self, env_id: int, seed: Optional[int], options: Optional[dict]) -> None:
        for request in self._requests[env_id]:
            request[1] = False
        self._pool.submit(env_id, "reset", seed=seed, options=options)
        self._requests[env_id].append(["reset", True])
        self._needs_reset.discard(env_id)
        self._awaiting.pop(env_id, None)

    def _observe(self, env_id: int, out: tuple, obs: dict, rewards: dict, terminateds: dict,
                 truncateds: dict, infos: dict) -> None:
        """Completes one sub-env's results (see `poll`) into `out`; updates its state."""
        seen = self._seen[env_id]
        rewards = {**{a: 0.0 if a in seen else None for a in obs if a not in rewards},
                   **rewards}
        terminateds = {**dict.fromkeys(obs, False), **terminateds}
        truncateds = {**dict.fromkeys(obs, False), **truncateds}
        infos = {**{agent: {} for agent in obs}, **infos}
        seen.update(obs)
        if terminateds["__all__"] or truncateds["__all__"]:
            self._needs_reset.add(env_id)
        else:
            self._awaiting[env_id] = {
                a for a in obs if not (terminateds[a] or truncateds[a])
            }
        for values, value in zip(out, (obs, rewards, terminateds, truncateds, infos)):
            values[env_id] = value

    def _gather(self, wait_for_all: bool = False) -> Dict[int, Tuple[str, Any]]:
        """Waits as `remote_env_batch_wait_ms` says (or, with `wait_for_all`, for every
        sub-env with a request in flight, up to `timeout_s`); returns
        {env_id: (kind, result)}."""
        start = time.monotonic()
        batch_deadline = start + (math.inf if wait_for_all else self.poll_timeout)
        hard_deadline = None if self.timeout_s is None else start + self.timeout_s
        results: Dict[int, Tuple[str, Any]] = {}
        while True:
            waiting = [i for i, reqs in self._requests.items() if reqs and i not in results]
            now = time.monotonic()
            if not waiting or (results and now >= batch_deadline):
                return results
            if now < batch_deadline and not wait_for_all:
                timeout = batch_deadline - now
            elif hard_deadline is None:
                timeout = None
            elif now < hard_deadline:
                timeout = hard_deadline - now
            elif results:  # (wait_for_all) the others are late: go on without them
                return results
            else:
                raise TimeoutError(
                    f"No sub-environment answered within timeout_s={self.timeout_s} s; "
                    f"waiting for sub-envs {waiting} (running "
                    f"{[self._requests[i][0][0] for i in waiting]}). Raise timeout_s "
                    "(None waits forever) if their reset()/step() is just slow."
                )
            for env_id in self._pool.wait(waiting, timeout):
                kind, keep = self._requests[env_id].pop(0)
                try:
                    result = self._pool.fetch(env_id)
                except SubEnvError:
                    if keep:
                        raise
                    logger.warning("Superseded %s() of sub-env %d failed.", kind, env_id,
                                   exc_info=True)
                    continue
                if keep:
                    results[env_id] = (kind, result)

    def _check_env_id(self, env_id: Any, method: str) -> int:
        if isinstance(env_id, numbers.Integral) and 0 <= env_id < self.num_envs:
            return int(env_id)
        raise ValueError(
            f"{method}() received unknown env id {env_id!r}; this RemoteVectorEnv has env "
            f"ids 0..{self.num_envs - 1}."
        )

    def _why_not_waiting(self, env_id: int) -> str:
        if self._requests[env_id]:
            return ("it is still running its previous request (it was not in the last "
                    "poll() results).")
        return (f"its episode ended (or has not started); the next poll() (or "
                f"try_reset({env_id})) resets it.")

    def _check_running(self) -> None:
        if self._stopped:
            raise RuntimeError("This RemoteVectorEnv was stopped; create a new one.")

    def __repr__(self) -> str:
        return (f"RemoteVectorEnv(num_envs={self.num_envs}, multiagent={self.multiagent}, "
                f"backend={self.backend!r}, stopped={self._stopped})")


def _validate_args(num_envs: Any, wait_ms: Any, backend: Any, timeout_s: Any) -> None:
    if isinstance(num_envs, bool) or not isinstance(num_envs, numbers.Integral) or num_envs < 1:
        raise ValueError(f"num_envs must be an int >= 1; received num_envs={num_envs!r}.")
    if isinstance(wait_ms, bool) or not isinstance(wait_ms, numbers.Real) or wait_ms < 0:
        raise ValueError(
            "remote_env_batch_wait_ms must be a number >= 0 (milliseconds; 0 returns as soon "
            f"as one sub-env is ready); received remote_env_batch_wait_ms={wait_ms!r}."
        )
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; received backend={backend!r}.")
    _check_timeout_s(timeout_s)


def _check_timeout_s(timeout_s: Any) -> None:
    if timeout_s is not None and (
        isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real) or timeout_s <= 0
    ):
        raise ValueError(
            f"timeout_s must be a number > 0 or None (no limit); received timeout_s={timeout_s!r}."
        )
