"""The glibc symbol versions a shared object needs, read from its ELF ``.gnu.version_r`` section.

Why: worker nodes run EL7 (glibc 2.17) and later, and bash cannot load a library that binds a
symbol to a newer version: built with gcc >= 14 against glibc >= 2.38 without ``-std=gnu99``,
``strtol`` becomes ``__isoc23_strtol@GLIBC_2.38``. ``make dist`` (shim/build_pyz.py) refuses to
ship such an accelerator, and tests/test_accel.py checks the one ``make accel`` built. Read here
rather than with ``objdump -T``: a builder need not have binutils, and the answer must not depend
on whether it has.
"""

from __future__ import annotations

import re
import struct
from typing import List, Set, Tuple

#: EL7's glibc: the oldest a worker node runs.
OLDEST_GLIBC = (2, 17)
_SHT_GNU_VERNEED = 0x6FFFFFFE
_GLIBC = re.compile(r"GLIBC_(\d+(?:\.\d+)*)")


def version_needs(path: str) -> Set[str]:
    """Every version name (``GLIBC_2.14``, ``GLIBC_PRIVATE``, ...) the ELF file at PATH needs.

    Raises ValueError when PATH is not an ELF file this can read."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or len(data) < 64 or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise ValueError(f"{path}: not an ELF file")
    end = "<" if data[5] == 1 else ">"
    try:
        if data[4] == 2:   # 64-bit
            shoff, = struct.unpack_from(end + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
            header = end + "IIQQQQIIQQ"
        else:
            shoff, = struct.unpack_from(end + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
            header = end + "IIIIIIIIII"
        sections = [struct.unpack_from(header, data, shoff + i * shentsize) for i in range(shnum)]
        names: Set[str] = set()
        for section in sections:
            if section[1] != _SHT_GNU_VERNEED:
                continue
            offset, link, count = section[4], section[6], section[7]
            strtab = sections[link][4]
            for _ in range(count):
                _, aux_count, _, aux, following = struct.unpack_from(end + "HHIII", data, offset)
                at = offset + aux
                for _ in range(aux_count):
                    _, _, _, name, next_aux = struct.unpack_from(end + "IHHII", data, at)
                    start = strtab + name
                    names.add(data[start:data.index(b"\0", start)].decode("ascii", "replace"))
                    at += next_aux
                offset += following
        return names
    except (struct.error, IndexError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read its ELF version needs ({exc})") from None


def glibc_versions(path: str) -> Set[Tuple[int, ...]]:
    """The numbered glibc versions PATH needs, as tuples: ``{(2, 2, 5), (2, 14)}``."""
    found = set()
    for name in version_needs(path):
        match = _GLIBC.fullmatch(name)
        if match:
            found.add(tuple(int(x) for x in match.group(1).split(".")))
    return found


def too_new(path: str, oldest: Tuple[int, ...] = OLDEST_GLIBC) -> List[str]:
    """The glibc versions PATH needs that a node with glibc OLDEST lacks (empty: it loads there)."""
    return ["GLIBC_" + ".".join(map(str, v)) for v in sorted(glibc_versions(path)) if v > oldest]
