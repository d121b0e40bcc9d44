"""A command's ``--help`` loads none of what only its work needs (the store, Flask, matplotlib,
htcondor, the OpenTelemetry SDK and protobuf classes): each is imported after the arguments parse.

Checked by what is in ``sys.modules``, not by a timing: a fresh interpreter per command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import List

import pytest

#: Modules a factory command's parser never needs (``gwtrace.store.trace_store`` is the store itself:
#: ``gwtrace.store`` alone is the light package its parts register with).
HEAVY = ("gwtrace.store.trace_store", "flask", "matplotlib", "htcondor", "classad", "opentelemetry",
         "google.protobuf", "requests", "waitress", "gwtrace.server.app")

_PROBE = """
import json, sys
heavy = json.loads(sys.argv[2])
sys.argv = ["gwtrace"] + json.loads(sys.argv[1])
from gwtrace.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))),
      file=sys.stderr)
"""


def _loaded(argv: List[str]) -> List[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argv), json.dumps(HEAVY)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stderr.strip().splitlines()[-1])


def test_gwtrace_help_imports_none_of_them() -> None:
    assert _loaded(["--help"]) == []


@pytest.mark.parametrize("command", ["analyze", "control", "job", "now", "account", "glideins", "ingest",
                                     "serve", "show", "sidecar", "run", "span"])
def test_a_commands_help_imports_none_of_them(command: str) -> None:
    assert _loaded([command, "--help"]) == []
