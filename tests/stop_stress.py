"""Stop sidecars at random moments, many times; report any that did not stop.

Run by tests/test_sidecar_stop.py as its own process, so that it forks
sidecars from a process with one thread (forking a pytest process that runs a
receiver thread could copy a lock held by that thread). Each iteration: a
fresh state directory with a random backlog of event lines, a sidecar forked
from here (``run_foreground``, as the daemon runs it: signal handlers and
all), a SIGTERM after a random delay, at a random moment of its life: while
it starts, while it reads the backlog and writes batches, while it exports
(to the collector given, or to a loopback port that refuses), while it ships
(``--ship-to`` a file), while more events are appended. A sidecar that has
not exited HANG_S after its SIGTERM is a hang: its Python stacks are dumped
(faulthandler, SIGUSR1) into its log, it is killed, and it is reported.

Prints one JSON line: {"iterations": N, "hangs": [...], "slowest_stop_s": x}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

HANG_S = 20.0


def _line(i: int, trace: str) -> bytes:
    ts = f"{1700000000 + i // 1000}.{i % 1000:06d}"
    sid = f"{i + 1:016x}"
    return (f"gw1\tB\t{ts}\t42\t{trace}\t{sid}\t-\t0\t01\t-\ts{i}\tk={i}\n"
            f"gw1\tE\t{ts}\t42\t{trace}\t{sid}\t0\n").encode()


def _backlog(path: Path, spans: int, rng: random.Random) -> None:
    trace = f"{rng.getrandbits(128) | 1:032x}"
    with open(path, "ab") as f:
        f.write(b"".join(_line(i, trace) for i in range(spans)))


def _child(directory: Path, ready_w: int, ship: Optional[str]) -> None:  # pragma: no cover - forked
    import faulthandler

    from gwtrace.sidecar import control

    log_fd = os.open(str(directory / "stress-child.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    code = 1
    try:
        code = control.run_foreground(str(directory), None, ready_fd=ready_w, ship_to=ship)
    finally:
        os._exit(code)


def _wait_ready(fd: int, timeout: float) -> bool:
    import select

    ready, _, _ = select.select([fd], [], [], timeout)
    return bool(ready) and os.read(fd, 64).startswith(b"ready")


def _wait_exit(pid: int, timeout: float) -> Optional[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.005)
    return None


def one(base: Path, i: int, rng: random.Random) -> Dict[str, object]:
    directory = base / f"sc{i}"
    directory.mkdir(mode=0o700)
    _backlog(directory / "events.log", rng.choice([0, 10, 600, 3000, 12000]), rng)
    moment = rng.choice(["start", "ready", "backlog", "appending", "export", "ship"])
    ship = str(directory / "shipped.txt") if moment == "ship" or rng.random() < 0.2 else None
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the sidecar
        os.close(ready_r)
        _child(directory, ready_w, ship)
    os.close(ready_w)
    if moment == "start":
        time.sleep(rng.uniform(0, 0.05))
    else:
        _wait_ready(ready_r, 30)
        if moment == "appending":
            _backlog(directory / "events.log", 2000, rng)
        time.sleep(rng.choice([0, rng.uniform(0, 0.01), rng.uniform(0, 0.3)]))
    os.close(ready_r)
    sent = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    status = _wait_exit(pid, HANG_S)
    took = time.monotonic() - sent
    if status is None:
        os.kill(pid, signal.SIGUSR1)            # its stacks, into its log
        time.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        log = (directory / "stress-child.log").read_text(errors="replace")[-4000:]
        return {"iteration": i, "moment": moment, "hung": True, "log": log}
    return {"iteration": i, "moment": moment, "hung": False, "took": took}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--budget-s", type=float, default=600.0, help="stop starting new iterations after this")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    # Everything the sidecar imports, once, before the forks (they then start at once).
    import gwtrace.export.otlp  # noqa: F401
    import gwtrace.sidecar.daemon  # noqa: F401
    from gwtrace.sidecar import control  # noqa: F401

    base = Path(args.dir)
    hangs: List[Dict[str, object]] = []
    slowest = 0.0
    done = 0
    deadline = time.monotonic() + args.budget_s
    for i in range(args.iterations):
        if time.monotonic() > deadline:
            break
        result = one(base, i, rng)
        done += 1
        if result["hung"]:
            hangs.append(result)
        else:
            slowest = max(slowest, float(result["took"]))   # type: ignore[arg-type]
    print(json.dumps({"seed": seed, "iterations": done, "hangs": hangs, "slowest_stop_s": round(slowest, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
