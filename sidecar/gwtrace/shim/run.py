"""``gwtrace run`` and ``gwtrace span``: tracing commands that were not written for it.

``gwtrace run [--name NAME] [--level scripts|functions|commands] [--] CMD [ARGS...]``
(its options: ``gwtrace.cli.run``) runs CMD as the root span of a trace and points ``BASH_ENV`` at
``gwtrace-auto.sh``, so that every bash below it is traced without a change
(docs/shim.md). ``gwtrace span NAME [KEY=VALUE...] -- CMD [ARGS...]`` is one
span around one command, for shells that have no BASH_ENV (sh, dash, busybox,
tcsh) and any other language.

Both are transparent wrappers: CMD inherits stdin, stdout, stderr and every
other descriptor unchanged; we print nothing while it runs; its exit status
is ours, and a CMD killed by a signal makes us die of the same signal. This
module imports nothing heavy: ``gwtrace span`` costs one Python start.
"""


from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from gwtrace.shim.context import Span, context_or_warn, EventLog
from gwtrace.shim.sink import Sink
from gwtrace.shim.supervise import ExecError, finish, run_command

AUTO_LIB = "gwtrace-auto.sh"
#: gwtrace-auto.sh loads the others from its own directory when needed.
AUTO_LIBS = (AUTO_LIB, "gwtrace-auto-fn.sh", "gwtrace-auto-frames.sh", "gwtrace-auto-cmd.sh", "gwtrace-auto-util.sh",
             "gwtrace-auto-extra.sh", "gwtrace-auto-benv.sh", "gwtrace-auto-top.sh", "gwtrace-auto-argv.sh")
#: Shipped when built (``make accel``): the auto layer's accelerator.
AUTO_OPTIONAL = ("gwtrace-accel.so",)

def auto_lib_path(work_dir: Optional[str]) -> Optional[str]:
    """gwtrace-auto.sh as a file bash can source. Inside a zipapp it is copied
    (with the files it loads) into WORK_DIR, the sidecar's private directory."""
    # start-up cost: `gwtrace run` imports only what it uses before it runs CMD
    from gwtrace import bashlib

    if not os.path.isfile(os.path.join(bashlib.HERE, AUTO_LIB)) and not work_dir:
        return None
    try:
        return bashlib.real_path(AUTO_LIBS, work_dir, optional=AUTO_OPTIONAL)
    except (OSError, ValueError):
        return None


def check_accelerator(layer: str, command: Sequence[str], environ: Dict[str, str]) -> None:
    """The accelerator's load check (gwtrace/shim/accel.py) for the bash binaries COMMAND is likely
    to run, before it runs: a traced bash loads only a copy verified for its binary. Once per bash
    binary and library (then a few stat calls); a failure here only leaves the shell code to work."""
    if environ.get("GWTRACE_ACCEL") == "0":
        return
    try:
        # start-up cost: `gwtrace run` imports only what it uses before it runs CMD
        from gwtrace.shim import accel

        accel.prepare(layer, accel.candidate_bashes(command, environ))
    except Exception:  # noqa: BLE001 - tracing trouble never stops the command
        pass


# --- entry points -----------------------------------------------------------

def child_environment(environ: Dict[str, str], sink_env: Dict[str, str], span: Span,
                      level: str, auto_lib: Optional[str]) -> Dict[str, str]:
    """CMD's environment: ours, the sidecar's GWTRACE_*, the root span as
    TRACEPARENT, BASH_ENV on gwtrace-auto.sh (the user's BASH_ENV kept in
    GWTRACE_AUTO_BASH_ENV, which gwtrace-auto.sh sources)."""
    env = dict(environ)
    env.update(sink_env)
    if span.sampled:
        env["TRACEPARENT"] = span.traceparent
    if auto_lib:
        user_bash_env = environ.get("BASH_ENV")
        if user_bash_env and os.path.basename(user_bash_env) != AUTO_LIB:
            env["GWTRACE_AUTO_BASH_ENV"] = user_bash_env
        env["BASH_ENV"] = auto_lib
        env["GWTRACE_AUTO_LEVEL"] = level
        if span.sampled:      # CMD, if it is bash, is the root span: no script span of its own
            env["GWTRACE_AUTO_ROOT"] = f"{os.getpid()}:{span.span_id}"
    env.pop("GWTRACE_AUTO_OPEN", None)
    if not (auto_lib and span.sampled):
        env.pop("GWTRACE_AUTO_ROOT", None)
    return env


def register_stderr(directory: Optional[str], span: Span) -> Dict[str, object]:
    """Tell the sidecar in DIRECTORY where CMD's stderr goes, when it is a regular file (a
    batch job's, `2>log`): for a span that fails below ours it reads the file's last lines
    (gwtrace/sidecar/failure.py). A terminal or a pipe is left as it is: nothing of CMD's
    output passes through us. The attributes for our span's end: the sidecar forgets the
    registration when our span ends."""
    if not directory or not span.sampled:
        return {}
    # start-up cost: `gwtrace run` imports only what it uses before it runs CMD
    from gwtrace.sidecar.failure import REGISTERED, register, stderr_of_fd

    path = stderr_of_fd(2)
    try:
        size: Optional[int] = os.fstat(2).st_size
    except OSError:
        size = None
    if path and register(directory, span.trace_id, span.span_id, path, size):
        return {REGISTERED: True}
    return {}


