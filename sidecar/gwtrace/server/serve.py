"""``gwtrace serve``: run the app under waitress until SIGTERM/SIGINT.

Why a hand-rolled main loop around waitress: ``waitress.serve`` stops its
loop on a signal without sending responses already computed, so a client
could see a reset for a batch that *was* stored and re-send it.  Here a
signal stops accepting connections, lets the requests in progress finish and
their answers leave, then closes the store.
"""

from __future__ import annotations

import gc
import ipaddress
import logging
import signal
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Optional

from ..store import default_store_path

if TYPE_CHECKING:
    from ..store import TraceStore
from ..wire.redact import strip_userinfo_in_logs

log = logging.getLogger("gwtrace.server")

TOKEN_ENV = "GWTRACE_SERVER_TOKEN"
#: How long requests in progress may take to finish after SIGTERM.
DRAIN_SECONDS = 10.0
#: How often the retention purge runs (it also runs at start).
PURGE_INTERVAL_SECONDS = 3600.0
#: Open connections waitress keeps (its default, 100, let 120 idle half-sent requests, no token needed,
#: lock everyone else out); bounded by the open-file limit.
CONNECTION_LIMIT = 1000
#: A connection silent this long is closed (half-sent requests included), checked every CLEANUP_SECONDS.
CHANNEL_TIMEOUT_SECONDS = 30
CLEANUP_SECONDS = 5


def is_loopback(host: str) -> bool:
    """True if every address ``host`` names is a loopback address."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def fail(message: str) -> int:
    """One ``gwtrace serve: ...`` line; exit status 2."""
    print(f"gwtrace serve: {message}", file=sys.stderr)
    return 2


def serve(host: str, port: int, db: Optional[str], retention_days: Optional[float], token: Optional[str],
          control_verifier: Optional[object] = None, metrics_retention_days: Optional[float] = None) -> int:
    """Serve until SIGTERM/SIGINT (``gwtrace serve``, whose options ``gwtrace.cli.serve`` checks); the exit status."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="gwtrace serve: %(message)s")
        strip_userinfo_in_logs()
    # Ingest and the query API make many short-lived, acyclic objects (span
    # fields, row tuples, JSON dicts): collecting cycles every 700 allocations
    # walked them over and over (~3% of the server's CPU under ingest).
    gc.set_threshold(50_000, 20, 20)
    bound_malloc()
    from ..store import TraceStore      # loaded here, not for `gwtrace serve --help`
    try:
        store = TraceStore(db, retention_days=retention_days, metrics_retention_days=metrics_retention_days)
    except Exception as exc:  # noqa: BLE001 - one clear line, not a traceback
        return fail(f"cannot open the store {db or default_store_path()}: {exc}")

    # start-up cost: Flask and the app load once the arguments and the store are good
    from .app import create_app
    from .otlp_http import DEFAULT_MAX_BODY_BYTES

    try:
        app = create_app(store, token, max_body_bytes=DEFAULT_MAX_BODY_BYTES, host=host,
                         control_verifier=control_verifier)
        server = _waitress(app, host, port)
    except OSError as exc:
        store.close()
        return fail(f"cannot listen on {host}:{port}: {exc}")

    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()
        server.pull_trigger()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    purger: Optional[threading.Thread] = None
    if retention_days is not None or metrics_retention_days is not None:
        purger = threading.Thread(target=_purge_loop, args=(store, stop), name="gwtrace-retention", daemon=True)
        purger.start()
    host = server.effective_host
    url_host = f"[{host}]" if ":" in str(host) else host
    print(
        f"gwtrace serve: listening on http://{url_host}:{server.effective_port} (store {store.path}"
        f"{', token required' if token else ''})",
        file=sys.stderr,
        flush=True,
    )
    try:
        _run(server, stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stop.set()
        if purger is not None:
            purger.join(timeout=5)
        store.close()
    print("gwtrace serve: stopped", file=sys.stderr, flush=True)
    return 0


def bound_malloc() -> None:
    """Give memory decoding needed back to the system when a request is done (glibc; elsewhere nothing).

    Why: upb decodes into arenas of large malloc blocks. glibc keeps a heap per thread (8 here) and,
    after a large block is freed, raises its mmap threshold (up to 32 MiB), so the next large blocks come
    from those heaps and stay there: four costly requests in a row left ~300 MB resident although at most
    two were decoded at once. A fixed 1 MiB threshold (large blocks are mapped, and unmapped when freed)
    and two heaps keep the resident size near what is in use (measured with the costliest requests the limits
    let through, four at once: 311 MB -> 230 MB).
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    m_mmap_threshold, m_arena_max = -3, -8   # glibc's malloc.h
    mallopt(m_mmap_threshold, 1 << 20)
    mallopt(m_arena_max, 2)


def connection_limit() -> int:
    """CONNECTION_LIMIT, or fewer when the open-file limit would not allow it (a few kept for the store)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return CONNECTION_LIMIT
    return max(16, min(CONNECTION_LIMIT, soft - 64))


def _waitress(app: Any, host: str, port: int) -> Any:
    """waitress, tuned for OTLP batches and slow clients; raises OSError if it cannot listen."""
    from waitress import create_server

    # start-up cost: as create_app (Flask)
    from .otlp_http import DEFAULT_MAX_BODY_BYTES

    return create_server(
        app,
        host=host,
        port=port,
        # 8, not 4: a thread stays free for /healthz and reads while costly requests are decoded
        threads=8,
        ident="gwtrace",
        # OTLP batches are ~100 KB: read them in a few large recv() calls.
        recv_bytes=65536,
        # waitress refuses larger bodies itself (413) before buffering them.
        max_request_body_size=DEFAULT_MAX_BODY_BYTES,
        clear_untrusted_proxy_headers=True,
        # Slow or silent clients (slowloris): many may wait, none for long.
        connection_limit=connection_limit(),
        channel_timeout=CHANNEL_TIMEOUT_SECONDS,
        cleanup_interval=CLEANUP_SECONDS,
    )


def _run(server: "object", stop: threading.Event) -> None:
    from waitress import wasyncore
    from waitress.channel import HTTPChannel

    channels = server._map  # type: ignore[attr-defined]
    timeout = 1.0
    while not stop.is_set():
        wasyncore.loop(timeout=timeout, map=channels, use_poll=True, count=1)
    # Stop accepting, finish what is in progress, then close everything.
    wasyncore.dispatcher.close(server)  # the listening socket only, not the trigger
    deadline = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < deadline:
        busy = [
            ch for ch in list(channels.values())
            if isinstance(ch, HTTPChannel) and (ch.requests or ch.total_outbufs_len)
        ]
        if not busy:
            break
        wasyncore.loop(timeout=0.05, map=channels, use_poll=True, count=1)
    server.task_dispatcher.shutdown(timeout=2)  # type: ignore[attr-defined]
    wasyncore.close_all(channels)


def _purge_loop(store: TraceStore, stop: threading.Event) -> None:
    while not stop.wait(PURGE_INTERVAL_SECONDS):
        try:
            removed = store.purge()
            if removed:
                log.info("retention: removed %d trace(s)", removed)
            points = store.purge_metrics()
            if points:
                log.info("retention: removed %d metric point(s)", points)
        except Exception as exc:  # noqa: BLE001 - retry at the next interval
            log.warning("retention purge failed: %s", exc)
