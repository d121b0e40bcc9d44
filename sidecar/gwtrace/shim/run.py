"""``gwtrace run`` and ``gwtrace span``: tracing commands that were not written for it.

``gwtrace run [--name NAME] [--level scripts|functions|commands] [--] CMD [ARGS...]``
runs CMD as the root span of a trace and points ``BASH_ENV`` at
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

import io
import os
import shlex
import signal
import sys
import time
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from gwtrace.wire.events import escape, format_event, is_hex_id

LEVELS = ("scripts", "functions", "commands")
DEFAULT_LEVEL = "functions"
AUTO_LIB = "gwtrace-auto.sh"
#: gwtrace-auto.sh loads the others from its own directory when needed.
AUTO_LIBS = (AUTO_LIB, "gwtrace-auto-fn.sh", "gwtrace-auto-util.sh", "gwtrace-auto-extra.sh", "gwtrace-auto-benv.sh")

#: Signals passed on to CMD. Keyboard signals (INT, QUIT) and HUP reach CMD
#: directly when we share a terminal's foreground process group; sending them
#: again would deliver them twice, so then they are not forwarded.
FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
TERMINAL = ("SIGINT", "SIGQUIT", "SIGHUP")
#: Dispositions Python changed at start-up; CMD gets the defaults back.
RESET_IN_CHILD = ("SIGPIPE", "SIGXFSZ", "SIGXFZ")


class UsageError(ValueError):
    """Bad command line: one line on stderr, exit 2."""


class HelpRequested(Exception):
    """-h/--help: the help on stdout, exit 0."""


RUN_USAGE = "usage: gwtrace run [--name NAME] [--level scripts|functions|commands] [--] CMD [ARGS...]"
RUN_HELP = f"""{RUN_USAGE}

Run CMD as the root span of a new trace (or a child of $TRACEPARENT); every bash
below it is traced through BASH_ENV, other programs get TRACEPARENT. CMD's
streams, exit status and signals are its own. The root span is named after
CMD's program (never an argument).

