"""The request protocol between PolicyClient and PolicyServerInput.

Every request is an HTTP POST whose body is one wire-format object (see
`tfrl.serving.wire_format`) with a `"command"` key and the command's arguments; the
response is a wire-format object too (HTTP 200), or `{"error": message}` with HTTP
400 for bad requests (malformed, or data the server refuses, naming the field), 401
for a missing/wrong `Authorization: Bearer <token>` (servers with a token), 411/413
for a missing Content-Length or a body over the server's limit, 503 when the server
is stopping or busy (with `Retry-After` when retrying helps: too many connections, a
full sample queue), 504 on a timeout.

| command | arguments (optional ones with defaults) | response |
|---|---|---|
| START_EPISODE | episode_id (str or None), training_enabled=True | {"episode_id"} |
| GET_ACTION | episode_id (str, or list of str), observation (dict id -> obs for a list) | {"action"} |
| LOG_ACTION | episode_id, observation, action | {} |
| LOG_RETURNS | episode_id, reward, info=None, done=None (multi-agent done dict) | {} |
| END_EPISODE | episode_id, observation, truncated=False | {} |
| GET_WORKER_ARGS | - | {"policies": {id: {policy_class, observation_space, action_space, config}}, "multiagent", "config", "protocol_version"} |
| GET_WEIGHTS | - | {"weights": {policy id: weights}} |
| REPORT_SAMPLES | samples (list of batches), metrics=[] (episode metrics dicts) | {} |
"""

from typing import Any, Dict, Tuple

# Bumped when a command or argument changes meaning.
PROTOCOL_VERSION = 1
# Longest episode id accepted (generated ids have 32 characters).
MAX_EPISODE_ID_LENGTH = 256

START_EPISODE = "START_EPISODE"
GET_ACTION = "GET_ACTION"
LOG_ACTION = "LOG_ACTION"
LOG_RETURNS = "LOG_RETURNS"
END_EPISODE = "END_EPISODE"
GET_WORKER_ARGS = "GET_WORKER_ARGS"
GET_WEIGHTS = "GET_WEIGHTS"
REPORT_SAMPLES = "REPORT_SAMPLES"

# command -> (required argument names, optional argument names -> default)
_SCHEMAS: Dict[str, Tuple[frozenset, Dict[str, Any]]] = {
    START_EPISODE: (frozenset(["episode_id"]), {"training_enabled": True}),
    GET_ACTION: (frozenset(["episode_id", "observation"]), {}),
    LOG_ACTION: (frozenset(["episode_id", "observation", "action"]), {}),
    LOG_RETURNS: (frozenset(["episode_id", "reward"]), {"info": None, "done": None}),
    END_EPISODE: (frozenset(["episode_id", "observation"]), {"truncated": False}),
    GET_WORKER_ARGS: (frozenset(), {}),
    GET_WEIGHTS: (frozenset(), {}),
    REPORT_SAMPLES: (frozenset(["samples"]), {"metrics": []}),
}
COMMANDS = tuple(_SCHEMAS)
# Commands served by the server's own inference loop (the others work without it).
REMOTE_INFERENCE_COMMANDS = frozenset([START_EPISODE, GET_ACTION, LOG_ACTION, LOG_RETURNS,
                                       END_EPISODE])


class BadRequest(ValueError):
    """A request the server refuses (HTTP 400): the message says what and why."""


def parse_request(request: Any) -> Tuple[str, Dict[str, Any]]:
    """Validates a decoded request and returns `(command, arguments with defaults)`.

    Raises:
        BadRequest: If the request is not a dict, has no or an unknown `"command"`,
            lacks a required argument or has unexpected ones, or an episode id is not a
            str of at most `MAX_EPISODE_ID_LENGTH` characters.
    """
    if not isinstance(request, dict):
        raise BadRequest(
            f"Expected a request object with a 'command' key; received {type(request).__name__}."
        )
    command = request.get("command")
    if command not in _SCHEMAS:
        raise BadRequest(f"Unknown command {command!r}; expected one of {list(COMMANDS)}.")
    required, optional = _SCHEMAS[command]
    args = {k: v for k, v in request.items() if k != "command"}
    missing = required - set(args)
    if missing:
        raise BadRequest(f"{command} request is missing {sorted(missing)}; it takes "
                         f"{sorted(required)} and optionally {sorted(optional)}.")
    unexpected = set(args) - required - set(optional)
    if unexpected:
        raise BadRequest(f"{command} request has unexpected keys {sorted(map(str, unexpected))}; "
                         f"it takes {sorted(required)} and optionally {sorted(optional)}.")
    for key, default in optional.items():
        args.setdefault(key, default)
    episode_id = args.get("episode_id")
    if "episode_id" in required and command != GET_ACTION and not (
            isinstance(episode_id, str) or (command == START_EPISODE and episode_id is None)):
        raise BadRequest(f"{command}: episode_id must be a str; received {episode_id!r:.200}.")
    ids = episode_id if isinstance(episode_id, list) else [episode_id]
    for eid in ids:
        if isinstance(eid, str) and len(eid) > MAX_EPISODE_ID_LENGTH:
            raise BadRequest(f"{command}: episode_id has {len(eid)} characters; at most "
                             f"{MAX_EPISODE_ID_LENGTH} are accepted (start_episode() without "
                             "an id generates one of 32).")
    return command, args
