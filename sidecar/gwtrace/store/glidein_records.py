"""The glidein records a store keeps, with their hourly cells and summaries.

Records come from the factory's files (``put_glidein_records``) and from the
glideins' own traces (``refresh_glidein_records``, before any read); how a
record is keyed, made from a trace and merged are the factory's rules, and its
summary the analysis's, which they register with the store (``store.parts``).
The SQL is ``glideins`` (records, cells, summaries), ``glidein_parts`` (the
files' records, the Condor-G job's other glideins) and ``glidein_reads``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from . import glidein_parts, glidein_reads, glidein_summaries, glideins, parts
from .connections import Connections
from .writer import Writer

#: traces whose records are made per transaction when they are refreshed
REFRESH_BATCH = 500


class GlideinRecords:
    """The glidein records of a ``TraceStore``: mixed into it, it uses the store's connections and writer,
    its traces (``get_trace``) and its registered parts (``_apply_parts``)."""

    _connections: Connections
    _writer: Writer

    def put_glidein_records(self, records: Sequence[Any]) -> Dict[int, str]:
        """Store the records the factory's files gave, keyed by their glidein's trace id, with their hourly
        cells; return {index in ``records``: trace id} for those whose spans belong in another trace than
        their identity's (a Condor-G-only record of a glidein already known by its live trace).

        A record that names its uuid replaces what was kept of its Condor-G job before (a record, and a trace
        of backfilled spans only). A glidein that also has a live trace gets the two merged on the next
        read (``refresh_glidein_records``); one a node of gwtrace before issue 26 traced under the
        uuid-less id has its spans sent there (``glidein_parts.legacy_traces``).
        """
        moved: Dict[int, str] = {}
        self._apply_parts()
        with self._connections.transaction() as conn:
            pairs = [(glidein_parts.record_key(rec), rec) for rec in records]
            others = glidein_parts.same_jobs(conn, pairs)
            for index, (key, rec) in enumerate(pairs):
                if key not in others:
                    continue                # the common case: no other glidein of its Condor-G job is stored
                self._drop_queued(conn, glidein_parts.queued_of(rec, others[key]))
                host = glidein_parts.traced_of_job(conn, rec, others[key])
                if host is not None:
                    pairs[index] = (host[0], rec)
                    moved[index] = host[1].hex()
            for index, trace in glidein_parts.legacy_traces(conn, records).items():
                pairs[index][1].trace_id = trace.hex()   # its spans join the live trace a pre-uuid node made
                moved[index] = trace.hex()
            keys = [key for key, _ in pairs]
            glidein_parts.drop_files(conn, keys)
            elsewhere = glideins.put_many(conn, pairs, source="files")     # traced glideins' other trace ids
            glideins.mark(conn, glidein_parts.with_live_spans(conn, keys + elsewhere))
        return moved

    def _drop_queued(self, conn: Any, keys: List[bytes]) -> None:
        """What was kept of a glidein under a uuid-less key: its record, and its trace if only backfilled."""
        glideins.forget(conn, keys)
        for key in keys:
            self._writer.drop_backfilled_trace(conn, key)

    def refresh_glidein_records(self) -> int:
        """(Re)make the records of traced glideins whose spans arrived since; return how many were made.

        Ingest only marks such traces (cheap, in its own transaction); the spans are read back and
        turned into records here, before any read of records. A glidein the factory's files were read for
        gets the two merged (``factory/merge.py``); one whose trace holds backfilled spans only keeps the
        files' record as it is (nothing to add, nothing decoded).
        """
        self._apply_parts()
        record_from_trace = parts.rules(parts.GlideinRules).from_trace
        reader = self._connections.reader()
        pending = glideins.dirty(reader)
        if not pending:
            return 0
        # a batch at a time: memory stays flat however many traces arrived
        return sum(self._refresh(reader, pending[at:at + REFRESH_BATCH], record_from_trace)
                   for at in range(0, len(pending), REFRESH_BATCH))

    def _refresh(self, reader: Any, pending: List[bytes], record_from_trace: Any) -> int:
        files = glidein_parts.with_files(reader, pending)
        live = glidein_parts.with_live_spans(reader, [t for t in pending if t in files])
        made: List[Tuple[bytes, Any]] = []
        for trace_id in pending:
            if trace_id in files and trace_id not in live:
                continue                    # backfilled spans only: the files' record stands
            rec = record_from_trace(self.get_trace(trace_id))
            if rec is not None:
                rec.trace_id = trace_id.hex()  # type: ignore[attr-defined]  # where its spans are
                made.append((glidein_parts.record_key(rec, trace_id), rec))
        with self._connections.transaction() as conn:
            known = glidein_parts.files_records(conn, [key for key, _ in made])
            others = glidein_parts.same_jobs(conn, [(key, rec) for key, rec in made if key not in known])
            pairs: Dict[str, List[Tuple[bytes, Any]]] = {"trace": [], "files+trace": []}
            for key, rec in made:
                mine = known.get(key)
                queued = glidein_parts.queued_of(rec, others.get(key, []))
                if mine is None and len(queued) == 1:     # its Condor-G job, kept before its uuid was known
                    mine = glidein_parts.files_records(conn, queued)[queued[0]]
                    self._drop_queued(conn, queued)
                if mine is None:
                    pairs["trace"].append((key, rec))
                else:
                    glidein_parts.keep_files(conn, [(key, mine)])
                    pairs["files+trace"].append((key, _merged(mine, rec)))
            for source, items in pairs.items():
                glideins.put_many(conn, items, source=source)
            glideins.clean(conn, pending)
        return len(made)

    def glidein_records(self, since: Optional[int] = None, until: Optional[int] = None, site: Optional[str] = None,
                        entry: Optional[str] = None, frontend: Optional[str] = None) -> Iterator[Dict[str, Any]]:
        """Stored records (``GlideinRecord.to_dict()`` + ``trace_id``); filters as ``gwtrace glideins``."""
        self.refresh_glidein_records()
        return glideins.records(self._connections.reader(), since=since, until=until, site=site, entry=entry,
                                frontend=frontend)

    def glidein_outcomes(self, since: Optional[int] = None, until: Optional[int] = None
                         ) -> Iterator[Tuple[Any, Any, Any]]:
        """(site, ended, status) of the glideins that ended in [since, until) (the site lights)."""
        self.refresh_glidein_records()
        return glidein_reads.outcomes(self._connections.reader(), since, until)

    def glidein_statuses(self, trace_ids: Sequence[bytes]) -> Dict[str, Tuple[Any, Any]]:
        """trace id (hex) -> (status, failed script) of the glideins whose record those traces are (as stored:
        the search page must stay quick, so traced glideins not yet remade keep their last record)."""
        return glidein_reads.statuses(self._connections.reader(), trace_ids)

    def glidein_page(self, **query: Any) -> Tuple[int, List[Dict[str, Any]]]:
        """(count, records of one page) of the stored glideins: ``store.glidein_reads.page``."""
        self.refresh_glidein_records()
        return glidein_reads.page(self._connections.reader(), **query)

    def glidein_record_texts(self, since: Optional[int] = None, until: Optional[int] = None,
                             site: Optional[str] = None, entry: Optional[str] = None,
                             frontend: Optional[str] = None) -> Iterator[str]:
        """``glidein_records`` as JSON texts, as stored (``gwtrace glideins --format json``)."""
        self.refresh_glidein_records()
        return glidein_reads.record_texts(self._connections.reader(), since=since, until=until, site=site, entry=entry,
                                     frontend=frontend)

    def glidein_summaries(self, since: Optional[int] = None, until: Optional[int] = None,
                          site: Optional[str] = None, entry: Optional[str] = None,
                          frontend: Optional[str] = None,
                          part: Optional[Tuple[Optional[int], Optional[int]]] = None,
                          refresh: bool = True) -> Iterator[List[Any]]:
        """The analysis summaries (``analysis.summary``) of the stored glideins, one at a time; ``part``: a range
        of start keys (``summary_cuts``); ``refresh=False``: the caller made the traced glideins' records."""
        self._apply_parts()
        if refresh:
            self.refresh_glidein_records()
        return glidein_summaries.summaries(self._connections.reader(), part, since=since, until=until, site=site,
                                  entry=entry, frontend=frontend)

    def summary_cuts(self, parts: int, min_part: int, **filters: Any) -> List[int]:
        """Start keys cutting the glideins ``glidein_summaries(**filters)`` gives into parts (``analysis.fold``)."""
        self._apply_parts()
        return glidein_summaries.summary_cuts(self._connections.reader(), parts, min_part, **filters)

    def glidein_entry(self, trace_id: str) -> Optional[str]:
        """The entry of the glidein the trace ``trace_id`` (hex) is the record of: by key, else by scan
        (a traced glidein whose spans are in a trace other than its identity's)."""
        self.refresh_glidein_records()
        reader = self._connections.reader()
        entry = glideins.entry_of(reader, bytes.fromhex(trace_id))
        if entry is None:
            entry = next((row[6] for row in glideins.rows(reader, since=None, until=None, site=None, entry=None,
                                                          frontend=None) if row[0] == trace_id), None)
        return entry

    def glidein_record_rows(self, since: Optional[int] = None, until: Optional[int] = None,
                            site: Optional[str] = None, entry: Optional[str] = None,
                            frontend: Optional[str] = None) -> Iterator[Tuple[Any, ...]]:
        """Light tuples in ``store.glideins.ROW_COLUMNS`` order, no JSON decoded."""
        self.refresh_glidein_records()
        return glideins.rows(self._connections.reader(), since=since, until=until, site=site, entry=entry,
                             frontend=frontend)

    def glidein_series(self, bucket: int, by: Optional[str] = None, since: Optional[int] = None,
                       until: Optional[int] = None, **filters: Optional[str]) -> Dict[Tuple[str, int], Dict[str, float]]:
        """Canonical CPU seconds per (group, bucket start) and category, from the hourly cells."""
        self.refresh_glidein_records()
        return glideins.hours(self._connections.reader(), bucket, by, since, until, **filters)

    def glidein_gwms(self, by: Optional[str] = None, since: Optional[int] = None, until: Optional[int] = None,
                     **filters: Optional[str]) -> Iterator[Tuple[str, Dict[str, Any]]]:
        """(group, GlideinWMS per-glidein figures) of the glideins that ended in [since, until)."""
        self.refresh_glidein_records()
        return glideins.gwms_figures(self._connections.reader(), by, since, until, **filters)


def _merged(files: Dict[str, Any], traced: Any) -> Any:
    """The record the files gave (JSON form) merged with the one the trace gave (``factory/merge.py``)."""
    rules = parts.rules(parts.GlideinRules)
    merged = rules.merge(rules.from_dict(files), traced)
    merged.trace_id = traced.trace_id
    return merged
