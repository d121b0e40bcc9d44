"""Running CMD transparently: its descriptors, signals and exit status are
ours (a CMD killed by a signal makes us die of the same signal)."""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Dict, List, NamedTuple, Tuple

#: Signals passed on to CMD. Keyboard signals (INT, QUIT) and HUP reach CMD
#: directly when we share a terminal's foreground process group; sending them
#: again would deliver them twice, so then they are not forwarded.
FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
TERMINAL = ("SIGINT", "SIGQUIT", "SIGHUP")
#: Dispositions Python changed at start-up; CMD gets the defaults back.
RESET_IN_CHILD = ("SIGPIPE", "SIGXFSZ", "SIGXFZ")

# --- running the command ----------------------------------------------------

class Exit(NamedTuple):
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


def run_command(command: List[str], env: Dict[str, str]) -> Exit:
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
                return Exit(127)
            except InterruptedError:  # pragma: no cover - PEP 475 retries for us
                continue
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if failure:
        errno_value = int(failure or b"0")
        raise ExecError(command[0], errno_value)
    if os.WIFSIGNALED(status):
        return Exit(128 + os.WTERMSIG(status), os.WTERMSIG(status))
    return Exit(os.WEXITSTATUS(status))


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


def finish(outcome: Exit) -> int:
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
