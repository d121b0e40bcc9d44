"""A user job's journey: HTCondor job events as spans, job lookup and "why is my job not running?".

``eventlog`` reads event logs with HTCondor's bindings (incrementally, skipping
what cannot be read), ``state`` folds events into one JSON-able state per
job, ``spans`` turns a state into spans with deterministic ids, ``table``
keeps jobs and log offsets in the store, ``ingest`` ties them together,
``holds`` explains hold codes, ``why`` ranks the reasons a job waits and
``cli`` is ``gwtrace job``.  docs/journey.md describes the mapping.
"""

from gwtrace.store import parts as _store_parts

from .table import SCHEMA

_store_parts.register(_store_parts.StorePart("journey", version=1, schema=SCHEMA))
