"""Transparency corpus: tracing must never change what a script does.

Every script in tests/corpus/ runs twice, plainly and under ``gwtrace run`` at
each level, and must give byte-identical stdout and stderr and the same exit
status. Its ``# expect:`` comment block is the span tree expected at the
``functions`` level (names and status, children in start order, see
canonical_order); the other
levels must give the same tree with function spans removed (``scripts``) or
command spans added (``commands``).
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

from conftest import GWTRACE, Sidecar, clean_env
from otlp_receiver import OtlpReceiver, ReceivedSpan

CORPUS = Path(__file__).resolve().parent / "corpus"
SCRIPTS = sorted(p.name for p in CORPUS.glob("*.sh"))
#: LEVEL-shell: the level with the accelerator off (GWTRACE_ACCEL=0, tests/test_accel.py)
LEVELS = ("scripts", "scripts-shell", "functions", "functions-shell", "commands")
STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


def expected_tree(script: str) -> List[str]:
    """The ``# expect:`` block of a corpus script, indentation kept."""
    lines = (CORPUS / script).read_text().splitlines()
    start = lines.index("# expect:") + 1
    block = []
    for line in lines[start:]:
        if not line.startswith("#   "):
            break
        block.append(line[4:])
    return block


def is_script_line(line: str) -> bool:
    name = line.strip().rsplit(" ", 1)[0]
    return name.endswith(".sh") or name.startswith("bash -")


def scripts_only(tree: List[str]) -> List[str]:
    """The tree at the scripts level: script spans, re-indented under their
    nearest script ancestor."""
    out, stack = [], []          # stack of (indent in the full tree, depth in out)
    for line in tree:
        indent = (len(line) - len(line.lstrip())) // 2
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if is_script_line(line):
            depth = stack[-1][1] + 1 if stack else 0
            out.append("  " * depth + line.strip())
            stack.append((indent, depth))
    return out


def canonical_order(siblings: List[ReceivedSpan]) -> List[ReceivedSpan]:
    """Siblings by start time; siblings that ran at the same time (pipeline
    members, background jobs: their order is the scheduler's) by name and
    status, so that the expected tree is deterministic."""
    ordered = sorted(siblings, key=lambda s: (s.start_ns, s.span_id))
    out: List[ReceivedSpan] = []
    group: List[ReceivedSpan] = []
    group_end = -1
    for span in ordered:
        if group and span.start_ns > group_end:
            out.extend(sorted(group, key=lambda s: (s.name, STATUS[s.status_code])))
            group = []
        group.append(span)
        group_end = max(group_end, span.end_ns) if len(group) > 1 else span.end_ns
    out.extend(sorted(group, key=lambda s: (s.name, STATUS[s.status_code])))
    return out


def render(spans: List[ReceivedSpan], root: ReceivedSpan, keep=lambda s: True) -> List[str]:
    children: Dict[str, List[ReceivedSpan]] = {}
    for span in spans:
        children.setdefault(span.parent_id, []).append(span)
    out: List[str] = []

    def walk(span: ReceivedSpan, depth: int) -> None:
        for child in canonical_order(children.get(span.span_id, [])):
            if keep(child):
                out.append("  " * depth + f"{child.name} {STATUS[child.status_code]}")
                walk(child, depth + 1)
            else:
                walk(child, depth)

    walk(root, 0)
    return out


def render_run(spans: List[ReceivedSpan], root: ReceivedSpan, script: str, keep=lambda s: True) -> List[str]:
    """The tree under ``gwtrace run -- bash SCRIPT``: the root span is the
    script's own (bash adds its attributes, no second span of the same
    script), so it is shown as the script."""
    assert root.attributes.get("code.file.path", "").endswith("/" + script)
    assert not [s for s in spans if s.parent_id == root.span_id and s.name == script]
    return [f"{script} {STATUS[root.status_code]}"] + ["  " + line for line in render(spans, root, keep)]