options (before CMD; CMD's own options are never taken for these):
  --name NAME     name of the root span (default: CMD's basename)
  --level L       what bash children record: scripts, functions (default) or
                  commands ($GWTRACE_AUTO_LEVEL)
  -h, --help      this help

Spans go to the sidecar of $GWTRACE_SOCKET/$GWTRACE_DIR if one runs, else to a
private sidecar that exports (OTEL_EXPORTER_OTLP_* or the embedded store) and
stops when CMD ends; spans it could not deliver stay in its directory, and
gwtrace run prints the `gwtrace ingest --spool DIR` command that sends them.
GWTRACE_DISABLED=1 or OTEL_SDK_DISABLED=true: CMD runs untraced.
"""
SPAN_USAGE = "usage: gwtrace span NAME [KEY=VALUE...] -- CMD [ARGS...]"
SPAN_HELP = f"""{SPAN_USAGE}

One span named NAME around one command, for any shell (sh, dash, busybox,
tcsh) or language: a child of $TRACEPARENT, written to the event log of
$GWTRACE_SOCKET/$GWTRACE_DIR (no sidecar needed to run); CMD gets the span as
TRACEPARENT. CMD's streams, exit status and signals are its own. Attributes
whose key or value holds a secret are written as [REDACTED] (docs/protocol.md).
Without an event log, or with GWTRACE_DISABLED=1, CMD only runs.

  -h, --help      this help (as the first argument)
"""


class RunArgs(NamedTuple):
    name: Optional[str]
    level: str
    command: List[str]


class SpanArgs(NamedTuple):
    name: str
    attributes: Dict[str, str]
    command: List[str]


class Context(NamedTuple):
    """The W3C context a span joins: trace id, parent span id ('' = root), flags."""

    trace_id: str
    parent_id: str
    flags: str
    tracestate: str


# --- argument parsing -------------------------------------------------------

def parse_run_args(argv: Sequence[str]) -> RunArgs:
    """``[--name NAME] [--level L] [--] CMD [ARGS...]``; options stop at CMD,
    so CMD's own options are never taken for ours."""
    name: Optional[str] = None
    level = os.environ.get("GWTRACE_AUTO_LEVEL") or DEFAULT_LEVEL
    args = list(argv)
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt == "--":
            break
        key, eq, value = opt.partition("=")
        if key in ("--name", "--level"):
            if not eq:
                if not args:
                    raise UsageError(f"{key} needs a value")
                value = args.pop(0)
            if key == "--name":
                name = value
            else:
                level = value
        elif opt in ("-h", "--help"):
            raise HelpRequested(RUN_HELP)
        else:
            raise UsageError(f"unknown option {opt!r} (usage: gwtrace run [--name NAME] [--level L] [--] CMD [ARGS...])")
    if level not in LEVELS:
        raise UsageError(f"--level must be one of {', '.join(LEVELS)}, not {level!r}")
    if not args:
        raise UsageError("no command given (usage: gwtrace run [--name NAME] [--level L] [--] CMD [ARGS...])")
    if name is not None and not name.strip():
        raise UsageError("--name must not be empty")
    return RunArgs(name, level, args)


def parse_span_args(argv: Sequence[str]) -> SpanArgs:
    """``NAME [KEY=VALUE...] -- CMD [ARGS...]``: the ``--`` is required, so that
    an attribute can never be mistaken for the command."""
    args = list(argv)
    usage = SPAN_USAGE
    if args and args[0] in ("-h", "--help"):
        raise HelpRequested(SPAN_HELP)
    if not args:
        raise UsageError(usage)
    if "--" not in args:
        raise UsageError(f"missing '--' before the command ({usage})")
    cut = args.index("--")
    head, command = args[:cut], args[cut + 1:]
    if not head or not head[0].strip() or head[0].startswith("-"):
        raise UsageError(f"a span name comes first ({usage})")
    if not command:
        raise UsageError(f"no command after '--' ({usage})")
    attributes: Dict[str, str] = {}
    for item in head[1:]:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"attribute {item!r} is not KEY=VALUE")
        attributes[key] = value
    return SpanArgs(head[0], attributes, command)


# --- context and events -----------------------------------------------------

def incoming_context(environ: Dict[str, str]) -> Optional[Context]:
    """TRACEPARENT/TRACESTATE from the environment, or None if absent or
    invalid (then the span starts a new trace, as the library does)."""
    tp = environ.get("TRACEPARENT", "").strip()
    parts = tp.split("-")
    if len(parts) < 4 or len(parts[0]) != 2 or parts[0] == "ff":
        return None
    version, trace_id, span_id, flags = parts[0], parts[1], parts[2], parts[3]
    if version == "00" and len(parts) != 4:
        return None
    if not (all(c in "0123456789abcdef" for c in version + flags) and len(flags) == 2):
        return None
    if not (is_hex_id(trace_id, 32) and is_hex_id(span_id, 16)):
        return None
    return Context(trace_id, span_id, f"{int(flags, 16) & 3:02x}", environ.get("TRACESTATE", ""))


def context_or_warn(environ: Dict[str, str], verb: str) -> Optional[Context]:
    """incoming_context, with one warning line when a TRACEPARENT is set but
    invalid (the span then starts a new trace, as the library does)."""
    context = incoming_context(environ)
    raw = environ.get("TRACEPARENT", "")
    if context is None and raw.strip():
        shown = raw if len(raw) <= 80 and raw.isprintable() else repr(raw[:80])
        print(f"gwtrace {verb}: warning: ignoring invalid TRACEPARENT {shown}: starting a new trace",
              file=sys.stderr)
    return context


def new_id(nbytes: int) -> str:
    """A random id, never all zero (W3C)."""
    while True:
        value = os.urandom(nbytes).hex()
        if value.strip("0"):
            return value


def now_us() -> int:
    return time.time_ns() // 1000


class EventLog:
    """Appends protocol lines to the sidecar's event log (one write per line,
    O_APPEND, as the bash library does). Failures are swallowed: tracing
    must never change what the command does."""

    def __init__(self, path: Optional[str], verb: str = "span") -> None:
        self.path = path
        self.verb = verb
        self.warned = False

    @classmethod
    def from_environ(cls, environ: Dict[str, str], verb: str = "span") -> "EventLog":
        url = environ.get("GWTRACE_SOCKET") or (
            "file://" + os.path.join(environ["GWTRACE_DIR"], "events.log") if environ.get("GWTRACE_DIR") else "")
        return cls(url[len("file://"):] if url.startswith("file://") and len(url) > 7 else None, verb)

    def write(self, line: bytes) -> None:
        if not self.path:
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            self._warn(exc)
            return
        try:
            os.write(fd, line)
        except OSError as exc:
            self._warn(exc)
        finally:
            os.close(fd)

    def _warn(self, exc: OSError) -> None:
        """One line on our stderr (the user ran a gwtrace command), once."""
        if not self.warned:
            self.warned = True
            print(f"gwtrace {self.verb}: warning: cannot write the event log {self.path}: "
                  f"{exc.strerror or exc}; this span is not recorded", file=sys.stderr)


class Span:
    """One span written as B and E lines: begun before CMD starts, ended after
    it exits, with CMD's exit status (or signal)."""

    def __init__(self, log: EventLog, name: str, context: Optional[Context],
                 attributes: Dict[str, object]) -> None:
        self.log = log
        self.span_id = new_id(8)
        if context is None:
            self.trace_id, parent, remote, self.flags, state = new_id(16), "-", "0", "01", ""
        else:
            self.trace_id, parent, remote, self.flags, state = (
                context.trace_id, context.parent_id, "1", context.flags, context.tracestate)
        self.sampled = int(self.flags, 16) & 1 == 1
        self.tracestate = state
        if self.sampled:
            self.log.write(format_event("B", now_us(), os.getpid(), self.trace_id, self.span_id,
                                        parent, remote, self.flags, escape(state) or "-", escape(name),
                                        attributes=attributes))

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"

    def end(self, status: str, attributes: Optional[Dict[str, object]] = None) -> None:
        if self.sampled:
            self.log.write(format_event("E", now_us(), os.getpid(), self.trace_id, self.span_id,
                                        status, attributes=attributes))


# --- running the command ----------------------------------------------------

class Outcome(NamedTuple):
    """How CMD ended: exit code, or the signal that killed it."""

    code: int
    signal: int = 0

    @property
    def shell_status(self) -> int:
        """What a shell shows as $?: the exit code, or 128 + the signal."""
        return 128 + self.signal if self.signal else self.code

    def span_end(self) -> Tuple[str, Dict[str, object]]:
        """The E event's status field and attributes."""
        if self.signal:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = str(self.signal)
            return str(128 + self.signal), {"process.exit.signal": name}
        return str(self.code), {}


def _in_terminal_foreground() -> bool:
    """True if we (and so CMD) are in the terminal's foreground process group,
    where keyboard signals reach CMD without our help."""
    for fd in (0, 1, 2):
        try:
            return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


def run_command(command: List[str], env: Dict[str, str]) -> Outcome:
    """Fork and exec CMD with every descriptor we inherited (none of our own:
    Python opens its files close-on-exec), forward signals, wait for it."""
    skip = TERMINAL if _in_terminal_foreground() else ()
    read_fd, write_fd = os.pipe()        # reports an exec failure (errno), then closes on exec
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read_fd)
            os.set_inheritable(write_fd, False)
            for name in RESET_IN_CHILD:   # as subprocess does: Python ignores these
                if hasattr(signal, name):
                    signal.signal(getattr(signal, name), signal.SIG_DFL)
            os.execvpe(command[0], command, env)
        except OSError as exc:
            os.write(write_fd, str(exc.errno).encode())
        finally:
            os._exit(127)
    os.close(write_fd)
    previous = {}

    def forward(signum: int, frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for name in FORWARDED:
        if name in skip or not hasattr(signal, name):
            continue
        signum = getattr(signal, name)
        previous[signum] = signal.signal(signum, forward)
    for name in skip:
        if hasattr(signal, name):
            signum = getattr(signal, name)
            previous[signum] = signal.signal(signum, signal.SIG_IGN)
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            failure = pipe.read()
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except ChildProcessError:
                return Outcome(127)
            except InterruptedError:  # pragma: no cover - PEP 475 retries for us
                continue
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if failure:
        errno_value = int(failure or b"0")
        raise ExecError(command[0], errno_value)
    if os.WIFSIGNALED(status):
        return Outcome(128 + os.WTERMSIG(status), os.WTERMSIG(status))
    return Outcome(os.WEXITSTATUS(status))


class ExecError(OSError):
    """CMD could not be started: 127 if not found, 126 otherwise (as shells do)."""

    def __init__(self, command: str, errno_value: int) -> None:
        super().__init__(errno_value, os.strerror(errno_value))
        self.command = command

    @property
    def exit_code(self) -> int:
        import errno

        return 127 if self.errno == errno.ENOENT else 126

    def message(self) -> str:
        if self.exit_code == 127:
            return f"{self.command}: command not found"
        return f"{self.command}: {self.strerror}"


def finish(outcome: Outcome) -> int:
    """Our exit: CMD's code, or death by CMD's signal where possible."""
    if outcome.signal:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # CMD dumped its own core
        except (ImportError, OSError, ValueError):
            pass
        try:
            if outcome.signal != signal.SIGKILL:
                signal.signal(outcome.signal, signal.SIG_DFL)
            os.kill(os.getpid(), outcome.signal)
            time.sleep(1)                 # delivered before we get here, normally
        except (OSError, ValueError):
            pass
    return outcome.shell_status


# --- the sidecar ------------------------------------------------------------

class Sink:
    """Where spans go: a reachable sidecar, or a private one we start and stop."""

    def __init__(self, env: Dict[str, str], directory: Optional[str], private: bool) -> None:
        self.env = env
        self.directory = directory
        self.private = private

    @classmethod
    def acquire(cls, environ: Dict[str, str]) -> "Sink":
        """The sidecar named by GWTRACE_SOCKET/GWTRACE_DIR if one runs on it,
        else a private one in a new directory."""
        directory = _sidecar_dir(environ)
        if directory and _sidecar_running(directory):
            return cls({}, directory, private=False)
        from gwtrace.sidecar import control

        out = io.StringIO()
        private_dir = _mkdtemp(environ)
        try:
            control.start(private_dir, None, out)
        except BaseException:
            _remove_tree(private_dir)
            raise
        return cls(_parse_exports(out.getvalue()), private_dir, private=True)

    def stop(self) -> None:
        """Stop the private sidecar (it flushes first); remove its directory
        unless spans are still waiting there for delivery."""
        if not self.private or not self.directory:
            return
        from gwtrace.sidecar import control
        from gwtrace.sidecar.statedir import Spool

        control.stop(self.directory, 120.0, io.StringIO())
        status = Spool(self.directory).read_status()
        counters = status.get("counters", {})
        if not counters.get("spans_pending") and not counters.get("log_bytes_unread"):
            _remove_tree(self.directory)
            return
        print(undelivered_message(self.directory, status), file=sys.stderr)


def undelivered_message(directory: str, status: Dict[str, object]) -> str:
    """The one line that says where undelivered spans are and how to send them."""
    counters = status.get("counters", {})
    pending = counters.get("spans_pending", 0) if isinstance(counters, dict) else 0
    why = status.get("last_error") or "not delivered in time"
    where = status.get("destination") or "the collector"
    what = f"{pending} span(s)" if pending else "spans"
    return (f"gwtrace run: {what} not delivered to {where} ({why}); they are kept in {directory}: "
            f"send them with: gwtrace ingest --spool {shlex.quote(directory)}")


def _sidecar_dir(environ: Dict[str, str]) -> Optional[str]:
    socket = environ.get("GWTRACE_SOCKET", "")
    if socket.startswith("file://"):
        return os.path.dirname(socket[len("file://"):])
    return environ.get("GWTRACE_DIR") or None


def _sidecar_running(directory: str) -> bool:
    if not os.path.isdir(directory):
        return False
    from gwtrace.sidecar.statedir import Spool, SpoolError

    try:
        return Spool(directory).is_owned()
    except (SpoolError, OSError):
        return False


def _mkdtemp(environ: Dict[str, str]) -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="gwtrace-run.", dir=environ.get("TMPDIR") or None)


