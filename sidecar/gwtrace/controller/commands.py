"""Back-channel commands and the node's results, checked (the contract, briefs c32 part 2).

A command is queued by a person for one glidein (its live key), rides every
snapshot answer (``Gwtrace-Commands`` header, ≤ 4096 bytes) until its result
comes back or an hour has passed. The node enforces the file allow-list under
the job's scratch directory; the server refuses what can never be allowed
(an absolute path, ``..``, a size over 1 MiB) before queuing it.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..wire.redact import redact_message
from .rules import LEVELS, MAX_TEXT, BadRule

#: Largest tail a command may ask for, and the default.
MAX_TAIL_BYTES = 1 << 20
DEFAULT_TAIL_BYTES = 65536
#: Largest ``Gwtrace-Commands`` header; the rest wait for the next snapshot.
MAX_HEADER_BYTES = 4096
#: A command not answered within this many seconds is dropped as expired.
COMMAND_TTL_S = 3600
#: Largest results body, and the most text kept from one result.
MAX_RESULTS_BYTES = 2 << 20
MAX_RESULT_TEXT = MAX_TAIL_BYTES


def _short(name: str, value: Any, required: bool = True) -> Optional[str]:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT or not value.isprintable():
        raise BadRule(f"{name} must be a printable string of 1..{MAX_TEXT} characters")
    return value


def check_path(path: Any) -> str:
    """A path relative to the job's scratch directory, with no way out of it."""
    text = _short("path", path)
    assert text is not None
    if text.startswith("/") or "\\" in text or any(part in ("..", "") for part in text.split("/")):
        raise BadRule("path must be relative to the job's directory, without '..' or empty parts")
    return text


def command_from_request(body: Mapping[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """(live key, command without its id) from ``POST /api/control/commands``."""
    if not isinstance(body, Mapping):
        raise BadRule("the body must be a JSON object")
    key = _short("key", body.get("key"))
    op = body.get("op")
    job = _short("job", body.get("job"), required=False)
    if op == "level":
        if body.get("level") not in LEVELS:
            raise BadRule(f"level must be one of {'|'.join(LEVELS)}")
        return key, {"op": "level", "level": body["level"], "job": job}  # type: ignore[return-value]
    if op == "tail":
        if job is None:
            raise BadRule("a tail names the job whose file it reads")
        size = body.get("max_bytes", DEFAULT_TAIL_BYTES)
        if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= MAX_TAIL_BYTES:
            raise BadRule(f"max_bytes must be a whole number from 1 to {MAX_TAIL_BYTES}")
        return key, {"op": "tail", "job": job, "path": check_path(body.get("path")),  # type: ignore[return-value]
                     "max_bytes": size}
    raise BadRule("op must be 'level' or 'tail'")


def header_value(pending: List[Dict[str, Any]]) -> Optional[str]:
    """The ``Gwtrace-Commands`` value: compact ASCII JSON, oldest first, as many as fit in 4096 bytes."""
    chosen: List[Dict[str, Any]] = []
    size = 2
    for cmd in pending:
        item = dict({"id": cmd["id"]}, **cmd["command"])
        text = json.dumps(item, separators=(",", ":"), ensure_ascii=True)
        if size + len(text) + 1 > MAX_HEADER_BYTES:
            break
        chosen.append(item)
        size += len(text) + 1
    return json.dumps(chosen, separators=(",", ":"), ensure_ascii=True) if chosen else None


def redact_lines(text: str) -> str:
    """A file's tail with every line that holds a secret redacted (protocol.md, "Secrets"), again here: the node
    redacts before sending, but a node is untrusted and what is kept here is shown to people."""
    return "\n".join(redact_message(line) for line in text.split("\n"))


def results_from_request(body: Any) -> Tuple[str, List[Dict[str, Any]]]:
    """(live key, results) from ``POST /v1/gwtrace/control/results``; each result kept to its known fields."""
    if not isinstance(body, Mapping) or not isinstance(body.get("results"), list):
        raise BadRule('the body must be {"key": ..., "results": [...]}')
    key = _short("key", body.get("key"))
    out = []
    for item in body["results"][:1000]:
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str) or not isinstance(item.get("ok"),
                                                                                                  bool):
            raise BadRule('each result is {"id": "c..", "ok": true|false, ...}')
        result: Dict[str, Any] = {"id": item["id"][:40], "ok": item["ok"]}
        if isinstance(item.get("text"), str):
            result["text"] = redact_lines(item["text"][:MAX_RESULT_TEXT])
        if isinstance(item.get("truncated"), bool):
            result["truncated"] = item["truncated"]
        if isinstance(item.get("bytes"), int) and not isinstance(item.get("bytes"), bool):
            result["bytes"] = max(0, min(item["bytes"], 1 << 62))
        if isinstance(item.get("error"), str):
            result["error"] = item["error"].splitlines()[0][:MAX_TEXT] if item["error"] else ""
        out.append(result)
    return key, out  # type: ignore[return-value]
