"""What a process tree or a cgroup has used, read from ``/proc`` and the cgroup files.

Standard library only, Python 3.9: this runs on worker nodes from the .pyz,
where no psutil (or any compiled package) can be counted on. Every reader
returns None (or leaves a field None) for what it cannot read: a process that
ended between two reads, a file of another user's process (``io``,
``smaps_rollup`` need ptrace rights), a kernel without ``memory.peak``. Nothing
here raises for a vanished or unreadable file.

The paths are parameters (``proc``, ``cgroup_root``) so that tests lay out a
fake tree, and a container's ``/proc`` can be pointed at.
"""

from __future__ import annotations

import os
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple

try:
    CLK_TCK = os.sysconf("SC_CLK_TCK") or 100
except (ValueError, OSError, AttributeError):   # pragma: no cover - every Linux has it
    CLK_TCK = 100
try:
    PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") or 4096
except (ValueError, OSError, AttributeError):   # pragma: no cover
    PAGE_SIZE = 4096

#: A /proc or cgroup file is never longer than this for what is read here (a cgroup file of a big
#: v1 hierarchy, cgroup.procs of a job with many processes, is read up to it).
MAX_READ = 1 << 20


def _read(path: str, limit: int = 65536) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("ascii", "replace")
    except (OSError, ValueError):
        return None


class ProcStat(NamedTuple):
    """One process as ``/proc/PID/stat`` has it (times in clock ticks, rss in bytes)."""

    pid: int
    ppid: int
    utime: int
    stime: int
    cutime: int          # of its reaped children: a finished child's time counts in its parent's
    cstime: int
    threads: int
    start: int           # ticks after boot: with the pid, who this process is (pids are reused)
    rss: int


def parse_stat(pid: int, text: str) -> Optional[ProcStat]:
    """``/proc/PID/stat``'s fields after the command name (which may hold spaces and parentheses)."""
    close = text.rfind(")")
    if close < 0:
        return None
    fields = text[close + 2:].split()
    try:
        return ProcStat(pid, int(fields[1]), int(fields[11]), int(fields[12]), int(fields[13]),
                        int(fields[14]), int(fields[17]), int(fields[19]), int(fields[21]) * PAGE_SIZE)
    except (IndexError, ValueError):
        return None


def read_stat(pid: int, proc: str = "/proc") -> Optional[ProcStat]:
    text = _read(f"{proc}/{pid}/stat", 4096)
    return parse_stat(pid, text) if text else None


def scan(proc: str = "/proc") -> Dict[int, ProcStat]:
    """Every process's stat, one read each: the parent links from which trees are cut."""
    out: Dict[int, ProcStat] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            pid = int(name)
            st = read_stat(pid, proc)
            if st is not None:
                out[pid] = st
    return out


