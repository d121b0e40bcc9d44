"""Analysis of glidein records: where pilot time goes and what to change (docs/analysis.md).

The store keeps each glidein's summary (``summary``) next to its record, made by
the summarizer registered here (``gwtrace.store.parts``).
"""

from gwtrace.store import parts as _store_parts

from .summary import VERSION, summarize

_store_parts.register(_store_parts.Summarizer(version=VERSION, summarize=summarize))
