"""``gwtrace ingest``: spans that came home, into the collector or the store.

On the factory: ``gwtrace ingest job.123.0.err logs/`` finds the blocks that
``gwtrace sidecar stop --ship-to`` (or ``shim/gwtrace-ship-spool``) wrote into
glidein output, verifies them and forwards their spans to the configured OTLP
endpoint or the embedded store. Ingesting the same file twice adds nothing: the
digest of every forwarded block is remembered in a ledger. A corrupt or
truncated block is reported with its file and byte offset and skipped; the
other blocks still go.

On a worker node after a SIGKILL of the pilot: ``gwtrace ingest --spool DIR``
recovers every span whose events reached the disk from a sidecar state
directory, ending unfinished spans as incomplete.
"""

from __future__ import annotations

import argparse
import mmap
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, Optional, TextIO

from gwtrace.export.otlp import to_readable_spans
from gwtrace.factory.forward import Forwarder, IngestError  # noqa: F401  (re-exported: tests, callers)
from gwtrace.factory.ledger import Ledger, LedgerBusy, default_ledger
from gwtrace.sidecar.assembler import Assembler
from gwtrace.sidecar.control import ControlError, recover
from gwtrace.sidecar.daemon import format_counters, now_us
from gwtrace.store import limits
from gwtrace.wire.blocks import SPANS_PER_BLOCK, BadBlock, Block, find_blocks
from gwtrace.wire.events import ProtocolError, parse_line

from .backfill import run_backfill

if TYPE_CHECKING:   # the OTLP modules load when a block is decoded: a cron run over nothing new stays quick
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def events_to_requests(payload: bytes, host: str) -> "tuple[List[ExportTraceServiceRequest], int, int]":
    """Raw event-log lines (a bash-only node's spool) into OTLP requests of at most SPANS_PER_BLOCK spans.

    Returns (requests, spans, malformed lines). Spans that never ended are
    ended at the time of their last event, as incomplete errors.
    """
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource

    asm = Assembler()
    spans = []
    last_ts = 0
    malformed = 0
    for raw in payload.split(b"\n"):
        if not raw.strip():
            continue
        try:
            ev = parse_line(raw)
        except ProtocolError:
            malformed += 1
            continue
        last_ts = max(last_ts, ev.ts_us)
        done = asm.feed(ev)
        if done is not None:
            spans.append(done)
    spans.extend(asm.end_all(last_ts or now_us(), "spool shipped without a sidecar"))
    resource = Resource({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "glidein", "host.name": host})
    requests = [encode_spans(to_readable_spans(spans[at:at + SPANS_PER_BLOCK], resource))
                for at in range(0, len(spans), SPANS_PER_BLOCK)]
    return requests, len(spans), malformed


def _within_decode_bound(payload: bytes) -> None:
    """Refuse (``limits.TooLarge``) a block whose decoding would cost more than the server's own bound."""
    cost = limits.decode_cost(payload)
    if cost > limits.MAX_DECODE_COST:
        raise limits.TooLarge(f"over the limit: would take ~{cost >> 20} MiB to decode "
                              f"(at most {limits.MAX_DECODE_COST >> 20} MiB)")


def otlp_block_request(payload: bytes) -> ExportTraceServiceRequest:
    """A block's OTLP request, decoded only if decoding it stays within the server's own bound."""
    _within_decode_bound(payload)
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return ExportTraceServiceRequest.FromString(payload)


def metrics_block_request(payload: bytes) -> Any:
    """A ``kind=metrics`` block's ``ExportMetricsServiceRequest``, decoded within the server's own bound."""
    _within_decode_bound(payload)
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    return ExportMetricsServiceRequest.FromString(payload)


def _metrics_said(totals: dict) -> str:
    """", 2 metrics block(s) (40 point(s))" when there were any; nothing otherwise (the line stays as it was)."""
    if not totals.get("metric_blocks"):
        return ""
    points = f" ({totals['points']} point(s))" if totals["points"] else ""
    return f", {totals['metric_blocks']} metrics block(s){points}"


def iter_files(paths: Iterable[str]) -> Iterator[Path]:
    for p in paths:
        path = Path(p)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file():
                    yield child
        else:
            yield path


def ingest_files(paths: List[str], forwarder: Forwarder, ledger: Ledger, err: TextIO) -> "tuple[dict, bool]":
    totals = {"blocks": 0, "spans": 0, "already": 0, "bad": 0, "failed": 0, "metric_blocks": 0, "points": 0}
    ok = True
    for path in iter_files(paths):
        try:
            with mapped(path) as data:
                ok = _ingest_blocks(path, data, forwarder, ledger, totals, err) and ok
        except OSError as exc:
            print(f"gwtrace: {path}: {exc.strerror or exc}", file=err)
            ok = False
    return totals, ok


