"""Where ``gwtrace run``/``span`` send their events: the running sidecar, or a
private one started for the command and stopped (flushed) after it."""

from __future__ import annotations

import io
import os
import shlex
import sys
from typing import Dict, Optional

# --- the sidecar ------------------------------------------------------------

class Sink:
    """Where spans go: a reachable sidecar, or a private one we start and stop."""

    def __init__(self, env: Dict[str, str], directory: Optional[str], private: bool) -> None:
        self.env = env
        self.directory = directory
        self.private = private

    @classmethod
    def acquire(cls, environ: Dict[str, str]) -> "Sink":
        """The sidecar named by GWTRACE_SOCKET/GWTRACE_DIR if one runs on it,
        else a private one in a new directory."""
        directory = sidecar_dir(environ)
        if directory and _sidecar_running(directory):
            return cls({}, directory, private=False)
        # start-up cost: `gwtrace run` imports only what it uses before it runs CMD
        from gwtrace.sidecar import control

        out = io.StringIO()
        private_dir = _mkdtemp(environ)
        try:
            control.start(private_dir, None, out)
        except BaseException:
            _remove_tree(private_dir)
            raise
        return cls(_parse_exports(out.getvalue()), private_dir, private=True)

    def stop(self) -> None:
        """Stop the private sidecar (it flushes first); remove its directory
        unless spans are still waiting there for delivery or events unread.

        The wait is bounded (private_stop_timeout): a sidecar that has not
        stopped by then is killed (it is ours, and the event log keeps every
        event: nothing is lost, the directory stays for `gwtrace ingest --spool`)."""
        if not self.private or not self.directory:
            return
        # start-up cost: `gwtrace run` imports only what it uses before it runs CMD
        from gwtrace.sidecar import control
        from gwtrace.sidecar.statedir import Spool

        spool = Spool(self.directory)
        try:
            control.stop(self.directory, private_stop_timeout(), io.StringIO())
        except control.ControlError:
            _kill_owner(spool)
            print(f"gwtrace run: the private sidecar did not stop in time and was killed; its events are kept "
                  f"in {self.directory}: send them with: gwtrace ingest --spool {shlex.quote(self.directory)}",
                  file=sys.stderr)
            return
        status = spool.read_status()
        counters = status.get("counters", {})
        if not counters.get("spans_pending") and not counters.get("log_bytes_unread") \
                and not control.unread_log_bytes(spool):
            _remove_tree(self.directory)
            return
        print(undelivered_message(self.directory, status), file=sys.stderr)


def private_stop_timeout() -> float:
    """How long `gwtrace run` waits for its private sidecar to stop: its own
    bounds (reading the rest of the log, GWTRACE_STOP_TIMEOUT for delivery)
    and a margin."""
    # start-up cost: `gwtrace run` imports only what it uses before it runs CMD
    from gwtrace.sidecar.daemon import DRAIN_MAX_S

    try:
        delivery = float(os.environ.get("GWTRACE_STOP_TIMEOUT", "") or 10.0)
    except ValueError:
        delivery = 10.0
    return DRAIN_MAX_S + max(0.0, delivery) + 15.0


def _kill_owner(spool: "object") -> None:
    """SIGKILL the sidecar that still holds the private directory (and only it)."""
    import signal

    pid = spool.owner_pid() if spool.is_owned() else None    # type: ignore[attr-defined]
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def undelivered_message(directory: str, status: Dict[str, object]) -> str:
    """The one line that says where undelivered spans are and how to send them."""
    counters = status.get("counters", {})
    pending = counters.get("spans_pending", 0) if isinstance(counters, dict) else 0
    why = status.get("last_error") or "not delivered in time"
    where = status.get("destination") or "the collector"
    what = f"{pending} span(s)" if pending else "spans"
    return (f"gwtrace run: {what} not delivered to {where} ({why}); they are kept in {directory}: "
            f"send them with: gwtrace ingest --spool {shlex.quote(directory)}")


def sidecar_dir(environ: Dict[str, str]) -> Optional[str]:
    """The state directory GWTRACE_SOCKET or GWTRACE_DIR names (it may hold no sidecar)."""
    socket = environ.get("GWTRACE_SOCKET", "")
    if socket.startswith("file://"):
        return os.path.dirname(socket[len("file://"):])
    return environ.get("GWTRACE_DIR") or None


def _sidecar_running(directory: str) -> bool:
    if not os.path.isdir(directory):
        return False
    # start-up cost: `gwtrace run` imports only what it uses before it runs CMD
    from gwtrace.sidecar.statedir import Spool, SpoolError

    try:
        return Spool(directory).is_owned()
    except (SpoolError, OSError):
        return False


def _mkdtemp(environ: Dict[str, str]) -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="gwtrace-run.", dir=environ.get("TMPDIR") or None)


def _parse_exports(text: str) -> Dict[str, str]:
    values = {}
    for line in text.splitlines():
        words = shlex.split(line.rstrip(";"))
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            key, _, value = words[1].partition("=")
            values[key] = value
    return values


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