def _parse_exports(text: str) -> Dict[str, str]:
    values = {}
    for line in text.splitlines():
        words = shlex.split(line.rstrip(";"))
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            key, _, value = words[1].partition("=")
            values[key] = value
    return values


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def auto_lib_path(work_dir: Optional[str]) -> Optional[str]:
    """gwtrace-auto.sh as a file bash can source. Inside a zipapp it is copied
    (with the files it loads) into WORK_DIR, the sidecar's private directory."""
    from gwtrace import bashlib

    if not os.path.isfile(os.path.join(bashlib.HERE, AUTO_LIB)) and not work_dir:
        return None
    try:
        return bashlib.real_path(AUTO_LIBS, work_dir)
    except (OSError, ValueError):
        return None


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


def run_main(argv: List[str]) -> int:
    try:
        args = parse_run_args(argv)
    except HelpRequested as exc:
        sys.stdout.write(str(exc))
        return 0
    except UsageError as exc:
        print(f"gwtrace run: {exc}", file=sys.stderr)
        return 2
    environ = dict(os.environ)
    if _disabled(environ):
        return _run_plain(args.command, environ, "run")
    sink: Optional[Sink] = None
    try:
        sink = Sink.acquire(environ)
    except Exception as exc:  # noqa: BLE001 - tracing trouble never stops the command
        from gwtrace.cli import describe

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
    env = child_environment(environ, sink_env, span, args.level, auto)
    try:
        outcome = run_command(args.command, env)
    except ExecError as exc:
        span.end(str(exc.exit_code), {"error.type": exc.strerror})
        _stop(sink)
        print(f"gwtrace run: {exc.message()}", file=sys.stderr)
        return exc.exit_code
    status, attributes = outcome.span_end()
    span.end(status, attributes)
    _stop(sink)
    return finish(outcome)


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


