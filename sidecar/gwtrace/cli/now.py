"""``gwtrace now``: the glideins alive per site/entry, their phase and jobs; ``--alerts`` for cron.

Exit status with ``--alerts``: 0 no site is red, 1 some site is red (each
printed on a line of its own), 2 the answer could not be made (no store, a
damaged one, a bad option): cron then mails the one line on stderr.
Without ``--alerts`` the status is 0, or 2 on error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, TextIO

from gwtrace.live.health import Rule
from gwtrace.live.now import STOPPED, now_data
from gwtrace.cli import describe
from gwtrace.cli.terminal import terminal_text
from gwtrace.durations import clock_duration


def build_parser() -> argparse.ArgumentParser:
    d = Rule()
    p = argparse.ArgumentParser(prog="gwtrace now", description="What is running now, from the live snapshots.")
    p.add_argument("--store", "--db", dest="store", help="store file (default: ${GWTRACE_HOME:-~/.local/share/gwtrace}/traces.db)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--stale", type=float, metavar="SECONDS",
                   help="a glidein silent this long is 'stopped reporting' (default: 3x its snapshot interval)")
    p.add_argument("--alerts", action="store_true",
                   help="print the sites whose light is red; exit 0 none, 1 some, 2 error (for cron)")
    p.add_argument("--window", type=float, default=d.window_s, metavar="SECONDS",
                   help=f"recent window for site health (default {d.window_s:g})")
    p.add_argument("--baseline-days", type=float, default=d.baseline_days,
                   help=f"the site's baseline: days before the window (default {d.baseline_days:g})")
    p.add_argument("--factor", type=float, default=d.factor,
                   help=f"red when the recent failure rate is this many times the baseline (default {d.factor:g})")
    p.add_argument("--min-jump", type=float, default=d.min_jump,
                   help=f"... and at least this much above it, as a fraction (default {d.min_jump:g})")
    p.add_argument("--min-failures", type=int, default=d.min_failures,
                   help=f"... with at least this many failures in the window (default {d.min_failures})")
    p.add_argument("--chronic", type=float, default=d.chronic,
                   help="amber light (not red) for a site whose failure rate over the window and the baseline "
                        f"together is at least this, as a fraction (default {d.chronic:g})")
    return p


def print_table(data: Dict[str, Any], out: TextIO) -> None:
    totals = data["totals"]
    print(f"{totals['alive']} glidein(s) alive, {totals['jobs_running']} job(s) running, "
          f"{totals['stopped_reporting']} stopped reporting", file=out)
    by_entry: Dict[tuple, List[Dict[str, Any]]] = {}
    for g in data["glideins"]:
        by_entry.setdefault((g["site"] or "", g["entry"] or ""), []).append(g)
    for cell in data["entries"]:
        print(f"\n{cell['site'] or '(no site)'} / {cell['entry'] or '(no entry)'}: {cell['alive']} alive, "
              f"{cell['jobs_running']} job(s) running" +
              (f", {cell['stopped_reporting']} {STOPPED}" if cell["stopped_reporting"] else ""), file=out)
        for g in by_entry.get((cell["site"], cell["entry"]), []):
            if g["stale"]:
                state = f"{STOPPED} (silent {clock_duration(g['last_report_s'])}; was {g['phase']})"
            else:
                state = f"{g['phase']} for {clock_duration(g['phase_s'])}"
            jobs = ", ".join(f"{j['job_id'] or j['name']} ({clock_duration(j['running_s'])})" for j in g["jobs"])
            print(f"  {g['uuid'] or g['key']}  {state}  up {clock_duration(g['age_s'])}" +
                  (f"  jobs: {jobs}" if jobs else "") + (f"  on {g['host']}" if g["host"] else ""), file=out)
    print_factory(data.get("factory") or {}, out)
    print_health(data["health"], out)


def print_factory(factory: Dict[str, Any], out: TextIO) -> None:
    """Glideins per entry as the factory's Condor-G logs say (backfilled: traced or not)."""
    entries = factory.get("entries") or []
    if not entries:
        return
    t = factory["totals"]
    print(f"\nfactory (Condor-G logs): {t['idle']} idle, {t['running']} running, {t['held']} held", file=out)
    for e in entries:
        print(f"  {e['site'] or '(no site)'} / {e['entry'] or '(no entry)'}: {e['idle']} idle, {e['running']} running,"
              f" {e['held']} held", file=out)
        for h in e["held_reasons"]:
            code = "" if h["code"] is None else f" [code {h['code']}/{h['subcode']}]"
            print(f"    held x{h['glideins']}: {h['reason']}{code}", file=out)


def print_health(health: Dict[str, Any], out: TextIO) -> None:
    rule = health["rule"]
    print(f"\nsite health: failure rate of the last {rule['window_s'] / 3600:g} h against the previous "
          f"{rule['baseline_days']:g} days", file=out)
    if not health["sites"]:
        print("  no glidein ended in that time", file=out)
    for s in health["sites"]:
        light = {"red": "RED  ", "amber": "AMBER"}.get(s.get("light", ""), "green")
        print(f"  {light} {s['site']}: {s['recent_failed']}/{s['recent_glideins']} failed now "
              f"({s['recent_rate']:.0%}), baseline {s['baseline_failed']}/{s['baseline_glideins']} "
              f"({s['baseline_rate']:.0%})" + (f": {s['why']}" if s.get("amber") else ""), file=out)


def main(argv: Optional[List[str]] = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    err = terminal_text(err)
    if args.format != "json":
        out = terminal_text(out)                # worker text: control characters escaped (cli/terminal.py)
    try:
        from gwtrace.store import TraceStore, default_store_path

        rule = Rule(window_s=args.window, baseline_days=args.baseline_days, factor=args.factor,
                    min_jump=args.min_jump, min_failures=args.min_failures, chronic=args.chronic)
        with TraceStore(args.store or default_store_path(), create=False) as store:
            data = now_data(store, stale_s=args.stale, rule=rule)
    except Exception as exc:  # noqa: BLE001 - cron needs a status and one line, never a traceback
        print(f"gwtrace now: {describe(exc)}", file=err)
        return 2
    if args.format == "json":
        json.dump(data, out, indent=1, sort_keys=True)
        out.write("\n")
    elif not args.alerts:
        print_table(data, out)
    red = [s for s in data["health"]["sites"] if s["red"]]
    if args.alerts:
        if args.format != "json":
            for s in red:
                print(f"RED {s['site']}: {s['why']}", file=out)
            if not red:
                print("no red light", file=out)
        return 1 if red else 0
    return 0
