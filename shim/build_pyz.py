#!/usr/bin/env python3
"""Build ``dist/gwtrace-sidecar.pyz``: gwtrace and its pure-Python dependencies
in one zipapp that runs on any python3 >= 3.9 (``make dist``).

A factory then ships gwtrace to worker nodes as two files in the glidein's
file list, ``gwtrace.sh`` and this archive (plus ``gwtrace_setup.sh`` and
``gwtrace-job-wrapper`` from shim/): no pip, no venv, no compiler on the node.

Why these choices:

- Dependencies are resolved for the oldest Python we support (3.9, whose last
  opentelemetry-sdk is 1.41.x) and as ``py3-none-any`` wheels only, so nothing
  in the archive is tied to an interpreter build. protobuf's pure-Python wheel
  is one of them; ``__main__`` also sets PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION
  so that a compiled protobuf found elsewhere on sys.path is never mixed in.
- ``__main__`` re-executes the interpreter with ``-I -S`` (no site-packages,
  no .pth hooks), so that an installed gwtrace or a compiled protobuf on the
  node is never mixed with the archive's.
- The wheels' ``.dist-info`` directories are kept: opentelemetry finds its
  context implementation and versions through importlib.metadata entry points,
  which work inside a zip.
- The web UI (``gwtrace serve``, Flask) is not a dependency of the sidecar and
  is left out; in the archive it fails with one clear line.
- ``bash/gwtrace-accel.so`` (``make accel``), when built, goes in with the bash
  files: the one member tied to a platform (the builder's architecture). It is
  optional: where bash cannot load it, the shell code does its work. A library
  that needs a glibc symbol version newer than EL7's 2.17 is refused here, in
  one line (glibc_needed.py): a worker node could not load it.
- Licences: the archive carries LICENSE (Apache-2.0, the project's) at its top,
  and beside the accelerator its complete source and GPL-3.0 text
  (``gwtrace/bashlib/accel/``: the C files, ``COPYING``), the terms bash's
  loadable builtins come under, so that the binary travels with its source.

Usage: ``python shim/build_pyz.py [--output PATH] [--wheels DIR] [--python-version 3.9]``
(``--wheels`` uses already downloaded wheels, for offline builds).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipapp
import zipfile
from pathlib import Path
from typing import List, Optional

from glibc_needed import OLDEST_GLIBC, too_new

REPO = Path(__file__).resolve().parents[1]

#: What the sidecar needs at run time (setup.cfg's install_requires minus the
#: web UI's flask and waitress), with ranges that resolve on Python 3.9.
REQUIREMENTS = [
    "opentelemetry-api>=1.27,<2",
    "opentelemetry-sdk>=1.27,<2",
    "opentelemetry-exporter-otlp-proto-http>=1.27,<2",
    "opentelemetry-proto>=1.27,<2",
    "requests>=2.25",
]

MAIN = '''\
"""gwtrace in one file: python3 gwtrace-sidecar.pyz sidecar start|stop|status|run, run, span, show."""
import os
import sys

if sys.version_info < (3, 9):
    sys.stderr.write("gwtrace: needs python >= 3.9, this is %d.%d\\n" % sys.version_info[:2])
    sys.exit(1)
# Only what is in this archive: no site-packages, no .pth hooks (an installed
# gwtrace or a compiled protobuf must not be mixed with ours).
if not sys.flags.no_site and sys.executable:
    os.execv(sys.executable, [sys.executable, "-I", "-S"] + sys.argv)
os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

from gwtrace.cli import main  # noqa: E402

sys.exit(main())
'''


def download_wheels(dest: Path, python_version: str) -> None:
    """Pure-Python wheels of REQUIREMENTS and their dependencies, for PYTHON_VERSION."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
           "--only-binary=:all:", "--platform", "any", "--implementation", "py",
           "--python-version", python_version, "--dest", str(dest), *REQUIREMENTS]
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise SystemExit("build_pyz: pip download failed:\n" + result.stdout.strip())


def unpack_wheels(wheels: List[Path], staging: Path) -> None:
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.endswith((".so", ".pyd", ".dylib")):
                    raise SystemExit(f"build_pyz: {wheel.name} is not pure Python ({name})")
            zf.extractall(staging)


def copy_gwtrace(staging: Path) -> None:
    """The gwtrace package as setup.cfg maps it: sidecar/gwtrace -> gwtrace,
    bash -> gwtrace.bashlib."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(REPO / "sidecar" / "gwtrace", staging / "gwtrace", ignore=ignore)
    bashlib = staging / "gwtrace" / "bashlib"
    bashlib.mkdir()
    for path in sorted((REPO / "bash").iterdir()):
        if path.suffix in (".py", ".sh", ".so") and path.is_file():
            if path.suffix == ".so":
                check_accelerator(path)
            shutil.copy2(path, bashlib / path.name)
    if (bashlib / "gwtrace-accel.so").is_file():     # the GPL binary travels with its source
        shutil.copytree(REPO / "bash" / "accel", bashlib / "accel", ignore=ignore)
    shutil.copy2(REPO / "LICENSE", staging / "LICENSE")


def check_accelerator(path: Path) -> None:
    """Refuse an accelerator that the oldest worker nodes' glibc cannot load."""
    try:
        newer = too_new(str(path))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"build_pyz: cannot read {path}: {exc}") from None
    if newer:
        raise SystemExit(f"build_pyz: {path.name} needs {', '.join(newer)}, newer than EL7's glibc "
                         f"{'.'.join(map(str, OLDEST_GLIBC))}: worker nodes could not load it; rebuild it "
                         f"with `make accel` (-std=gnu99), or on an older system")


def build(output: Path, wheels_dir: Optional[Path], python_version: str) -> Path:
    with tempfile.TemporaryDirectory(prefix="gwtrace-pyz.") as tmp:
        tmp_path = Path(tmp)
        if wheels_dir is None:
            wheels_dir = tmp_path / "wheels"
            wheels_dir.mkdir()
            download_wheels(wheels_dir, python_version)
        wheels = sorted(wheels_dir.glob("*.whl"))
        if not wheels:
            raise SystemExit(f"build_pyz: no wheels in {wheels_dir}")
        staging = tmp_path / "app"
        staging.mkdir()
        unpack_wheels(wheels, staging)
        copy_gwtrace(staging)
        (staging / "__main__.py").write_text(MAIN)
        output.parent.mkdir(parents=True, exist_ok=True)
        partial = output.with_name(output.name + ".tmp")
        zipapp.create_archive(staging, partial, interpreter="/usr/bin/env python3", compressed=True)
        os.replace(partial, output)
    return output


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Build the gwtrace sidecar zipapp.")
    parser.add_argument("--output", default=str(REPO / "dist" / "gwtrace-sidecar.pyz"))
    parser.add_argument("--wheels", help="use the wheels in this directory instead of downloading")
    parser.add_argument("--python-version", default="3.9", help="oldest python to resolve for (default 3.9)")
    args = parser.parse_args(argv)
    path = build(Path(args.output), Path(args.wheels) if args.wheels else None, args.python_version)
    print(f"{path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
