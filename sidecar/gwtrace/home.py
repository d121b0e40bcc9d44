"""Where gwtrace keeps its files on a machine: ``${GWTRACE_HOME:-~/.local/share/gwtrace}``.

One home for the rule, because the store (``traces.db``) and the ingest
ledger (``ingested.sha256``) must agree on it: an operator who moves one with
GWTRACE_HOME moves both.

And one home for the trust rule of the files gwtrace writes there (the store,
SQLite's ``-wal``/``-shm``/``-journal`` beside it, the ledger): gwtrace writes
only into a directory that no one else can write (owned by you or root, not
writable by group or others), and only into regular files that you own and
that are not symbolic links. Otherwise another user could make gwtrace turn
their file into a database or append to it (a symlink planted as
``traces.db``), or swap a file under it. A file that breaks the rule is
refused with one line saying what to fix (UnsafeFile), never followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Union

PathLike = Union[str, "os.PathLike[str]"]

#: SQLite's companions of a database file, which it opens by name beside it.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


class UnsafeFile(OSError):
    """A file or directory gwtrace would write does not belong to the user alone (one line)."""


def gwtrace_home() -> Path:
    """``$GWTRACE_HOME`` if set and not empty, else ``~/.local/share/gwtrace``."""
    home = os.environ.get("GWTRACE_HOME")
    return Path(home) if home else Path.home() / ".local" / "share" / "gwtrace"


def private_dir(directory: PathLike) -> Path:
    """``directory``, created owner-only if missing, after checking that only
    you (or root) can write in it; raises UnsafeFile saying what to fix."""
    directory = Path(directory)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.stat(directory)
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        raise UnsafeFile(f"{directory} belongs to uid {st.st_uid}, not you (uid {me}): gwtrace keeps its files "
                         f"only in a directory of yours; set GWTRACE_HOME to one")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeFile(f"{directory} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o}): "
                         f"run chmod go-w {directory}, or set GWTRACE_HOME to a private directory")
    return directory


def check_own_file(path: PathLike) -> None:
    """Raise UnsafeFile unless ``path`` is missing or a regular file of yours (a
    symbolic link is refused, not followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    _check_stat(path, st)


def open_own_file(path: PathLike, flags: int, mode: int = 0o600) -> int:
    """``os.open`` of a file gwtrace writes, with O_NOFOLLOW, in a private
    directory (private_dir); the file, if it was there, must be a regular file
    of yours. Returns the descriptor; raises UnsafeFile saying what to fix."""
    private_dir(Path(path).parent)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as exc:
        if os.path.islink(path):         # ELOOP (or EMLINK on some systems): a symbolic link
            raise UnsafeFile(_link_message(path)) from None
        raise exc
    try:
        _check_stat(path, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_store_files(path: PathLike) -> None:
    """The store's checks: its directory private, the database file and
    SQLite's companions (which SQLite opens by name) regular files of yours."""
    private_dir(Path(path).parent)
    for suffix in ("",) + SQLITE_COMPANIONS:
        check_own_file(f"{os.fspath(path)}{suffix}")


def _check_stat(path: PathLike, st: os.stat_result) -> None:
    me = os.geteuid()
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFile(_link_message(path))
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFile(f"{path} is not a regular file: gwtrace writes only files it created; move it away")
    if st.st_uid != me:
        raise UnsafeFile(f"{path} belongs to uid {st.st_uid}, not you (uid {me}): gwtrace writes only files it "
                         f"created; move it away, or set GWTRACE_HOME to a private directory")


def _link_message(path: PathLike) -> str:
    return (f"{path} is a symbolic link: gwtrace writes only files it created, never through a link; "
            f"remove it, or set GWTRACE_HOME to a private directory")
