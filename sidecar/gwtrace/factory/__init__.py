"""Glidein records from GlideinWMS's own files, and their accounting.

A factory keeps, per glidein, ``job.<cluster>.<proc>.out``/``.err`` and the
Condor-G event logs ``condor_activity_*.log``.  Parsers (``outfile``,
``errfile``, ``xmlresult``, ``startd_history``, ``condorg_log``) feed one
:class:`~gwtrace.factory.record.GlideinRecord` per glidein (``record``,
``collect``); ``gwms_stats`` computes GlideinWMS's own per-glidein figures as
the factory does, ``jobs`` and ``canonical`` the OSG canonical-unit
categories, ``to_trace`` deterministic trace/span ids and spans, ``cli`` the
``gwtrace glideins`` command.  Everything here is pure (files in, values
out): the store, server and CLI wire it in.  docs/accounting.md is the guide.
"""