def span_main(argv: List[str]) -> int:
    """``gwtrace span``: needs no running sidecar (the event log is the
    transport); with no GWTRACE_SOCKET/GWTRACE_DIR it only runs CMD."""
    try:
        args = parse_span_args(argv)
    except HelpRequested as exc:
        sys.stdout.write(str(exc))
        return 0
    except UsageError as exc:
        print(f"gwtrace span: {exc}", file=sys.stderr)
        return 2
    environ = dict(os.environ)
    if _disabled(environ):
        return _run_plain(args.command, environ, "span")
    log = EventLog.from_environ(environ, "span")
    attributes: Dict[str, object] = {"gwtrace.kind": "span",
                                     "process.executable.name": os.path.basename(args.command[0])}
    attributes.update(args.attributes)       # format_event redacts secrets (redact.py)
    span = Span(log, args.name, context_or_warn(environ, "span") if log.path else None, attributes)
    env = dict(environ)
    if log.path and span.sampled:
        env["TRACEPARENT"] = span.traceparent
    try:
        outcome = run_command(args.command, env)
    except ExecError as exc:
        span.end(str(exc.exit_code), {"error.type": exc.strerror})
        print(f"gwtrace span: {exc.message()}", file=sys.stderr)
        return exc.exit_code
    status, end_attributes = outcome.span_end()
    span.end(status, end_attributes)
    return finish(outcome)