@contextmanager
def mapped(path: Path) -> Iterator[Any]:
    """The file's bytes as a read-only map: glidein output can be large, and only its blocks are read."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            yield b""
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            yield view


def _ingest_blocks(path: Path, data: Any, forwarder: Forwarder, ledger: Ledger, totals: dict, err: TextIO) -> bool:
    """Forward the blocks of one file; False if one was bad or could not go."""
    ok = True
    for block in find_blocks(data):
        if isinstance(block, BadBlock):
            print(f"gwtrace: {path}:{block.offset}: skipped block: {block.reason}", file=err)
            totals["bad"] += 1
            ok = False
            continue
        assert isinstance(block, Block)
        if block.sha256 in ledger.seen:
            totals["already"] += 1
            continue
        try:
            if block.kind == "metrics":
                points = forwarder.send_metrics(metrics_block_request(block.payload))
                ledger.add(block.sha256)
                totals["metric_blocks"] += 1
                totals["points"] += max(0, points)
                continue
            if block.kind == "otlp":
                requests = [otlp_block_request(block.payload)]
                n = sum(len(ss.spans) for rs in requests[0].resource_spans for ss in rs.scope_spans)
            else:
                requests, n, malformed = events_to_requests(block.payload, block.meta.get("host", "unknown"))
                if malformed:
                    print(f"gwtrace: {path}:{block.offset}: {malformed} malformed event line(s) skipped",
                          file=err)
            for request in requests:
                forwarder.send(request)
        except IngestError as exc:
            print(f"gwtrace: {path}:{block.offset}: {exc}", file=err)
            totals["failed"] += 1
            ok = False
            continue
        except limits.TooLarge as exc:
            print(f"gwtrace: {path}:{block.offset}: skipped block: {exc}", file=err)
            totals["bad"] += 1
            ok = False
            continue
        except Exception as exc:  # noqa: BLE001 - a bad payload must not stop the others
            print(f"gwtrace: {path}:{block.offset}: skipped block: {type(exc).__name__}: {exc}", file=err)
            totals["bad"] += 1
            ok = False
            continue
        ledger.add(block.sha256)
        totals["blocks"] += 1
        totals["spans"] += n
    return ok


class Watcher:
    """``gwtrace ingest --watch DIR...``: follow a factory's client log
    directories as glideins complete.

    Every INTERVAL seconds it looks for glidein output (``job.*.err`` and
    ``job.*.out``) that changed since it last read it and has not changed for
    SETTLE seconds (HTCondor writes the files back when the glidein ends; a
    file still growing would show a half-written block as truncated), and
    ingests those files. The ledger makes a file read twice cost nothing.
    """

    PATTERNS = ("job.*.err", "job.*.out")

    def __init__(self, dirs: List[str], settle: float) -> None:
        self.dirs = [Path(d) for d in dirs]
        self.settle = settle
        self.done: "dict[Path, tuple[int, float]]" = {}

    def ready(self, now: float) -> List[Path]:
        """Files that changed since they were read and have settled."""
        found = []
        for top in self.dirs:
            for pattern in self.PATTERNS:
                for path in top.rglob(pattern):
                    try:
                        st = path.stat()
                    except OSError:
                        continue
                    key = (st.st_size, st.st_mtime)
                    if self.done.get(path) != key and now - st.st_mtime >= self.settle:
                        found.append(path)
                        self.done[path] = key
        return sorted(found)


def _scan(watcher: Watcher, forwarder: Forwarder, ledger: Ledger, lock_wait: float, err: TextIO) -> bool:
    """One scan of --watch, holding the ledger: False if a block could not go.

    The files are chosen under the lock too, so a scan that gives up on a busy
    ledger marks nothing as read: the next scan takes them.
    """
    try:
        with ledger.locked(lock_wait):
            files = watcher.ready(time.time())
            if not files:
                return True
            totals, ok = ingest_files([str(f) for f in files], forwarder, ledger, err)
    except LedgerBusy as exc:
        print(f"gwtrace: {exc}; this scan skipped, nothing lost", file=err)
        return True
    if totals["blocks"] or totals["metric_blocks"] or not ok:
        print(f"gwtrace: ingested {totals['blocks']} block(s), {totals['spans']} span(s){_metrics_said(totals)} from "
              f"{len(files)} file(s) into {forwarder.destination}", file=err)
    return ok


def _backfill_scan(dirs: List[str], forwarder: Forwarder, settle: float, err: TextIO) -> bool:
    """One scan's backfill (``backfill.py``): the records and spans of glideins whose ``.out``/``.err`` came
    back or changed and settled, traced or not, and the new events of the Condor-G logs (queued, running,
    held, removed); False if something could not be read."""
    try:
        totals = run_backfill(dirs, forwarder, err, settle, require=False)
    except IngestError as exc:
        print(f"gwtrace: {exc}; this scan's backfill skipped, nothing lost", file=err)
        return True
    if totals.glideins or totals.events or totals.problems:
        print(f"gwtrace: backfilled {totals.glideins} glidein(s), {totals.spans} span(s), {totals.events} new "
              f"Condor-G event(s) into {forwarder.destination}", file=err)
    return not totals.problems


def watch(args: argparse.Namespace, err: TextIO) -> int:
    """Ingest settled glidein output forever (or once with --once); SIGTERM ends it cleanly."""
    import signal as _signal

    for d in args.watch:
        if not Path(d).is_dir():
            raise IngestError(f"--watch: no directory at {d}")
    stop = {"now": False}
    _signal.signal(_signal.SIGTERM, lambda *_: stop.update(now=True))
    watcher = Watcher(args.watch, args.settle)
    forwarder = Forwarder(getattr(args, "store", None))
    ledger = Ledger(Path(args.ledger) if args.ledger else default_ledger(), forwarder.destination)
    status = 0
    try:
        while not stop["now"]:
            status = status or (0 if _scan(watcher, forwarder, ledger, args.lock_wait, err) else 1)
            if not args.no_backfill:
                status = status or (0 if _backfill_scan(args.watch, forwarder, args.settle, err) else 1)
            if args.once:
                break
            for _ in range(int(args.interval * 10)):
                if stop["now"]:
                    break
                time.sleep(0.1)
    finally:
        forwarder.close()
    return status


def ingest_spool(directory: str, err: TextIO) -> int:
    spool = recover(directory)
    print(f"gwtrace: recovered {spool.dir}: {format_counters(spool.read_status())}", file=err)
    return 0


def ingest_factory_logs(dirs: List[str], err: TextIO, store: Optional[str] = None) -> int:
    """Backfill glideins from factory files (only those new or changed since the last run); 1 if a directory
    is missing or holds no glidein file, a file could not be read or a block was skipped (the rest is sent)."""
    try:
        forwarder = Forwarder(store)
    except IngestError as exc:
        print(f"gwtrace: {exc}", file=err)
        return 1
    try:
        totals = run_backfill(dirs, forwarder, err)
    except IngestError as exc:
        print(f"gwtrace: {exc}; nothing is lost: run the same command again", file=err)
        return 1
    finally:
        forwarder.close()
    if totals.bad_dirs and not totals.files_found:
        return 1                        # each directory said why in its line: nothing to report beside it
    print(f"gwtrace: backfilled {totals.glideins} glidein(s), {totals.spans} span(s) into {forwarder.destination}"
          f" ({totals.files_read} file(s) read, {totals.files_unchanged} unchanged since the last run, "
          f"{totals.events} new Condor-G event(s)); {totals.problems} file(s) unreadable or block(s) skipped",
          file=err)
    return 1 if totals.problems else 0


def ingest_outputs(paths: List[str], spool: Optional[str], ledger_path: Optional[str], lock_wait: float,
                   err: TextIO, store: Optional[str] = None) -> int:
    """``gwtrace ingest [--spool DIR] [PATH...]``: a dead sidecar's spool, then the blocks in glidein
    output files, each said in one line on ``err``; 0 when all went, 1 when something could not."""
    try:
        status = 0
        if spool:
            status = ingest_spool(spool, err)
        if paths:
            forwarder = Forwarder(store)
            try:
                ledger = Ledger(Path(ledger_path) if ledger_path else default_ledger(), forwarder.destination)
                with ledger.locked(lock_wait):
                    totals, ok = ingest_files(paths, forwarder, ledger, err)
            except LedgerBusy as exc:       # cron: say it once, fail nothing; the next run sends it
                print(f"gwtrace: {exc}; nothing ingested this time, nothing lost", file=err)
                return status
            finally:
                forwarder.close()
            print(f"gwtrace: ingested {totals['blocks']} block(s), {totals['spans']} span(s){_metrics_said(totals)} "
                  f"into {forwarder.destination}; {totals['already']} already ingested, {totals['bad']} corrupt, "
                  f"{totals['failed']} not forwarded", file=err)
            status = status or (0 if ok else 1)
        return status
    except (ControlError, IngestError, OSError) as exc:
        print(f"gwtrace: {exc}", file=err)
        return 1
