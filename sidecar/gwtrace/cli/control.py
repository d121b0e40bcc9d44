"""``gwtrace control``: who traces what — list, set and remove rules, explain a decision, read the audit log,
tell a running glidein its level, and ask a running job for the tail of a file (docs/control.md).

Talks to ``gwtrace serve`` (``--server URL``, a bearer token from ``--token``,
``$GWTRACE_CONTROL_TOKEN``, ``$BEARER_TOKEN`` or ``$BEARER_TOKEN_FILE``), or to
a store file directly as an admin (``--store``). Exit status: 0 done, 1
refused or failed (one line saying why), 2 a usage error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any, Dict, List, Optional

from gwtrace.cli.terminal import terminal_text
from gwtrace.controller.rules import LEVELS, SCOPE_FIELDS

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class Usage(ValueError):
    """A bad argument: one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gwtrace control", description="Who traces what: the controller's rules, "
                                "decisions, audit log and back channel (docs/control.md).")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--server", metavar="URL", help="gwtrace serve's URL (e.g. https://gwtrace.example.org)")
    where.add_argument("--store", metavar="FILE", help="work on this store file directly, as an admin")
    p.add_argument("--token", help="bearer token (default: $GWTRACE_CONTROL_TOKEN, $BEARER_TOKEN, $BEARER_TOKEN_FILE)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="the rules in force")
    ls.add_argument("--expired", action="store_true", help="expired rules too")
    st = sub.add_parser("set", help="add a rule: gwtrace control set site=T2_X --level off --reason '...'")
    st.add_argument("scope", nargs="*", metavar="FIELD=VALUE", help=f"fields: {', '.join(SCOPE_FIELDS)}")
    st.add_argument("--level", help=f"{'|'.join(LEVELS)}|none")
    st.add_argument("--ratio", help="sampling ratio 0..1, or none")
    st.add_argument("--operation", metavar="NAME", help="only spans of this name (a Jaeger per-operation strategy; "
                    "sets a ratio only)")
    st.add_argument("--expires", help="how long it lasts: 30m, 2h, 7d (default: never)")
    st.add_argument("--reason", default="", help="why, for the audit log and explain")
    rm = sub.add_parser("rm", help="remove a rule by id")
    rm.add_argument("rule_id", metavar="ID")
    ex = sub.add_parser("explain", help="which rule decides for a glidein or job, and why")
    ex.add_argument("scope", nargs="*", metavar="FIELD=VALUE")
    ex.add_argument("--operation", metavar="NAME", help="also which operation rule gives spans of this name their "
                    "ratio")
    au = sub.add_parser("audit", help="the audit log: every change, command and result")
    au.add_argument("--limit", type=int, default=50)
    au.add_argument("--after", type=int, default=0, help="entries after this sequence number")
    lv = sub.add_parser("level", help="tell a running glidein (or one job on it) to use a level from now on")
    lv.add_argument("key", help="the glidein's live key (gwtrace now --format json: key)")
    lv.add_argument("level", help="|".join(LEVELS))
    lv.add_argument("--job", help="only this job (default: the glidein's own scripts and all its later jobs)")
    tl = sub.add_parser("tail", help="ask a running job for the last bytes of a file in its directory")
    tl.add_argument("key", help="the glidein's live key (gwtrace now --format json: key)")
    tl.add_argument("job", help="the job id, e.g. 123.0")
    tl.add_argument("path", help="a path relative to the job's directory, e.g. _condor_stderr")
    tl.add_argument("--max-bytes", type=int, default=65536)
    tl.add_argument("--wait", type=float, default=120.0, help="seconds to wait for the answer (default 120)")
    return p


def scope_of(items: List[str]) -> Dict[str, str]:
    scope: Dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or key not in SCOPE_FIELDS or not value:
            raise Usage(f"{item!r} is not FIELD=VALUE with a field of {', '.join(SCOPE_FIELDS)}")
        scope[key] = value
    return scope


def duration(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise Usage(f"--expires {text!r} is not a length of time such as 30m, 2h or 7d")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def _number_or_none(text: Optional[str]) -> Any:
    if text is None or text == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise Usage(f"--ratio {text!r} is not a number between 0 and 1, or none") from None


def rule_body(args: argparse.Namespace) -> Dict[str, Any]:
    body: Dict[str, Any] = {"scope": scope_of(args.scope), "reason": args.reason}
    if args.operation is not None:
        body["operation"] = args.operation
    if args.level is not None:
        body["level"] = args.level
    if args.ratio is not None:
        body["sample_ratio"] = _number_or_none(args.ratio)
    if args.expires is not None:
        body["expires"] = time.time() + duration(args.expires)
    return body


def _when(seconds: Optional[float]) -> str:
    return "never" if seconds is None else time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(seconds))


def rule_line(rule: Dict[str, Any]) -> str:
    scope = " ".join(f"{k}={v}" for k, v in rule["scope"].items()) or "(everything)"
    if rule.get("operation") is not None:
        scope += f" operation={rule['operation']}"
    ratio = "-" if rule["sample_ratio"] is None else f"{rule['sample_ratio']:g}"
    return (f"{rule['id']:<6} {scope}  level={rule['level'] or '-'} ratio={ratio} "
            f"expires={_when(rule['expires'])}  by {rule['set_by']} ({rule['role']})"
            + (f"  {rule['reason']}" if rule["reason"] else ""))


def _print(args: argparse.Namespace, data: Any, lines: List[str]) -> None:
    if args.format == "json":
        print(json.dumps(data, indent=2))
    else:
        out = terminal_text(sys.stdout)          # names and reasons are people's text: escaped on a terminal
        for line in lines:
            out.write(line + "\n")


def _run(args: argparse.Namespace, backend: Any) -> int:
    if args.action == "list":
        rules = backend.rules(args.expired)
        _print(args, rules, [rule_line(r) for r in rules] or ["no rules: every glidein and job uses its default"])
    elif args.action == "set":
        rule = backend.set_rule(rule_body(args))
        _print(args, rule, ["set " + rule_line(rule)])
    elif args.action == "rm":
        rule = backend.remove_rule(args.rule_id)
        _print(args, rule, ["removed " + rule_line(rule)])
    elif args.action == "explain":
        out = backend.explain(scope_of(args.scope), args.operation)
        lines = [f"level={out['level'] or '-'} sample_ratio="
                 f"{'-' if out['sample_ratio'] is None else out['sample_ratio']} rule={out['rule'] or '-'}",
                 f"why: {out['why']}"]
        if "operation" in out:
            op = out["operation"]
            lines.append(f"operation {op['name']}: sample_ratio={'-' if op['sample_ratio'] is None else op['sample_ratio']}"
                         f" rule={op['rule'] or '-'}: {op['why']}")
        lines += [f"  {m['rule']['id']:<6} {m['status']}" for m in out["matched"]]
        _print(args, out, lines)
    elif args.action == "audit":
        rows = backend.audit(args.after, args.limit)
        _print(args, rows, [f"{r['seq']:>5} {_when(r['at'])} {r['who']} ({r['role']}) {r['action']} {r['target']}"
                            for r in rows])
    elif args.action == "level":
        queued = backend.queue({"key": args.key, "op": "level", "level": args.level, "job": args.job})
        _print(args, queued, [f"queued {queued['id']}: {args.key} level {args.level}"
                              + (f" for job {args.job}" if args.job else "")
                              + " (sent with the glidein's next snapshot answer)"])
    else:
        return _tail(args, backend)
    return 0


def _tail(args: argparse.Namespace, backend: Any) -> int:
    from gwtrace.controller.client import wait_for

    queued = backend.queue({"key": args.key, "op": "tail", "job": args.job, "path": args.path,
                            "max_bytes": args.max_bytes})
    done = wait_for(backend, queued["id"], args.wait)
    if done["state"] == "pending":
        print(f"gwtrace control: {queued['id']} queued; no answer within {args.wait:g}s (the glidein sends it with "
              f"its next snapshot: gwtrace control audit shows it)", file=sys.stderr)
        return 1
    result = done.get("result") or {}
    if args.format == "json":
        print(json.dumps(done, indent=2))
    elif result.get("ok"):
        terminal_text(sys.stdout).write(result.get("text", ""))
    if not result.get("ok"):
        print(f"gwtrace control: {done['id']} {done['state']}: {result.get('error') or 'no reason given'}",
              file=sys.stderr)
        return 1
    return 0


def main(argv: List[str]) -> int:
    args = build_parser().parse_args(argv)
    # after the arguments: the client loads the store (`--help` and a usage error do not)
    from gwtrace.controller.client import ControlFailed, Local, Remote, find_token

    try:
        if args.store:
            backend: Any = Local(args.store, create=args.action == "set")
        elif args.server:
            backend = Remote(args.server, find_token(args.token))
        else:
            raise Usage("say where the controller is: --server URL (gwtrace serve) or --store FILE")
        return _run(args, backend)
    except Usage as exc:
        print(f"gwtrace control: {exc}", file=sys.stderr)
        return 2
    except ControlFailed as exc:
        print(f"gwtrace control: {exc}", file=sys.stderr)
        return 1
