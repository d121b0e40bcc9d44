"""Glidein records from GlideinWMS's own files, and their accounting.

A factory keeps, per glidein, ``job.<cluster>.<proc>.out``/``.err`` and the
Condor-G event logs ``condor_activity_*.log``.  This package turns them into one
:class:`~gwtrace.factory.record.GlideinRecord` per glidein (``record.py``),
computes GlideinWMS's own per-glidein figures exactly as the factory does
(``gwms_stats.py``), the OSG canonical-unit categories (``canonical.py``) and
deterministic trace/span ids and spans (``to_trace.py``).  Everything here is
pure (files in, values out): the store, server and CLI wire it in.
"""