def tree(root: int, stats: Dict[int, ProcStat]) -> List[int]:
    """``root`` and its descendants in ``stats`` (empty if root is not there)."""
    if root not in stats:
        return []
    children: Dict[int, List[int]] = {}
    for st in stats.values():
        children.setdefault(st.ppid, []).append(st.pid)
    out, todo, seen = [], [root], {root}
    while todo:
        pid = todo.pop()
        out.append(pid)
        for child in children.get(pid, ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return out


def read_io(pid: int, proc: str = "/proc") -> Optional[Tuple[int, int]]:
    """(read_bytes, write_bytes) that reached the storage layer, or None (another user's process)."""
    text = _read(f"{proc}/{pid}/io", 4096)
    if not text:
        return None
    values = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        values[key] = value.strip()
    try:
        return int(values["read_bytes"]), int(values["write_bytes"])
    except (KeyError, ValueError):
        return None


def read_pss(pid: int, proc: str = "/proc") -> Optional[int]:
    """Proportional set size in bytes (``smaps_rollup``, Linux >= 4.14), or None."""
    text = _read(f"{proc}/{pid}/smaps_rollup", 8192)
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith("Pss:"):
            parts = line.split()
            try:
                return int(parts[1]) * 1024
            except (IndexError, ValueError):
                return None
    return None


def load_average(proc: str = "/proc") -> Optional[float]:
    text = _read(f"{proc}/loadavg", 256)
    try:
        return float(text.split()[0]) if text else None
    except (IndexError, ValueError):
        return None


def boot_time(proc: str = "/proc") -> Optional[float]:
    """The boot time (seconds since the epoch): a process's start tick becomes a time."""
    text = _read(f"{proc}/stat", MAX_READ)
    for line in (text or "").splitlines():
        if line.startswith("btime "):
            try:
                return float(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


# -- cgroups -----------------------------------------------------------------------------------------------

class CgroupRef(NamedTuple):
    """Where a process sits: its v2 path (``0::/path``) and its v1 paths by controller."""

    v2: Optional[str]
    v1: Dict[str, str]

    def same_as(self, other: "CgroupRef") -> bool:
        return self.v2 == other.v2 and self.v1 == other.v1


def read_cgroup_ref(pid: int, proc: str = "/proc") -> Optional[CgroupRef]:
    """``/proc/PID/cgroup`` parsed, or None."""
    text = _read(f"{proc}/{pid}/cgroup", 65536)
    if text is None:
        return None
    v2: Optional[str] = None
    v1: Dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and controllers == "":
            v2 = path
        else:
            for controller in controllers.split(","):
                if controller:
                    v1[controller] = path
    return CgroupRef(v2, v1)


class CgroupUsage(NamedTuple):
    """What a cgroup's files say it used (None: not there)."""

    version: str                      # "cgroup-v2" or "cgroup-v1"
    cpu_user_s: Optional[float]
    cpu_system_s: Optional[float]
    memory: Optional[int]             # memory.current / memory.usage_in_bytes
    memory_peak: Optional[int]        # memory.peak / memory.max_usage_in_bytes
    tasks: Optional[int]              # pids.current (v2: threads) / the tasks file's lines (v1)
    procs: Optional[int]              # cgroup.procs lines


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int(text.strip()) if text else None
    except ValueError:
        return None


def _keyed(text: Optional[str]) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                pass
    return out


def _lines(text: Optional[str]) -> Optional[int]:
    return None if text is None else sum(1 for line in text.splitlines() if line.strip())


def _inside(root: str, path: str) -> Optional[str]:
    """``root/path`` unless ``path`` would climb out of ``root`` (a cgroup path is the kernel's, but be sure)."""
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        return None
    return os.path.join(root, *parts)


def read_cgroup(ref: CgroupRef, cgroup_root: str = "/sys/fs/cgroup") -> Optional[CgroupUsage]:
    """The usage of the cgroup ``ref`` names: v2 where its memory and cpu files are (a unified
    hierarchy at the root, or at ``unified/`` on a hybrid host), else v1's memory and cpuacct.
    None when neither can be read."""
    if ref.v2 is not None:
        for base in (cgroup_root, os.path.join(cgroup_root, "unified")):
            d = _inside(base, ref.v2)
            if d is None:
                continue
            memory = _int(_read(os.path.join(d, "memory.current"), 64))
            if memory is None:
                continue
            cpu = _keyed(_read(os.path.join(d, "cpu.stat"), 4096))
            user, system = cpu.get("user_usec"), cpu.get("system_usec")
            return CgroupUsage("cgroup-v2", None if user is None else user / 1e6,
                               None if system is None else system / 1e6, memory,
                               _int(_read(os.path.join(d, "memory.peak"), 64)),
                               _int(_read(os.path.join(d, "pids.current"), 64)),
                               _lines(_read(os.path.join(d, "cgroup.procs"), MAX_READ)))
    mem_path = ref.v1.get("memory")
    mem_dir = _inside(os.path.join(cgroup_root, "memory"), mem_path) if mem_path is not None else None
    memory = _int(_read(os.path.join(mem_dir, "memory.usage_in_bytes"), 64)) if mem_dir else None
    if mem_dir is None or memory is None:
        return None
    user = system = None
    cpu_path = ref.v1.get("cpuacct")
    if cpu_path is not None:
        for name in ("cpuacct", "cpu,cpuacct", "cpuacct,cpu"):
            d = _inside(os.path.join(cgroup_root, name), cpu_path)
            if d is None or not os.path.isdir(d):
                continue
            u, s = _int(_read(os.path.join(d, "cpuacct.usage_user"), 64)), \
                _int(_read(os.path.join(d, "cpuacct.usage_sys"), 64))
            if u is not None and s is not None:
                user, system = u / 1e9, s / 1e9
            else:       # older kernels: cpuacct.stat, in clock ticks
                stat = _keyed(_read(os.path.join(d, "cpuacct.stat"), 4096))
                if "user" in stat and "system" in stat:
                    user, system = stat["user"] / CLK_TCK, stat["system"] / CLK_TCK
            break
    return CgroupUsage("cgroup-v1", user, system, memory,
                       _int(_read(os.path.join(mem_dir, "memory.max_usage_in_bytes"), 64)),
                       _lines(_read(os.path.join(mem_dir, "tasks"), MAX_READ)),
                       _lines(_read(os.path.join(mem_dir, "cgroup.procs"), MAX_READ)))


class TreeUsage(NamedTuple):
    """A process tree's usage summed over ``/proc`` (None: no member readable for it)."""

    cpu_user_s: float
    cpu_system_s: float
    rss: int
    pss: Optional[int]
    io_read: Optional[int]
    io_write: Optional[int]
    threads: int
    procs: int


def tree_usage(pids: Iterable[int], stats: Dict[int, ProcStat], proc: str = "/proc",
               pss: bool = True) -> TreeUsage:
    """Sum over ``pids``: CPU time with what their reaped children used (cutime, cstime), RSS, and
    PSS and I/O over the members where they are readable (None where none is)."""
    user = system = rss = threads = procs = 0
    pss_sum: Optional[int] = None
    rd: Optional[int] = None
    wr: Optional[int] = None
    for pid in pids:
        st = stats.get(pid)
        if st is None:
            continue
        procs += 1
        user += st.utime + st.cutime
        system += st.stime + st.cstime
        rss += st.rss
        threads += st.threads
        if pss:
            p = read_pss(pid, proc)
            if p is not None:
                pss_sum = (pss_sum or 0) + p
        io = read_io(pid, proc)
        if io is not None:
            rd, wr = (rd or 0) + io[0], (wr or 0) + io[1]
    return TreeUsage(user / CLK_TCK, system / CLK_TCK, rss, pss_sum, rd, wr, threads, procs)
