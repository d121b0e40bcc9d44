"""A user job's journey: HTCondor job events as spans, job lookup and "why is my job not running?".

``ingest`` reads event logs through ``gwtrace.factory.eventlog`` (HTCondor's
bindings, incrementally, skipping what cannot be read) and ties the rest
together: ``state`` folds events into one JSON-able state per job, ``spans``
turns a state into spans with deterministic ids, ``table`` keeps jobs and log
offsets in the store (registered below as a store part), ``holds`` explains
hold codes, ``why`` and ``match`` rank the reasons a job waits; the command is
``gwtrace.cli.job``.  docs/journey.md describes the mapping.
"""

from gwtrace.store import parts as _store_parts

from .table import SCHEMA

_store_parts.register(_store_parts.StorePart("journey", version=1, schema=SCHEMA))
