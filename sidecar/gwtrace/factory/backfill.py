"""``gwtrace ingest --factory-logs``: the glideins of a factory's files, as traces, a batch at a time.

Every glidein a client log directory knows of becomes the trace ``to_trace``
makes of its record, sent like any other ingest input (the embedded store,
or the OTLP endpoint). The ids are derived from the glidein's identity, so a
second run sends spans the store already holds (it keeps one copy) and a
glidein that also ran gwtrace lands in its own trace. Incomplete glideins
are sent too: their root span says why. Into the embedded store, the records
themselves are kept as well (for ``gwtrace account``/``analyze``/``glideins``
without re-reading files).

Why streaming: a factory of 100 000 glideins is some 200 000 files, and a
run that held every record (and its spans) took 1.3 GB for 20 000. Here one
directory is walked at a time and its glideins are made, stored and sent
``BATCH`` at a time; nothing grows with the number of glideins but the list
of one directory's file names.

Why incremental (``book``): a cron job or ``ingest --watch`` runs this every
few minutes, forever. The files read are kept in the book (``seen``), the
Condor-G event logs are followed by byte offset and their events kept
(``states``), so a run reads only new or changed files, and remakes only the
glideins with a new or changed ``.out``/``.err`` or new Condor-G events. A
file is marked read only after its glidein's record and spans are stored: a
run cut short reads it again next time.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, TextIO, Tuple

from gwtrace.export.otlp import to_readable_spans

from . import seen, states
from .collect import ACTIVITY_FILE, JOB_FILE, _entry_of, _read
from .condorg_log import CondorGJob, read_condorg_log
from .errfile import parse_err
from .eventlog import HEAD_BYTES, log_head, read_events
from .outfile import parse_out
from .record import GlideinRecord, build_record
from .ledger import default_ledger
from .to_trace import record_to_spans, resource_attributes

BATCH = 200  # glideins per request and per commit: a few MB at most, few enough round trips
#: events read from a Condor-G log per step (each step commits its events and the log's offset)
CHUNK_EVENTS = 20_000

Key = Tuple[int, int]
Keep = Callable[[Sequence[GlideinRecord]], Optional[Dict[int, str]]]
Send = Callable[[Any], None]   # an ExportTraceServiceRequest (the OTLP modules load only when one is made)


@dataclass
class Totals:
    """What one run did."""

    glideins: int = 0          # records made (and sent)
    spans: int = 0
    files_read: int = 0        # .out/.err parsed
    files_unchanged: int = 0   # .out/.err known, not read again
    files_found: int = 0       # every glidein file seen (.out/.err and Condor-G logs)
    events: int = 0            # new Condor-G events
    batches: int = 0
    problems: int = 0          # lines written on err
    bad_dirs: int = 0          # directories that do not exist or hold no glidein file


def backfill(dirs: List[str], send: Send, err: TextIO,
             keep: Optional[Keep] = None, book: Any = None, settle: float = 0.0, require: bool = True) -> Totals:
    """Send every glidein of ``dirs`` that is new or changed since the book's last run (every glidein
    without a book); one line on ``err`` per file that could not be read, block skipped, or directory that
    does not exist or holds no glidein file.

    ``keep`` receives the records themselves, a batch at a time (the embedded store keeps them for
    accounting) and may answer the trace of those whose spans belong elsewhere than their identity's id
    (``put_glidein_records``). ``book`` (a ``TraceStore`` or ``seen.SideBook``) remembers what was read;
    ``settle``: files modified less than this many seconds ago are left for the next run (``--watch``);
    ``require=False``: a directory without glidein files is no problem (``--watch``: none came back yet).
    """
    totals = Totals()
    if book is not None:
        seen.book_ready(book)
    run = _Run(send, err, keep, book, settle, totals)
    for top in dirs:
        if not os.path.isdir(top):
            run.say(f"{top}: no such directory" if not os.path.exists(top) else f"{top}: not a directory")
            totals.bad_dirs += 1
            continue
        before = totals.files_found
        for dirpath, subdirs, names in os.walk(top):
            subdirs.sort()
            run.directory(os.path.abspath(dirpath), names)
        if totals.files_found == before and require:
            run.say(f"{top}: no glidein file in it (job.C.P.out/.err or condor_activity_*.log, in entry_* "
                    "directories)")
            totals.bad_dirs += 1
    return totals


class _Run:
    """One backfill run: the directories one at a time, their glideins a batch at a time."""

    def __init__(self, send: Send, err: TextIO, keep: Optional[Keep],
                 book: Any, settle: float, totals: Totals) -> None:
        self.send, self.err, self.keep, self.book, self.settle, self.totals = send, err, keep, book, settle, totals
        self.now = time.time()

    def say(self, line: str) -> None:
        self.err.write(f"gwtrace ingest: {line}\n")
        self.totals.problems += 1

    def directory(self, directory: str, names: List[str]) -> None:
        """The glideins of one directory that are new or changed."""
        jobs: Dict[Key, Dict[str, str]] = {}
        logs: List[str] = []
        for name in sorted(names):
            match = JOB_FILE.match(name)
            if match:
                jobs.setdefault((int(match.group(1)), int(match.group(2))), {})[match.group(3)] = \
                    os.path.join(directory, name)
            elif ACTIVITY_FILE.match(name):
                logs.append(os.path.join(directory, name))
        if not jobs and not logs:
            return
        self.totals.files_found += sum(len(files) for files in jobs.values()) + len(logs)
        entry = _entry_of(directory)
        known = seen.in_dir(self.book.reader(), directory) if self.book is not None else {}
        condorg: Optional[Dict[Key, CondorGJob]] = None
        if self.book is not None:
            for log in logs:
                self._follow(directory, entry, log, known.get(log))
            todo = set(states.dirty(self.book.reader(), directory))
        else:
            condorg = {}
            for log in logs:
                try:
                    read_condorg_log(log, condorg)
                except (ValueError, RuntimeError) as exc:
                    self.say(str(exc))
            todo = set(condorg)
        stats, waiting = self._changed(jobs, known, todo)
        keys = sorted(todo - waiting)
        for at in range(0, len(keys), BATCH):
            self._batch(directory, entry, keys[at:at + BATCH], jobs, stats, condorg)

    def _changed(self, jobs: Dict[Key, Dict[str, str]], known: Dict[str, seen.Seen], todo: Set[Key]
                 ) -> Tuple[Dict[str, seen.Seen], Set[Key]]:
        """Add to ``todo`` the glideins with a new or changed file; return the files' stats and the glideins
        whose files are still being written (``settle``)."""
        stats: Dict[str, seen.Seen] = {}
        waiting: Set[Key] = set()
        for key, files in jobs.items():
            for path in files.values():
                try:
                    st = os.stat(path)
                except OSError as exc:
                    self.say(f"{path}: cannot read ({exc.strerror})")
                    continue
                stats[path] = now = seen.Seen.of(st)
                if self.settle and self.now - st.st_mtime < self.settle:
                    waiting.add(key)
                old = known.get(path)
                if old is None or not old.same_file(now):
                    todo.add(key)
                else:
                    self.totals.files_unchanged += 1
        return stats, waiting

    def _follow(self, directory: str, entry: Optional[str], path: str, old: Optional[seen.Seen]) -> None:
        """Read a Condor-G log from where the last run stopped; keep its new events, then its offset."""
        try:
            now = seen.Seen.of(os.stat(path))
            if old is not None and old.same_file(now):
                return
            offset = 0
            if old is not None and old.offset <= now.size and old.head and \
                    log_head(path, int(old.head.split(":")[0] or 0)) == old.head:
                offset = old.offset
            while True:
                result = read_events(path, offset, CHUNK_EVENTS)
                head = log_head(path, min(HEAD_BYTES, result.offset))
                with self.book.transaction() as conn:
                    self.totals.events += states.add_events(conn, directory, entry, result.events)
                    seen.mark(conn, [(path, seen.Seen(now.dev, now.ino, now.size, now.mtime_ns, result.offset,
                                                      head))])
                if result.bad:
                    self.say(f"{path}: {result.bad} damaged event(s) skipped ({result.bad_bytes} bytes)")
                if not result.more or result.offset <= offset:
                    return
                offset = result.offset
        except (ValueError, RuntimeError, OSError) as exc:
            self.say(str(exc) if not isinstance(exc, OSError) else f"{path}: cannot read ({exc.strerror})")

    def _batch(self, directory: str, entry: Optional[str], keys: List[Key], jobs: Dict[Key, Dict[str, str]],
               stats: Dict[str, seen.Seen], condorg: Optional[Dict[Key, CondorGJob]]) -> None:
        """Make, keep and send the records of up to ``BATCH`` glideins; then mark their files read."""
        if condorg is None:
            condorg = states.condorg_jobs(self.book.reader(), directory, keys)
        records: List[GlideinRecord] = []
        read: List[Tuple[str, seen.Seen]] = []
        for key in keys:
            files = jobs.get(key, {})
            out = err = None
            for kind, path in sorted(files.items()):
                errors: List[str] = []
                data = _read(path, errors)
                for line in errors:
                    self.say(line)
                if data is None:
                    continue
                self.totals.files_read += 1
                if path in stats:
                    read.append((path, stats[path]))
                if kind == "out":
                    out = parse_out(data)
                else:
                    err = parse_err(data)
            records.append(build_record(key[0], key[1], out, err, condorg.get(key), entry))
            if err is not None:
                for line in err.skipped:
                    self.say(f"{files['err']}: {line}")
        moved = (self.keep(records) or {}) if self.keep is not None else {}
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.resources import Resource

        batch = []
        for index, rec in enumerate(records):
            spans = record_to_spans(rec, moved.get(index))
            if not spans:
                continue
            batch.extend(to_readable_spans(spans, Resource(resource_attributes(rec))))
            self.totals.glideins += 1
            self.totals.spans += len(spans)
        if batch:
            self.send(encode_spans(batch))
        self.totals.batches += 1
        if self.book is not None:
            with self.book.transaction() as conn:
                seen.mark(conn, read)
                states.clean(conn, directory, keys)


def backfill_book(forwarder: Any) -> Any:   # (a Forwarder) -> a TraceStore or a seen.SideBook
    """Where a backfill remembers what it read: the store it fills, else a file of its own per OTLP
    destination (beside the ledger), so that sending to another collector reads everything again."""
    import hashlib

    if forwarder.store is not None:
        return forwarder.store
    tag = hashlib.sha256(forwarder.destination.encode()).hexdigest()[:12]
    return seen.SideBook(default_ledger().parent / f"backfill-{tag}.db")


def run_backfill(dirs: List[str], forwarder: Any, err: TextIO, settle: float = 0.0, require: bool = True
                 ) -> Totals:
    """One incremental backfill of ``dirs`` into the forwarder's destination (``backfill.backfill``)."""
    book = backfill_book(forwarder)
    try:
        keep = forwarder.store.put_glidein_records if forwarder.store is not None else None
        return backfill(dirs, forwarder.send, err, keep, book, settle, require)
    finally:
        if book is not forwarder.store:
            book.close()