def _run_in_span(span: Span, command: List[str], env: Dict[str, str], verb: str,
                 sink: Optional[Sink] = None, directory: Optional[str] = None) -> int:
    """Run CMD, end its span with CMD's exit, stop a private sidecar; CMD's status."""
    noted = register_stderr(directory, span)
    try:
        outcome = run_command(command, env)
    except ExecError as exc:
        span.end(str(exc.exit_code), dict(noted, **{"error.type": exc.strerror}))
        _stop(sink)
        print(f"gwtrace {verb}: {exc.message()}", file=sys.stderr)
        return exc.exit_code
    status, attributes = outcome.span_end()
    span.end(status, dict(noted, **attributes))
    _stop(sink)
    return finish(outcome)


def _untraced(command: List[str], verb: str) -> Optional[int]:
    """CMD's status when tracing is disabled (CMD ran plain); None to trace it."""
    environ = dict(os.environ)
    if _disabled(environ):
        return _run_plain(command, environ, verb)
    return None


def trace_run(args: Any, describe: Callable[[BaseException], str]) -> int:
    """``gwtrace run``: CMD (``args.command``) as the root span ``args.name`` (default: its program), bash
    below it traced at ``args.level``; CMD's status. ``describe`` words a tracing failure for its one line."""
    status = _untraced(args.command, "run")
    if status is not None:
        return status
    environ = dict(os.environ)
    sink: Optional[Sink] = None
    try:
        sink = Sink.acquire(environ)
    except Exception as exc:  # noqa: BLE001 - tracing trouble never stops the command
        print(f"gwtrace run: tracing off: {describe(exc)}", file=sys.stderr)
    sink_env = dict(sink.env) if sink else {}
    log = EventLog.from_environ(dict(environ, **sink_env), "run") if sink else EventLog(None)
    name = args.name or os.path.basename(args.command[0])
    span = Span(log, name, context_or_warn(environ, "run"),
                {"gwtrace.kind": "run", "process.executable.name": os.path.basename(args.command[0]),
                 "gwtrace.auto.level": args.level})
    try:
        auto = auto_lib_path(sink.directory if sink else None) if sink else None
    except OSError:
        auto = None
    if auto:
        check_accelerator(os.path.dirname(auto), args.command, environ)
    env = child_environment(environ, sink_env, span, args.level, auto)
    return _run_in_span(span, args.command, env, "run", sink, sink.directory if sink else None)


def _disabled(environ: Dict[str, str]) -> bool:
    """GWTRACE_DISABLED=1 or OTEL_SDK_DISABLED=true: run the command, trace nothing."""
    return environ.get("GWTRACE_DISABLED") == "1" or environ.get("OTEL_SDK_DISABLED", "").lower() == "true"


def _run_plain(command: List[str], environ: Dict[str, str], verb: str) -> int:
    try:
        return finish(run_command(command, environ))
    except ExecError as exc:
        print(f"gwtrace {verb}: {exc.message()}", file=sys.stderr)
        return exc.exit_code


def _stop(sink: Optional["Sink"]) -> None:
    if sink is None:
        return
    try:
        sink.stop()
    except Exception as exc:  # noqa: BLE001 - the command's status matters more
        print(f"gwtrace run: could not stop the sidecar: {exc}", file=sys.stderr)
    except KeyboardInterrupt:   # a ^C while the sidecar flushes: the command's status still wins
        print("gwtrace run: interrupted while stopping the sidecar; its events stay in "
              f"{sink.directory}", file=sys.stderr)


def trace_span(args: Any) -> int:
    """``gwtrace span``: the span ``args.name`` with ``args.attributes`` around ``args.command``; needs no
    running sidecar (the event log is the transport); with no GWTRACE_SOCKET/GWTRACE_DIR it only runs CMD."""
    status = _untraced(args.command, "span")
    if status is not None:
        return status
    environ = dict(os.environ)
    log = EventLog.from_environ(environ, "span")
    attributes: Dict[str, object] = {"gwtrace.kind": "span",
                                     "process.executable.name": os.path.basename(args.command[0])}
    attributes.update(args.attributes)       # format_event redacts secrets (redact.py)
    span = Span(log, args.name, context_or_warn(environ, "span") if log.path else None, attributes)
    env = dict(environ)
    if log.path and span.sampled:
        env["TRACEPARENT"] = span.traceparent
    # start-up cost: `gwtrace run` imports only what it uses before it runs CMD
    from gwtrace.shim.sink import sidecar_dir

    return _run_in_span(span, args.command, env, "span", directory=sidecar_dir(environ) if log.path else None)
