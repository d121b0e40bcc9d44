"""Glidein records from GlideinWMS's own files, and their accounting.

A factory keeps, per glidein, ``job.<cluster>.<proc>.out``/``.err`` and the
Condor-G event logs ``condor_activity_*.log``.  Parsers (``outfile``,
``errfile``, ``xmlresult``, ``startd_history``, ``condorg_log``) feed one
:class:`~gwtrace.factory.record.GlideinRecord` per glidein (``record``,
``collect``); ``gwms_stats`` computes GlideinWMS's own per-glidein figures as
the factory does, ``jobs`` and ``canonical`` the OSG canonical-unit
categories, ``to_trace`` deterministic trace/span ids and spans, ``cli`` the
``gwtrace glideins`` command.  Everything here is pure (files in, values
out): the server and CLI wire it in, and the store keeps its records by the
rules registered here (``gwtrace.store.parts``: how a record is keyed, read
back, made from a trace and merged).  docs/accounting.md is the guide.
"""

from gwtrace.store import parts as _store_parts

from .from_trace import record_from_trace
from .merge import merge_records
from .record import GlideinRecord
from .to_trace import glidein_trace_id

_store_parts.register(_store_parts.GlideinRules(
    trace_id_of=glidein_trace_id, from_dict=GlideinRecord.from_dict, from_trace=record_from_trace,
    merge=merge_records,
))
