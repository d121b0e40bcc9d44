"""``gwtrace job ID [--why] [--format json]``: a job's journey as a tree, its current state, and why it waits.

A job id that matches nothing, or a TRACEPARENT whose trace is not stored,
is one clear line and exit 1 (the command dispatcher's error handler). The journey and the
reasons are made in ``gwtrace.journey`` (``view``, ``why``); this module prints them.
Several jobs matching a bare ``cluster.proc`` (several schedds) are listed,
newest first, and the newest is shown.
"""

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, TextIO

from gwtrace.cli.show import failure_lines
from gwtrace.cli.terminal import printable, terminal_text
from gwtrace.durations import wait_duration


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gwtrace job", description="A user job's journey, and why it is not running.")
    p.add_argument("job_id", help="cluster.proc, cluster.proc@schedd, a GlobalJobId or a TRACEPARENT")
    p.add_argument("--why", action="store_true", help="for an idle or held job: ranked reasons, with evidence")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--store", metavar="PATH", help="the store (default: the one `gwtrace serve` reads)")
    p.add_argument("--now", type=float, help=argparse.SUPPRESS)   # tests: a fixed "now" (epoch seconds)
    return p


def _when(epoch: Optional[float]) -> str:
    if epoch is None:
        return "?"
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


_SHOWN = ("hold.code", "hold.subcode", "hold.label", "hold.suggestion", "htcondor.slot", "glidein.name",
          "glidein.site", "host.name", "htcondor.run.end_reason", "process.exit.code", "htcondor.exit_signal",
          "htcondor.aborted_reason", "htcondor.memory_usage_mb", "htcondor.transfer.queued_s")


def _span_line(node: Dict[str, Any]) -> str:
    attrs = node["attributes"]
    bits = [f"{k}={attrs[k]}" for k in _SHOWN if k in attrs and k != "hold.suggestion"]
    if node["open"] and node.get("elapsed_s") is not None:
        text = f"{node['name']}  {wait_duration(node['elapsed_s'])} so far (open)"
    else:
        text = f"{node['name']}  {wait_duration(node['duration_s'])}" + (" (open)" if node["open"] else "")
    if node["status"] == "error":
        text += "  ERROR"
    if bits:
        text += "  [" + ", ".join(bits) + "]"
    if attrs.get("hold.reason"):
        text += f"  reason: {attrs['hold.reason']}"
    glidein = node.get("glidein")
    if glidein and glidein.get("known"):
        text += (f"  glidein at {glidein.get('site') or '?'}: started {_when(glidein.get('started'))},"
                 f" validated {_when(glidein.get('validated'))}")
    return text


def _failure_lines(node: Dict[str, Any], depth: int, out: TextIO) -> None:
    """Under a failed step: where it failed and its stderr's last lines (as `gwtrace show` prints them)."""
    for text in failure_lines(node):
        out.write("  " * (depth + 2) + printable(text) + "\n")


def render_journey(data: Dict[str, Any], out: TextIO) -> None:
    job, now = data["job"], data["current"]
    out.write(f"job {job['id']}@{job['schedd'] or '?'}"
              + (f"  ({job['global_id']})" if job.get("global_id") else "")
              + f"  owner {job.get('owner') or '?'}  trace {job['trace_id']}\n")
    state = f"{now['status']}"
    if now.get("since") is not None:
        state += f" since {_when(now['since'])}"
        if now["status"] in ("idle", "held", "running"):
            state += f" ({wait_duration(now['for_s'])})"
    if now.get("exit"):
        state += "  " + ", ".join(f"exit {k} {v}" for k, v in now["exit"].items())
    out.write(f"state: {state}\n")
    if now.get("hold_reason"):
        out.write(f"hold reason: {now['hold_reason']}\n")
    children: Dict[str, List[Dict[str, Any]]] = {}
    ids = {n["span_id"] for n in data["spans"]}
    roots = []
    for node in data["spans"]:
        (children.setdefault(node["parent"], []) if node["parent"] in ids else roots).append(node)

    def walk(node: Dict[str, Any], depth: int) -> None:
        out.write("  " * depth + _span_line(node) + "\n")
        if node["status"] == "error":
            _failure_lines(node, depth, out)
        for child in children.get(node["span_id"], []):
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    if any(node["open"] for node in data["spans"]):
        out.write("(open: no event has ended it yet; its time is counted until now)\n")


def render_why(data: Dict[str, Any], out: TextIO) -> None:
    reasons = data["reasons"]
    out.write("why (most likely first):\n" if reasons else "why: nothing to say (see missing evidence)\n")
    for reason in reasons:
        out.write(f" {reason['rank']}. {reason['title']}\n")
        for line in reason["evidence"]:
            out.write(f"      - {line}\n")
        if reason.get("advice"):
            out.write(f"      what to do: {reason['advice']}\n")
    if data["missing"]:
        out.write("missing evidence:\n")
        for line in data["missing"]:
            out.write(f"    - {line}\n")


def main(argv: Optional[List[str]] = None, stdout: Optional[TextIO] = None) -> int:
    out = stdout or sys.stdout
    args = build_parser().parse_args(argv)
    # the store and what reads it load after the arguments, not for `--help` (tests/test_cli_imports.py)
    from gwtrace.analysis.resources import figure_lines, job_resources
    from gwtrace.journey.view import find_jobs, journey
    from gwtrace.journey.why import why
    from gwtrace.store import TraceStore

    if args.format != "json":
        out = terminal_text(out)                # worker text: control characters escaped (cli/terminal.py)
    now = args.now if args.now is not None else time.time()
    with TraceStore(args.store, create=False) as store:
        states = find_jobs(store, args.job_id)
        state = states[0]
        data = journey(store, state, now)
        if len(states) > 1:
            data["others"] = [f"{s['cluster']}.{s['proc']}@{s['schedd']}" for s in states[1:]]
        if args.why:
            data["why"] = why(store, state, now)
        data["resources"] = job_resources(store, state, now, with_charts=False)
    if args.format == "json":
        json.dump(data, out, indent=1, default=str)
        out.write("\n")
        return 0
    if data.get("others"):
        out.write(f"({len(states)} jobs match {args.job_id}; the newest is shown, others: "
                  f"{', '.join(data['others'])})\n")
    render_journey(data, out)
    for line in figure_lines(data["resources"]["figures"]):
        out.write(f"resources: {line}\n")
    if args.why:
        render_why(data["why"], out)
    return 0
