"""Ships the bash files (gwtrace.sh, the gwtrace-auto*.sh layer) inside the
Python package, and hands them out as real files: bash can only `source` a
file, and inside the .pyz they are members of a zip archive."""

import hashlib
import os
import pkgutil
import tempfile
from typing import Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))


def read(name: str) -> bytes:
    """The bytes of one bash file, from the package directory or the zip."""
    path = os.path.join(HERE, name)
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return f.read()
    data = pkgutil.get_data(__name__, name)
    if data is None:
        raise FileNotFoundError(name)
    return data


def real_path(names: Sequence[str], directory: Optional[str] = None, optional: Sequence[str] = ()) -> str:
    """The path of ``names[0]`` as a file bash can source, the others beside it.

    Installed or in a checkout: the file itself. In a zipapp: the copy next to
    the archive if one with the same bytes is there (a glidein ships gwtrace.sh
    beside the .pyz), else copies written once into DIRECTORY, or into a
    private per-user cache keyed by the content (``~/.cache/gwtrace/<sha>``).
    OPTIONAL names (the accelerator) are copied too when the package holds them.
    """
    first = os.path.join(HERE, names[0])
    if os.path.isfile(first):
        return first
    blobs = {name: read(name) for name in names}
    for name in optional:
        try:
            blobs[name] = read(name)
        except (OSError, ValueError):
            pass
    archive = os.path.dirname(os.path.dirname(HERE))                 # .../x.pyz/gwtrace/bashlib
    beside = os.path.join(os.path.dirname(archive), names[0])          # next to the .pyz
    if len(blobs) == 1 and _same(beside, blobs[names[0]]):
        return beside
    if directory is None:
        digest = hashlib.sha256(b"".join(blobs.values())).hexdigest()[:16]
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        directory = os.path.join(cache, "gwtrace", digest)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    for name, data in blobs.items():
        target = os.path.join(directory, name)
        if not _same(target, data):
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
    return os.path.join(directory, names[0])


def _same(path: str, data: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read() == data
    except OSError:
        return False
