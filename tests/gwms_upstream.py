"""GlideinWMS's own parser and formulas, loaded from a checkout for comparison tests.

Set ``GLIDEINWMS_SRC`` to a glideinwms checkout (``git clone
https://github.com/glideinWMS/glideinwms``), or place one at
``../shared/glideinwms``.  Nothing of it is copied into gwtrace: the tests
import it to check that gwtrace computes the same numbers.
"""

import importlib
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Optional, Tuple

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "glideinwms"
HINT = ("GlideinWMS sources not found: set GLIDEINWMS_SRC to a glideinwms checkout "
        "(git clone https://github.com/glideinWMS/glideinwms) or put one at ../shared/glideinwms")


def source_dir() -> Optional[Path]:
    """The checkout to use, if any."""
    for candidate in (os.environ.get("GLIDEINWMS_SRC"), str(SHARED)):
        if candidate and (Path(candidate) / "factory" / "glideFactoryLogParser.py").is_file():
            return Path(candidate).resolve()
    return None


def load() -> Optional[Tuple[ModuleType, ModuleType]]:
    """(glideFactoryLogParser, glideFactoryMonitoring) imported as package ``glideinwms``."""
    src = source_dir()
    if src is None:
        return None
    if src.name == "glideinwms":
        parent = str(src.parent)
    else:  # make the checkout importable under its package name
        parent = tempfile.mkdtemp(prefix="gwms-")
        os.symlink(src, os.path.join(parent, "glideinwms"))
    if parent not in sys.path:
        sys.path.insert(0, parent)
    try:
        parser = importlib.import_module("glideinwms.factory.glideFactoryLogParser")
        monitoring = importlib.import_module("glideinwms.factory.glideFactoryMonitoring")
    except ImportError:
        return None
    return parser, monitoring


class _Times:
    """Stand-in for the condorLogSummary instance: only diffTimes is used by get_completed_stats."""

    @staticmethod
    def diffTimes(end_time, start_time):  # noqa: N802 - GlideinWMS's name
        if end_time is None or start_time is None:
            return -1
        return end_time - start_time


def their_completed_stats(monitoring: ModuleType, log_data, running=None, last=None):
    """GlideinWMS's get_completed_stats for one glidein (raises what it raises)."""
    entered = [("1.000", None, running, last, log_data)]
    return monitoring.condorLogSummary.get_completed_stats(_Times(), entered)["1.000"]
