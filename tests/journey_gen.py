"""HTCondor job event logs written the way HTCondor writes them (ISO or legacy header dates), for the
journey tests and bench/journey.  Times are epoch seconds, written in local time as HTCondor does."""

from __future__ import annotations

import random
import time
from typing import Iterable, List, Optional

SCHEDD = "<10.1.2.3:9618?addrs=10.1.2.3-9618&alias=submit.example.org&sock=schedd_123_456>"


def header(code: int, cluster: int, proc: int, when: int, legacy: bool = False) -> str:
    fmt = "%m/%d %H:%M:%S" if legacy else "%Y-%m-%d %H:%M:%S"
    return f"{code:03d} ({cluster:03d}.{proc:03d}.000) {time.strftime(fmt, time.localtime(when))} "


def event(code: int, cluster: int, proc: int, when: int, first: str, body: Iterable[str] = (),
          legacy: bool = False) -> str:
    lines = [header(code, cluster, proc, when, legacy) + first] + [f"\t{b}" for b in body]
    return "\n".join(lines) + "\n...\n"


def submitted(c: int, p: int, t: int, host: str = SCHEDD) -> str:
    return event(0, c, p, t, f"Job submitted from host: {host}")


def executing(c: int, p: int, t: int, slot: str = "slot1_1@glidein_4242_1@wn1.example.org") -> str:
    host = slot.split("@")[-1]
    return event(1, c, p, t, f"Job executing on host: <10.9.9.9:9618?addrs=10.9.9.9-9618&alias={host}>",
                 [f"SlotName: {slot}"])


def image(c: int, p: int, t: int, memory_mb: int) -> str:
    return event(6, c, p, t, "Image size of job updated: 2000", [f"{memory_mb}  -  MemoryUsage of job (MB)",
                                                                 "2000  -  ResidentSetSize of job (KB)"])


def held(c: int, p: int, t: int, reason: str, code: int, sub: int) -> str:
    return event(12, c, p, t, "Job was held.", [reason, f"Code {code} Subcode {sub}"])


def released(c: int, p: int, t: int) -> str:
    return event(13, c, p, t, "Job was released.", ["via condor_release (by user alice)"])


def evicted(c: int, p: int, t: int) -> str:
    return event(4, c, p, t, "Job was evicted.", ["(0) Job was not checkpointed.",
                                                  "\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage",
                                                  "\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage",
                                                  "0  -  Run Bytes Sent By Job", "0  -  Run Bytes Received By Job"])


def _usage(total: bool) -> List[str]:
    lines = ["\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage", "\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage"]
    if total:
        lines += ["\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Remote Usage",
                  "\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage"]
    return lines + ["0  -  Run Bytes Sent By Job", "0  -  Run Bytes Received By Job",
                    "0  -  Total Bytes Sent By Job", "0  -  Total Bytes Received By Job"]


def terminated(c: int, p: int, t: int, code: Optional[int] = 0, signal: Optional[int] = None) -> str:
    first = f"(1) Normal termination (return value {code})" if signal is None \
        else f"(0) Abnormal termination (signal {signal})"
    extra = [] if signal is None else ["(0) No core file"]
    return event(5, c, p, t, "Job terminated.", [first] + extra + _usage(True))


def aborted(c: int, p: int, t: int) -> str:
    return event(9, c, p, t, "Job was aborted.", ["via condor_rm (by user alice)"])


def disconnected(c: int, p: int, t: int, slot: str = "slot1_1@glidein_4242_1@wn1.example.org") -> str:
    return event(22, c, p, t, "Job disconnected, attempting to reconnect",
                 ["Socket between submit and execute hosts closed unexpectedly",
                  f"Trying to reconnect to {slot} <10.9.9.9:9618>"]).replace("\t", "    ")


def reconnected(c: int, p: int, t: int, slot: str = "slot1_1@glidein_4242_1@wn1.example.org") -> str:
    return event(23, c, p, t, f"Job reconnected to {slot}", ["startd address: <10.9.9.9:9618>",
                                                             "starter address: <10.9.9.9:9619>"]).replace("\t", "    ")


def transfer(c: int, p: int, t: int, what: str) -> str:
    """``what``: "Started transferring input files", "Finished transferring output files", ..."""
    return event(40, c, p, t, what)


def full_journey(c: int, p: int, t0: int) -> str:
    """One job through every event kind: submitted, idle, held (34/102), released, executing with input
    transfer, disconnect/reconnect, evicted, executing again, output transfer, terminated (return 3)."""
    return "".join([
        submitted(c, p, t0), held(c, p, t0 + 100, "Job has gone over memory limit of 2048 megabytes.", 34, 102),
        released(c, p, t0 + 200), executing(c, p, t0 + 300),
        transfer(c, p, t0 + 301, "Started transferring input files"),
        transfer(c, p, t0 + 305, "Finished transferring input files"), image(c, p, t0 + 310, 1500),
        disconnected(c, p, t0 + 400), reconnected(c, p, t0 + 430), evicted(c, p, t0 + 500),
        executing(c, p, t0 + 600, "slot1_2@glidein_5555_2@wn2.example.org"),
        transfer(c, p, t0 + 700, "Started transferring output files"),
        transfer(c, p, t0 + 702, "Finished transferring output files"), terminated(c, p, t0 + 703, 3)])


def big_log(path: str, target_bytes: int, seed: int = 1, t0: int = 1_790_000_000) -> int:
    """A schedd event log of about ``target_bytes``: many jobs with holds, evictions and transfers in
    realistic proportions, the events of a cluster's jobs interleaved in time order as in a busy schedd's
    log; returns the number of events written."""
    rng = random.Random(seed)
    written = events = 0
    cluster = 1000
    with open(path, "w") as out:
        while written < target_bytes:
            cluster += 1
            base = t0 + (cluster - 1000) * 7
            timed = []
            for proc in range(rng.choice((1, 1, 5, 10))):
                t = base + proc
                timed.append((t, submitted(cluster, proc, t)))
                if rng.random() < 0.05:
                    timed += [(t + 50, held(cluster, proc, t + 50, "Transfer input files failure", 13, 2)),
                              (t + 90, released(cluster, proc, t + 90))]
                start = t + rng.randint(100, 3600)
                slot = f"slot1_{proc % 8}@glidein_{cluster % 97}_1@wn{cluster % 50}.example.org"
                timed += [(start, executing(cluster, proc, start, slot)),
                          (start + 1, transfer(cluster, proc, start + 1, "Started transferring input files")),
                          (start + 3, transfer(cluster, proc, start + 3, "Finished transferring input files")),
                          (start + 60, image(cluster, proc, start + 60, rng.randint(100, 4000)))]
                end = start + rng.randint(600, 20000)
                timed.append((end, evicted(cluster, proc, end) if rng.random() < 0.03
                              else terminated(cluster, proc, end, rng.choice((0, 0, 0, 1)))))
            timed.sort(key=lambda item: item[0])
            text = "".join(t for _, t in timed)
            out.write(text)
            written += len(text)
            events += len(timed)
    return events
