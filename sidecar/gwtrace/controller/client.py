"""The controller as ``gwtrace control`` reaches it: over HTTP from ``gwtrace serve``, or on a store file directly.

Both answer with the JSON the API gives (``server/control.py``), so the
command prints one form whichever it talks to. On a store file the caller is
an admin (whoever may write the store file may change anything in it anyway);
every change is audited under their login name.
"""

from __future__ import annotations

import getpass
import os
import time
from typing import Any, Dict, List, Mapping, Optional

from ..store import StoreUnreadable, TraceStore
from .book import Controller, NotFound, Refused
from .roles import Principal
from .rules import BadRule

#: Where a bearer token is found when ``--token`` is not given (the WLCG bearer token discovery, then ours).
TOKEN_ENVS = ("GWTRACE_CONTROL_TOKEN", "BEARER_TOKEN")


class ControlFailed(Exception):
    """The server or the store refused or could not answer: one line."""


def find_token(given: Optional[str]) -> Optional[str]:
    """``--token``, else ``$GWTRACE_CONTROL_TOKEN``, ``$BEARER_TOKEN``, the file ``$BEARER_TOKEN_FILE`` or
    ``$XDG_RUNTIME_DIR/bt_u<uid>`` (WLCG Bearer Token Discovery)."""
    if given:
        return given.strip()
    for name in TOKEN_ENVS:
        if os.environ.get(name, "").strip():
            return os.environ[name].strip()
    paths = [os.environ.get("BEARER_TOKEN_FILE", "")]
    if os.environ.get("XDG_RUNTIME_DIR"):
        paths.append(os.path.join(os.environ["XDG_RUNTIME_DIR"], f"bt_u{os.getuid()}"))
    for path in paths:
        if path and os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return handle.read(65536).strip() or None
    return None


class Remote:
    """``gwtrace serve``'s control API."""

    def __init__(self, server: str, token: Optional[str], timeout: float = 10.0):
        import requests

        self.base = server.rstrip("/")
        self.session = requests.Session()
        self.timeout = timeout
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def _call(self, method: str, path: str, **kwargs: Any) -> Dict[str, Any]:
        import requests

        try:
            resp = self.session.request(method, self.base + path, timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            raise ControlFailed(f"cannot reach {self.base}: {type(exc).__name__}") from None
        try:
            body = resp.json()
        except ValueError:
            raise ControlFailed(f"{self.base} answered {resp.status_code} without JSON: is it gwtrace serve?") from None
        if resp.status_code >= 400:
            message = body.get("error") if isinstance(body, dict) else None
            if isinstance(message, dict):
                message = message.get("msg") or message.get("message")
            raise ControlFailed(f"{resp.status_code}: {message or resp.reason}")
        return body

    def rules(self, expired: bool = False) -> List[Dict[str, Any]]:
        return self._call("GET", "/api/control/rules", params={"expired": "1" if expired else ""})["rules"]

    def set_rule(self, body: Mapping[str, Any]) -> Dict[str, Any]:
        return self._call("POST", "/api/control/rules", json=dict(body))["rule"]

    def remove_rule(self, rule_id: str) -> Dict[str, Any]:
        return self._call("DELETE", "/api/control/rules", params={"id": rule_id})["removed"]

    def explain(self, scope: Mapping[str, str], operation: Optional[str] = None) -> Dict[str, Any]:
        params = dict(scope, operation=operation) if operation is not None else dict(scope)
        return self._call("GET", "/api/control/explain", params=params)

    def audit(self, after: int, limit: int) -> List[Dict[str, Any]]:
        return self._call("GET", "/api/control/audit", params={"after": after, "limit": limit})["audit"]

    def queue(self, body: Mapping[str, Any]) -> Dict[str, Any]:
        return self._call("POST", "/api/control/commands", json=dict(body))["command"]

    def command(self, command_id: str) -> Dict[str, Any]:
        return self._call("GET", f"/api/control/commands/{command_id}")["command"]


class Local:
    """A store file, as an admin under the login name.

    ``create``: make the store when there is none yet (``set``: an admin may
    write the default rule before ``gwtrace serve`` first runs on that file);
    reading commands never make an empty store.
    """

    def __init__(self, path: str, create: bool = False):
        try:
            self.store = TraceStore(path, create=create)
        except StoreUnreadable as exc:
            raise ControlFailed(str(exc)) from None
        self.ctl = Controller(self.store, recheck_s=0.0)
        self.who = Principal(_login(), "admin")

    def _do(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except (BadRule, Refused, NotFound) as exc:
            raise ControlFailed(str(exc)) from None

    def rules(self, expired: bool = False) -> List[Dict[str, Any]]:
        return [r.to_dict() for r in self.ctl.rules(include_expired=expired)]

    def set_rule(self, body: Mapping[str, Any]) -> Dict[str, Any]:
        return self._do(self.ctl.set_rule, self.who, body).to_dict()

    def remove_rule(self, rule_id: str) -> Dict[str, Any]:
        return self._do(self.ctl.remove_rule, self.who, rule_id).to_dict()

    def explain(self, scope: Mapping[str, str], operation: Optional[str] = None) -> Dict[str, Any]:
        return self._do(self.ctl.explain, scope, operation)

    def audit(self, after: int, limit: int) -> List[Dict[str, Any]]:
        return self.ctl.audit(self.who, after, limit)

    def queue(self, body: Mapping[str, Any]) -> Dict[str, Any]:
        return self._do(self.ctl.queue_command, self.who, body)

    def command(self, command_id: str) -> Dict[str, Any]:
        return self._do(self.ctl.command, self.who, command_id)


def _login() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name in a container: say who by uid
        return f"uid{os.getuid()}"


def wait_for(backend: Any, command_id: str, wait_s: float, poll_s: float = 1.0) -> Dict[str, Any]:
    """The command once it is no longer pending, or as it is after ``wait_s``."""
    deadline = time.monotonic() + max(0.0, wait_s)
    while True:
        found = backend.command(command_id)
        if found["state"] != "pending" or time.monotonic() >= deadline:
            return found
        time.sleep(min(poll_s, max(0.05, deadline - time.monotonic())))
