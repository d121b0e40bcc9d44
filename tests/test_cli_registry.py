"""One command registry (gwtrace/cli/__init__.py COMMANDS): a module per command, each with its own help,
listed by `gwtrace --help` from the registry, and no domain package importing the CLI."""

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gwtrace.cli import COMMANDS

PACKAGE = Path(__file__).resolve().parents[1] / "sidecar" / "gwtrace"
GWTRACE = [sys.executable, "-c", "import sys; from gwtrace.cli import main; sys.exit(main())"]


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="300")     # argparse wraps at the terminal's width: one command a line
    return subprocess.run(GWTRACE + list(args), capture_output=True, text=True, timeout=60, env=env)


def test_every_registered_command_is_a_module_of_the_cli_with_a_main() -> None:
    assert sorted(COMMANDS) == sorted(["sidecar", "lib", "show", "serve", "run", "span", "ingest", "glideins",
                                       "account", "job", "now", "analyze", "control"])
    for name in COMMANDS:
        module = importlib.import_module(f"gwtrace.cli.{name}")
        assert callable(module.main), name
        assert module.__doc__ and f"gwtrace {name}" in module.__doc__, name


def test_help_lists_the_registry_in_its_order() -> None:
    out = _run("--help")
    assert out.returncode == 0
    listed = [line.split()[0] for line in out.stdout.splitlines() if line.startswith("    ") and line.split()]
    assert listed == list(COMMANDS)
    for name, summary in COMMANDS.items():
        assert summary in " ".join(out.stdout.split()), name


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_has_its_own_help(name: str) -> None:
    out = _run(name, "--help")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.startswith(f"usage: gwtrace {name}"), out.stdout[:200]


def test_no_command_is_usage_on_stderr_and_2_an_unknown_one_is_refused() -> None:
    out = _run()
    assert out.returncode == 2 and out.stdout == "" and "COMMAND" in out.stderr
    out = _run("bogus")
    assert out.returncode == 2 and "invalid choice: 'bogus'" in out.stderr and "Traceback" not in out.stderr


def test_no_domain_package_imports_the_cli() -> None:
    """The command modules call the domain packages, never the other way round."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                base = ("." * node.level) + (node.module or "")
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n.startswith("gwtrace.cli") or (n.startswith("..cli") and len(rel.parts) == 2)
                   or (n.startswith(".cli") and len(rel.parts) == 1) for n in names):
                found.append(f"{rel}:{node.lineno}")
    assert found == []
