"""Walk factory client log directories and build one record per glidein.

A client log directory (``client/user_<u>/glidein_<instance>/entry_<E>/``)
holds ``job.C.P.out``/``.err`` and the Condor-G logs ``condor_activity_*.log``
of that entry.  Every glidein seen in any of them gives a record, complete or
not; an unreadable file gives one error line in ``Collection.errors``.
"""

import os
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from .condorg_log import CondorGJob, read_condorg_log
from .errfile import ErrFile, parse_err
from .outfile import OutFile, parse_out
from .record import GlideinRecord, build_record

JOB_FILE = re.compile(r"^job\.(\d+)\.(\d+)\.(out|err)$")
ACTIVITY_FILE = re.compile(r"^condor_activity_.*\.log$")


@dataclass
class Collection:
    """Records found, one line per file that could not be read, and one per block skipped (over its bound;
    the glidein's record says what it lacks)."""

    records: List[GlideinRecord] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)


#: The largest .out/.err read (a glidein's output with its shipped logs is a few MB; the file comes from a node).
MAX_FILE_BYTES = 256 << 20


def _read(path: str, errors: List[str]) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_FILE_BYTES:
                errors.append(f"{path}: skipped, {size} bytes is over the {MAX_FILE_BYTES >> 20} MiB limit")
                return None
            return handle.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        errors.append(f"{path}: cannot read ({err.strerror})")
        return None


def _entry_of(dirpath: str) -> Optional[str]:
    base = os.path.basename(os.path.normpath(dirpath))
    return base[6:] if base.startswith("entry_") else None


def collect_dir(dirpath: str, names: Iterable[str], found: Collection) -> None:
    """Records for the glideins of one directory (files already listed in ``names``)."""
    pairs: Dict[Tuple[int, int], Dict[str, str]] = {}
    condorg: Dict[Tuple[int, int], CondorGJob] = {}
    for name in sorted(names):
        match = JOB_FILE.match(name)
        path = os.path.join(dirpath, name)
        if match:
            pairs.setdefault((int(match.group(1)), int(match.group(2))), {})[match.group(3)] = path
        elif ACTIVITY_FILE.match(name):
            try:
                read_condorg_log(path, condorg)
            except (ValueError, RuntimeError) as err:
                found.errors.append(str(err))
    for key in sorted(set(pairs) | set(condorg)):
        files = pairs.get(key, {})
        out: Optional[OutFile] = None
        err: Optional[ErrFile] = None
        if "out" in files:
            data = _read(files["out"], found.errors)
            out = parse_out(data) if data is not None else None
        if "err" in files:
            data = _read(files["err"], found.errors)
            err = parse_err(data) if data is not None else None
        found.records.append(build_record(key[0], key[1], out, err, condorg.get(key), _entry_of(dirpath)))
        if err is not None:
            found.skipped.extend(f"{files['err']}: {line}" for line in err.skipped)


def collect(dirs: Iterable[str]) -> Collection:
    """Records for every glidein under the given factory log directories (recursively)."""
    found = Collection()
    for top in dirs:
        if not os.path.isdir(top):
            found.errors.append(f"{top}: not a directory")
            continue
        for dirpath, _dirs, names in os.walk(top):
            collect_dir(dirpath, names, found)
    return found