@pytest.fixture(scope="module")
def tracing(tmp_path_factory) -> Iterator[Tuple[Dict[str, str], OtlpReceiver]]:
    """One sidecar for the module (``gwtrace run`` finds it through
    GWTRACE_SOCKET), exporting to a real OTLP receiver."""
    receiver = OtlpReceiver().start()
    home = tmp_path_factory.mktemp("corpus")
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, GWTRACE_HOME=str(home / "home"),
                    OTEL_EXPORTER_OTLP_TIMEOUT="2000", GWTRACE_STOP_TIMEOUT="10", LC_ALL="C.UTF-8")
    sidecar = Sidecar(home / "gw", env)
    traced_env = sidecar.start()
    yield traced_env, receiver
    sidecar.stop()
    receiver.stop()


_plain_cache: Dict[str, subprocess.CompletedProcess] = {}


def run_plain(script: str) -> subprocess.CompletedProcess:
    if script not in _plain_cache:
        _plain_cache[script] = subprocess.run(["bash", script], cwd=CORPUS, env=clean_env(LC_ALL="C.UTF-8"),
                                              capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    return _plain_cache[script]


def run_traced(script: str, level: str, env: Dict[str, str]) -> subprocess.CompletedProcess:
    if level.endswith("-shell"):
        env = dict(env, GWTRACE_ACCEL="0")
    return subprocess.run([GWTRACE, "run", "--name", f"corpus:{script}:{level}", "--level", level.split("-")[0],
                           "--", "bash", script], cwd=CORPUS, env=env, capture_output=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def trace_of(receiver: OtlpReceiver, root_name: str, timeout: float = 20.0) -> Tuple[ReceivedSpan, List[ReceivedSpan]]:
    """The spans of the trace whose root is ``root_name``. gwtrace run writes
    the root's end after CMD exited, and the sidecar exports in log order, so
    once the root arrived the rest of the trace has too."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        root = receiver.by_name(root_name)
        if root is not None:
            spans: List[ReceivedSpan] = []
            while True:               # until a batch being decoded has landed
                time.sleep(0.25)
                with receiver.lock:
                    now = [s for s in receiver.spans if s.trace_id == root.trace_id]
                if len(now) == len(spans):
                    return root, now
                spans = now
        time.sleep(0.05)
    raise AssertionError(f"no span {root_name!r} arrived")


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("script", SCRIPTS)
def test_corpus_script_is_unchanged_and_traced(script: str, level: str, tracing) -> None:
    env, receiver = tracing
    plain = run_plain(script)
    traced = run_traced(script, level, env)
    assert traced.stdout == plain.stdout
    assert traced.stderr == plain.stderr
    assert traced.returncode == plain.returncode

    root, spans = trace_of(receiver, f"corpus:{script}:{level}")
    assert STATUS[root.status_code] == ("ERROR" if plain.returncode else "OK")
    if plain.returncode:
        assert root.attributes["process.exit.code"] == plain.returncode
    expected = expected_tree(script)
    if level.startswith("functions"):
        assert render_run(spans, root, script) == expected
    elif level.startswith("scripts"):
        # The scripts level adds a span for each function a script calls
        # from its own top level (gwtrace-auto-top.sh): the script tree is
        # the same, and each such span is a function of the expected tree,
        # the child of a script span.
        functions = [s for s in spans if s.attributes.get("gwtrace.kind") == "function"]
        assert render_run(spans, root, script, keep=lambda s: s.attributes.get("gwtrace.kind") != "function") \
            == scripts_only(expected)
        scripts = {s.span_id for s in spans if s.attributes.get("gwtrace.kind") == "script"} | {root.span_id}
        names = {line.strip().rsplit(" ", 1)[0] for line in expected}
        for span in functions:
            assert span.parent_id in scripts and span.name in names, span.name
    else:
        commands = [s for s in spans if s.attributes.get("gwtrace.kind") == "command"]
        assert render_run(spans, root, script, keep=lambda s: s.attributes.get("gwtrace.kind") != "command") == expected
        for span in commands:
            assert span.parent_id in {s.span_id for s in spans}
            assert span.attributes["process.executable.name"] == span.name
    incomplete = [s.name for s in spans if s.attributes.get("gwtrace.incomplete")]
    assert incomplete == []


def test_every_corpus_script_declares_its_tree() -> None:
    for script in SCRIPTS:
        tree = expected_tree(script)
        assert tree and tree[0] == tree[0].lstrip() and re.match(r"\S+ (OK|ERROR)$", tree[0]), script


def test_tested_status_keeps_the_exit_code(tracing) -> None:
    """A status the caller tested is OK but keeps process.exit.code; `if ! f`
    records f's own status (issue 9)."""
    env, receiver = tracing
    traced = run_traced("tested_status.sh", "functions", dict(env))
    assert traced.returncode == 0
    root, spans = trace_of(receiver, "corpus:tested_status.sh:functions")
    fails = [s for s in spans if s.name == "no"]
    assert len(fails) == 11
    assert all(s.attributes["process.exit.code"] == 3 for s in fails)
    tested = [s for s in fails if s.attributes.get("gwtrace.status.tested") is True]
    assert len(tested) == 10 and all(STATUS[s.status_code] == "OK" for s in tested)
    untested = [s for s in fails if s not in tested]
    assert [STATUS[s.status_code] for s in untested] == ["ERROR"]
    yes = [s for s in spans if s.name == "yes"]
    assert [STATUS[s.status_code] for s in yes] == ["OK", "OK"]
    assert all(s.attributes.get("process.exit.code", 0) == 0 for s in yes)


def test_scripts_level_spans_top_level_calls(tracing) -> None:
    """At the scripts level, the functions a script calls from its top level
    are spans (a glidein's downloads, signature checks, its validation
    scripts under them); a `! f` is f's own status, tested; nothing runs in
    functions or $(...) (issue 9)."""
    env, receiver = tracing
    traced = run_traced("top_functions.sh", "scripts", dict(env))
    assert traced.returncode == 0 and traced.stdout == run_plain("top_functions.sh").stdout
    root, spans = trace_of(receiver, "corpus:top_functions.sh:scripts")
    assert render_run(spans, root, "top_functions.sh") == [
        "top_functions.sh OK", "  fetch_file OK", "    bash -c OK", "  check_signature OK",
        "  fetch_file OK", "    bash -c OK", "  check_signature OK", "  report OK"]
    checks = [s for s in spans if s.name == "check_signature"]
    assert [s.attributes.get("process.exit.code", 0) for s in checks] == [1, 0]
    assert checks[0].attributes["gwtrace.status.tested"] is True
    assert all(s.attributes["gwtrace.kind"] == "function" for s in spans if s.name in ("fetch_file", "report"))


def test_a_script_replaced_by_a_program_that_is_not_bash_says_so(tracing) -> None:
    """exec_nonbash.sh: the spans the exec left open end when the process is
    gone (not at the sidecar's stop), after the program's run, UNSET, with what
    replaced bash; the program's status is the process's, unchanged."""
    env, receiver = tracing
    traced = subprocess.run([GWTRACE, "run", "--name", "exec_nonbash:says_so", "--level", "functions", "--",
                             "bash", "exec_nonbash.sh"], cwd=CORPUS, env=env, capture_output=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert traced.returncode == 0 and b"child status: 3\n" in traced.stdout
    _, spans = trace_of(receiver, "exec_nonbash:says_so")
    gone = {s.name: s for s in spans if s.attributes.get("gwtrace.process_gone")}
    assert set(gone) == {"exec_sh.sh", "prepare"}
    for span in gone.values():
        assert span.attributes["process.exec"] is True and span.attributes["gwtrace.replaced_by"] == "dash"
        assert STATUS[span.status_code] == "UNSET" and not span.attributes.get("gwtrace.incomplete")
        assert 1.0 <= (span.end_ns - span.start_ns) / 1e9 < 3.0     # dash's second, then seen gone
