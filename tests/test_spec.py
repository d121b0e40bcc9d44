"""spec/: the one description of the event line and of the accelerator's shared names, held
against every copy of it.

``spec/accel-state.json`` names every shell variable, function and builtin the C code of
bash/accel/ shares with the shell code: the C code reaches them only through the macros of the
header generated from it (bash/accel/state_names.h), every row is used, and each row's type and
owner (who writes, who reads) agree with what the C code and the shell files do.

``spec/event-line.json`` describes the event line: its records and their fields in order, the
escapes, the limits and cut rules, the TRACEPARENT rule's constants. The parser and reference
formatter (``gwtrace.wire.events``), the limits and line templates of the bash library, the auto
layer, the job wrapper and the C builtins, docs/protocol.md and tests/test_conformance.py's tables
are checked against it here.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Iterable, List, Set, Tuple

import pytest

from conftest import REPO

from gwtrace.shim import accel
from gwtrace.wire import events

SPEC_DIR = REPO / "spec"
ACCEL = json.loads((SPEC_DIR / "accel-state.json").read_text(encoding="utf-8"))
LINE = json.loads((SPEC_DIR / "event-line.json").read_text(encoding="utf-8"))
C_DIR = REPO / "bash" / "accel"
HEADER = C_DIR / "state_names.h"
SHELL_FILES = sorted((REPO / "bash").glob("gwtrace-auto*.sh"))
CHECK_SCRIPT = REPO / "sidecar" / "gwtrace" / "shim" / "accel_check.py"


def _limit(name: str) -> Any:
    return LINE["limits"][name]["value"]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_state_names", SPEC_DIR / "gen_state_names.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the accelerator's names ---------------------------------------------------------------------

#: What a name of the shell looks like in C: ours, the two exported ones, bash's own.
_SHELL_NAME = re.compile(r'"((?:_gwtrace_|GWTRACE_|TRACEPARENT|BASH_|FUNCNAME|PIPESTATUS|trace_|gwtrace_)[^"]*)"')
#: The macros state_names.h defines: one family per kind of row, and the stamp.
_MACRO = re.compile(r"\b(?:GW_(?:V|ENV|BASH|FN|BI|P|PREFIX|FILE)_[A-Z0-9_]+|GWTRACE_ACCEL_STAMP)\b")
#: How the C code reads and writes a shell variable (shellvars.h), by the macro's position.
_C_READS = re.compile(r"\b(?:gw_sval|gw_ival|gw_aref|gw_array_of|find_variable)\((GW_\w+)")
_C_WRITES = re.compile(r"\b(?:gw_sset|gw_iset|gw_aset|bind_variable|gw_export|unbind_variable)\((GW_\w+)")
_C_ASSOC = re.compile(r"\bgw_plain\((GW_\w+), att_assoc\)")
_C_SCALAR = re.compile(r"\b(?:gw_sval|gw_ival|gw_sset|gw_iset)\((GW_\w+)")
_C_ARRAY = re.compile(r"\b(?:gw_aref|gw_aset|gw_array_of)\((GW_\w+)")
_C_CALLS = re.compile(r"\b(?:find_function|top_function)\((GW_\w+)")


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def c_problems(sources: Dict[str, str], header: str, spec: Dict[str, Any]) -> List[str]:
    """What is wrong between the C sources (name -> text, the header left out), the generated
    header and the description: a shell name written as a literal, a macro the header lacks,
    a row no C code uses, a type or an owner the C code contradicts."""
    problems: List[str] = []
    defined = set(re.findall(r"#define (GW\w+)", header))
    rows = {row["macro"]: row for row in spec["names"]}
    extra = {row["macro"] for key in ("prefixes", "files") for row in spec[key]} | {spec["stamp"]["macro"]}
    code = {name: _strip_comments(text) for name, text in sources.items()}
    used: Set[str] = set()
    for name, text in code.items():
        for literal in _SHELL_NAME.findall(text):
            problems.append(f"{name}: the shell name {literal!r} as a literal: use its macro (spec/accel-state.json)")
        used |= set(_MACRO.findall(text))
    for macro in sorted(used - defined):
        problems.append(f"{macro}: used in C, not in state_names.h")
    for macro in sorted((set(rows) | extra) - used):
        problems.append(f"{macro}: a row of spec/accel-state.json no C code uses (stale)")
    text = "\n".join(code.values())
    for pattern, side, field in ((_C_READS, "C", "read_by"), (_C_WRITES, "C", "written_by")):
        for macro in set(pattern.findall(text)):
            if macro in rows and side not in rows[macro][field]:
                verb = "reads" if field == "read_by" else "writes"
                problems.append(f"{macro}: the C code {verb} it, the row says {field} {rows[macro][field]}")
    for pattern, kind in ((_C_ASSOC, "assoc"), (_C_SCALAR, "scalar"), (_C_ARRAY, "array")):
        for macro in set(pattern.findall(text)):
            if macro in rows and rows[macro]["type"] != kind:
                problems.append(f"{macro}: used as {kind} in C, the row says {rows[macro]['type']}")
    assoc = set(_C_ASSOC.findall(text)) | set(re.findall(r"assoc_insert\(find_variable\((GW_\w+)\)", text))
    reads = set(_C_READS.findall(text)) | set(_C_CALLS.findall(text)) | assoc
    writes = set(_C_WRITES.findall(text)) | assoc
    for macro, row in rows.items():
        if row["type"] != "builtin" and "C" in row["read_by"] and macro not in reads:
            problems.append(f"{macro}: the row says the C code reads it; it does not")
        if row["type"] != "builtin" and "C" in row["written_by"] and macro not in writes:
            problems.append(f"{macro}: the row says the C code writes it; it does not")
    for macro in set(_C_CALLS.findall(text)):
        if macro in rows and rows[macro]["type"] != "function":
            problems.append(f"{macro}: called as a function in C, the row says {rows[macro]['type']}")
    return problems


def _c_sources() -> Dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(C_DIR.glob("*.[ch]")) if p != HEADER}


def test_the_header_is_the_one_generated_from_the_description() -> None:
    """`make spec` leaves nothing to commit: the header is what the generator writes today."""
    assert HEADER.read_text(encoding="utf-8") == _generator().render(ACCEL), "run `make spec`"


def test_the_c_code_names_exactly_the_rows_of_the_description() -> None:
    assert c_problems(_c_sources(), HEADER.read_text(encoding="utf-8"), ACCEL) == []


def test_the_check_finds_a_literal_a_stale_row_and_a_wrong_type() -> None:
    """The check itself: a name written as a literal, a row no C uses, an array read as a scalar."""
    header = HEADER.read_text(encoding="utf-8")
    sources = _c_sources()
    sources["functions.c"] = sources["functions.c"].replace("gw_sval(GW_V_FLAGS)", 'gw_sval("_gwtrace_afl")', 1)
    sources["shellvars.c"] += "\nstatic void f(void) { gw_sval(GW_V_FRAME_DEPTH); }\n"
    found = c_problems(sources, header, ACCEL)
    assert any("'_gwtrace_afl' as a literal" in p for p in found), found
    assert any(p.startswith("GW_V_FRAME_DEPTH: used as scalar") for p in found), found
    scripts_only = {"scripts.c": sources["scripts.c"]}
    assert any(p.startswith("GW_V_FRAMES: a row") and "stale" in p for p in c_problems(scripts_only, header, ACCEL))


def test_rows_are_unique_and_complete() -> None:
    rows = ACCEL["names"]
    for key in ("name", "macro"):
        values = [row[key] for row in rows]
        assert len(values) == len(set(values)), key
    for row in rows:
        assert row["kind"] in ACCEL["kinds"], row
        assert row["type"] in {"scalar", "array", "assoc", "function", "builtin"}, row
        assert row["meaning"] and row["written_by"] and row["read_by"], row
        assert set(row["written_by"] + row["read_by"]) <= {"shell", "C", "bash"}, row


def _shell_text(paths: Iterable[Path]) -> str:
    """The shell files' code, comments dropped (a name in a note is no use of it)."""
    out = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("#"):
                continue
            out.append(line)
    return "\n".join(out)


def _shell_uses(name: str, text: str) -> Tuple[bool, bool]:
    """(assigned, read) in the shell text: NAME=, NAME+=, NAME[...]=, (( NAME op= )), export NAME=;
    $NAME, ${NAME...}, ${#NAME...}, an arithmetic or subscripted use."""
    n = re.escape(name)
    assigned = re.search(rf"(?<![\w$#{{]){n}(\[[^\]\n]*\])?\+?=(?!=)|\(\([^)]*\b{n} *[-+]?=[^=]|\+\+{n}\b|\b{n}\+\+|"
                         rf"declare -g[aA] {n}\b", text)
    read = re.search(rf"\$\{{?[#!]?{n}\b|\(\([^)\n]*\b{n}\b|\[\[[^\]\n]*\b{n}\[|\[{n}\b", text)
    return bool(assigned), bool(read)


def test_the_shell_files_use_each_state_row_as_it_says() -> None:
    """Each of the accelerator's own variables is in the auto layer's code, assigned there when
    the shell writes it and read when the shell reads it, with the row's type."""
    text = _shell_text(SHELL_FILES)
    problems = []
    for row in ACCEL["names"]:
        if row["kind"] not in ("state", "context"):
            continue
        name = row["name"]
        assigned, read = _shell_uses(name, text)
        if "shell" in row["written_by"] and not assigned:
            problems.append(f"{name}: the row says the shell writes it; no assignment in bash/gwtrace-auto*.sh")
        if "shell" in row["read_by"] and not read:
            problems.append(f"{name}: the row says the shell reads it; no read in bash/gwtrace-auto*.sh")
        declared_assoc = re.search(rf"declare -gA {re.escape(name)}\b", text) is not None
        array = re.search(rf"(?<![\w$]){re.escape(name)}\+?=\(", text) is not None
        shell_type = "assoc" if declared_assoc else "array" if array else "scalar"
        if shell_type != row["type"]:
            problems.append(f"{name}: a {shell_type} in the shell files, the row says {row['type']}")
    assert problems == []


def test_the_functions_builtins_and_probe_names_are_where_the_rows_say() -> None:
    shell = _shell_text(SHELL_FILES)
    check = CHECK_SCRIPT.read_text(encoding="utf-8")
    for row in ACCEL["names"]:
        name = re.escape(row["name"])
        if row["kind"] == "function":
            assert re.search(rf"^{name}\(\) \{{", shell, re.M), row["name"]
        elif row["kind"] == "builtin":
            assert re.search(rf"\b{name}\b", shell + check), row["name"]
        elif row["kind"] == "probe":
            assert re.search(rf"\b{name}\b", check), row["name"]


def test_every_gwtrace_name_the_c_files_mention_is_described() -> None:
    """The other way: a _gwtrace_* name the C files mention anywhere (comments included, where
    they explain a name) is a row, a shell function of the auto layer, or a C identifier."""
    rows = {row["name"] for row in ACCEL["names"]}
    functions = set(re.findall(r"^(_gwtrace_\w+)\(\) \{", _shell_text(SHELL_FILES), re.M))
    c_text = "\n".join(_c_sources().values()) + HEADER.read_text(encoding="utf-8")
    named = set(re.findall(r"\b_gwtrace_[a-z0-9_]+\b(?!\*)", c_text))
    c_identifiers = {n for n in named if n.endswith(("_struct", "_builtin", "_doc"))}
    assert named - rows - functions - c_identifiers == set()


def test_every_state_variable_of_the_auto_layer_has_its_meaning() -> None:
    """Every global _gwtrace_a* name of the auto layer's code is described (a row the C code
    shares, or a shell_only row set up in the file it names), and every row names one."""
    text = _shell_text(SHELL_FILES)
    functions = set(re.findall(r"^\s*(_gwtrace_\w+)\(\) \{", text, re.M))
    used = set(re.findall(r"\b_gwtrace_a\w+(?![\w*{$])", text)) - functions   # not _gwtrace_au$X, _gwtrace_a*
    shared = {row["name"] for row in ACCEL["names"]}
    shell_only = {row["name"]: row for row in ACCEL["shell_only"]}
    assert not shared & set(shell_only)
    assert sorted(used - shared - set(shell_only)) == [], "describe them in spec/accel-state.json"
    assert sorted(set(shell_only) - used) == [], "stale rows: no shell code uses them"
    for name, row in shell_only.items():
        assert row["meaning"], name
        assert re.search(rf"\b{name}\b", _shell_text([REPO / row["set_up_in"]])), (name, row["set_up_in"])


def test_the_stamp_is_the_shell_files_and_the_libraries() -> None:
    stamp = ACCEL["stamp"]["value"]
    assert accel.shell_stamp(str(REPO / "bash")) == stamp
    assert f'#define {ACCEL["stamp"]["macro"]}' in HEADER.read_text(encoding="utf-8")
    assert f'"{stamp}"' in HEADER.read_text(encoding="utf-8")


# --- the event line ------------------------------------------------------------------------------

def _example_line(kind: str) -> Tuple[List[str], str]:
    """(the fields, the line) of an example ``kind`` record, built from the fields' examples."""
    f = LINE["fields"]
    values = [f[name]["example"] for name in LINE["head"]]
    values[1] = kind
    values += [f[name]["example"] for name in LINE["records"][kind]["fields"]]
    return values, LINE["separator"]["value"].join(values + [f["attribute"]["example"]])


#: Event's field for each described field (wire.events.Event), and how the parser types it.
_EVENT_FIELD = {"ts": ("ts_us", lambda v: int(v.replace(".", ""))), "pid": ("pid", int),
                "trace_id": ("trace_id", str), "span_id": ("span_id", str), "kind": ("kind", str),
                "parent": ("parent_id", str), "remote": ("parent_remote", lambda v: v == "1"),
                "flags": ("flags", lambda v: int(v, 16)), "tracestate": ("tracestate", str),
                "name": ("name", str), "event_name": ("name", str), "status": ("status", str)}


def test_the_parser_reads_each_record_in_the_described_order() -> None:
    assert set(LINE["records"]) == set(events._FAST_RE)
    for kind in LINE["records"]:
        values, line = _example_line(kind)
        event = events.parse_line(line.encode())
        names = LINE["head"] + LINE["records"][kind]["fields"]
        for name, value in zip(names[1:], values[1:]):
            field, typed = _EVENT_FIELD[name]
            assert getattr(event, field) == typed(value), (kind, name)
        key, _, value = LINE["fields"]["attribute"]["example"].partition("=")
        assert event.attributes == ((key, value),)
        fields = LINE["records"][kind]["fields"]
        if fields:
            short = LINE["separator"]["value"].join(values[:-1])
            with pytest.raises(events.ProtocolError):
                events.parse_line(short.encode())
    head, _ = _example_line("A")
    with pytest.raises(events.ProtocolError):
        events.parse_line("\t".join([head[0], "X"] + head[2:]).encode())


def test_the_reference_formatter_writes_the_described_records() -> None:
    for kind in LINE["records"]:
        values, line = _example_line(kind)
        key, _, value = LINE["fields"]["attribute"]["example"].partition("=")
        built = events.format_event(kind, *values[2:6], *values[6:], attributes={key: value})
        assert built == (line + LINE["terminator"]["value"]).encode("utf-8")


def test_each_field_example_has_the_described_format() -> None:
    for name, field in LINE["fields"].items():
        if field["format"] != "text":
            assert re.fullmatch(field["format"], field["example"]), name
        if field.get("not_all_zero"):
            _, line = _example_line("B")
            zero = line.replace(field["example"], "0" * len(field["example"]), 1)
            with pytest.raises(events.ProtocolError):
                events.parse_line(zero.encode())


def test_the_parsers_patterns_are_the_described_formats() -> None:
    """The parser's own patterns for the timestamp, the ids and the status, groups aside."""
    def bare(pattern: str) -> str:
        return re.sub(r"\(\?:|[()]|\\Z$", "", pattern)
    f = LINE["fields"]
    assert bare(events._TS) == f["ts"]["format"]
    assert bare(events._STATUS_RE.pattern) == f["status"]["format"]
    assert bare(events._IDS) == "\\t".join(["", f["pid"]["format"], f["trace_id"]["format"], f["span_id"]["format"]])
    assert bare(events._FLAGS_RE.pattern) == f["flags"]["format"]


def test_the_escapes_are_the_described_ones() -> None:
    table = LINE["escapes"]["table"]
    for char, escaped in table.items():
        assert events.escape(char) == escaped and events.unescape(escaped) == char
    plain = "".join(chr(c) for c in range(32, 127) if chr(c) not in table)
    assert events.escape(plain) == plain
    assert LINE["separator"]["value"] in table and LINE["terminator"]["value"] in table


def test_wire_events_constants_are_the_described_ones() -> None:
    assert events.PROTOCOL_TAG == LINE["tag"]["value"].encode()
    assert events.MAX_LINE_BYTES == _limit("max_line_bytes")
    assert events.WRITE_LINE_BYTES == _limit("write_line_chars")
    assert events._line_limit("é") == _limit("write_line_chars_non_ascii")
    assert events.FIELD_CHARS == _limit("field_chars")
    assert events.MESSAGE_CHARS == _limit("message_chars")
    assert events.TRUNCATED == _limit("truncated_marker")
    assert _limit("cut_reserve_chars") == len(_limit("truncated_marker")) + 2
    assert _limit("write_line_chars") < _limit("atomic_write_bytes")
    assert _limit("write_line_chars_non_ascii") * 4 <= _limit("write_line_chars")
    digits = _limit("exit_code_digits")
    assert events.typed_value("9" * digits) == int("9" * digits) and events.typed_value("9" * (digits + 1)) == "9" * (digits + 1)


def test_the_reference_formatter_cuts_by_the_described_rules() -> None:
    trace, span = LINE["fields"]["trace_id"]["example"], LINE["fields"]["span_id"]["example"]
    marker, share = _limit("truncated_marker"), _limit("min_cut_share")
    for char, limit in (("x", _limit("write_line_chars")), ("é", _limit("write_line_chars_non_ascii"))):
        line = events.format_event("A", 1, 1, trace, span, attributes={"k": char * 9000, "short": "v"})
        text = line.decode()
        assert len(text) <= limit and text.rstrip("\n").endswith("\t" + marker) and "\tshort=v\t" in text
    many = {f"k{i}": "v" * 300 for i in range(40)}
    text = events.format_event("A", 1, 1, trace, span, attributes=many).decode()
    assert all(len(f.partition("=")[2]) >= share for f in text.split("\t")[6:-1])
    long_name = events.format_event("V", 1, 1, trace, span, "n" * 9000).decode()
    assert len(long_name) <= _limit("write_line_chars") + len(marker) + 2 and long_name.endswith(marker + "\n")


#: Where each producer states a limit: (file, pattern whose group 1 is the value, limit).
_SITES: List[Tuple[str, str, str]] = [
    ("bash/gwtrace.sh", r"_gwtrace_max=(\d+) _gwtrace_total", "write_line_chars"),
    ("bash/gwtrace.sh", r"\n    _gwtrace_max=(\d+)\n    # Lengths in characters", "write_line_chars_non_ascii"),
    ("bash/gwtrace.sh", r"builtin local _gwtrace_max=(\d+) _gwtrace_e=", "write_line_chars"),
    ("bash/gwtrace.sh", r"ascii:\]\]\* \]\]; then\n    _gwtrace_max=(\d+)\n    # shellcheck disable=SC2015  # as in",
     "write_line_chars_non_ascii"),
    ("bash/gwtrace.sh", r"_gwtrace_max - \$\{#_gwtrace_line\} - (\d+) \)\)", "cut_reserve_chars"),
    ("bash/gwtrace.sh", r"\(\( _gwtrace_share >= (\d+) \)\) \|\| _gwtrace_share=\1", "min_cut_share"),
    ("bash/gwtrace.sh", r"\(\( \$\{#_gwtrace_a\} <= (\d+) \)\) \|\| _gwtrace_a=\$\{_gwtrace_a:0:\1\}", "field_chars"),
    ("bash/gwtrace.sh", r"\(\( \$\{#_gwtrace_r\} <= (\d+) \)\) \|\| _gwtrace_r=\$\{_gwtrace_r:0:\1\}", "message_chars"),
    ("bash/gwtrace.sh", r"_gwtrace_r=\$\{1:0:(\d+)\}", "message_chars"),
    ("bash/gwtrace.sh", r"code\.file\.path=\$\{BASH_SOURCE\[_gwtrace_k\]:0:(\d+)\}", "code_file_path_chars"),
    ("bash/gwtrace.sh", r"\(\( \$\{#_gwtrace_tp\} >= (\d+) \)\)", "version00_length"),
    ("bash/gwtrace.sh", r"_gwtrace_fl2 & (\d+) \)\)", "kept_flag_bits"),
    ("bash/gwtrace-auto.sh", r"\(\( \$\{#_gwtrace_lpath\} <= (\d+) \)\) \|\| \{ _gwtrace_auto_extra; _gwtrace_auto_cut", "code_file_path_chars"),
    ("bash/gwtrace-auto.sh", r"\[\[ \$\{#_gwtrace_ltp\} -eq (\d+) &&", "version00_length"),
    ("bash/gwtrace-auto.sh", r"_gwtrace_afl=0\$\(\( 16#\$\{_gwtrace_ltp:54:1\} & (\d+) \)\)", "kept_flag_bits"),
    ("bash/gwtrace-auto-frames.sh", r"\(\( \$\{#_gwtrace_lcut\} <= (\d+) \)\) \|\| \{ _gwtrace_auto_extra; _gwtrace_auto_cut", "code_file_path_chars"),
    ("bash/gwtrace-auto-util.sh", r"\(\( \$\{#_gwtrace_lfile\} <= (\d+) \)\) \|\| \{ _gwtrace_auto_extra; _gwtrace_auto_cut",
     "code_file_path_chars"),
    ("bash/gwtrace-auto-extra.sh", r"builtin printf -v \"\$1\" '%s' \"\$\{!1:0:(\d+)\}\"", "code_file_path_chars"),
    ("bash/gwtrace-auto-util.sh", r"_gwtrace_auto_esc \"\$\{_gwtrace_lname:0:(\d+)\}\"", "function_name_chars"),
    ("shim/gwtrace-job-wrapper", r"_gwtrace_jw_max=(\d+)\n", "write_line_chars"),
    ("shim/gwtrace-job-wrapper", r"\*\) _gwtrace_jw_max=(\d+) ;;", "write_line_chars_non_ascii"),
    ("shim/gwtrace-job-wrapper", r"\"\$\{#_gwtrace_jw_r\}\" -gt (\d+) \]", "field_chars"),
    ("shim/gwtrace-job-wrapper", r"printf '%\.(\d+)s'", "field_chars"),
    ("shim/gwtrace-job-wrapper", r"\[ \$\{#_gwtrace_jw_r\} -eq (\d+) \]", "version00_length"),
]


def _described(name: str) -> Any:
    return LINE["limits"][name]["value"] if name in LINE["limits"] else LINE["traceparent"][name]


@pytest.mark.parametrize("path, pattern, name", _SITES, ids=[f"{p}: {n}" for p, _, n in _SITES])
def test_each_producer_states_the_described_limit(path: str, pattern: str, name: str) -> None:
    found = re.findall(pattern, (REPO / path).read_text(encoding="utf-8"))
    assert found, f"{path}: {pattern!r} not found (the code moved: update the site in tests/test_spec.py)"
    assert {int(v) for v in found} == {_described(name)}, (path, name, found)


def test_every_line_cutting_constant_of_the_bash_library_is_a_described_site() -> None:
    """A new `_gwtrace_max=N` in the library is one more site: all of them hold a described limit."""
    text = (REPO / "bash" / "gwtrace.sh").read_text(encoding="utf-8")
    assert {int(v) for v in re.findall(r"_gwtrace_max=(\d+)", text)} == \
        {_limit("write_line_chars"), _limit("write_line_chars_non_ascii")}
    for path in ("bash/gwtrace.sh", "shim/gwtrace-job-wrapper"):
        assert _limit("truncated_marker") in (REPO / path).read_text(encoding="utf-8")


def test_the_c_builtins_write_the_described_records() -> None:
    """Each `gw1\\tK\\t...` format of the C code has the head and K's fields, in that order."""
    text = _strip_comments("\n".join(_c_sources().values()))
    formats = re.findall(r'"(gw1\\t[A-Z][^"]*)"', text)
    assert formats
    for fmt in formats:
        parts = fmt.split("\\n")[0].split("\\t")
        kind = parts[1]
        assert parts[0] == LINE["tag"]["value"] and kind in LINE["records"], fmt
        assert len(parts) >= len(LINE["head"]) + len(LINE["records"][kind]["fields"]), fmt
        assert all("=" in p for p in parts[len(LINE["head"]) + len(LINE["records"][kind]["fields"]):]), fmt


#: The shell producers' field separators, and the variables that hold several fixed fields at once.
_SHELL_TABS = ("${_gwtrace_lt}", "${_gwtrace_tab}", "$_gwtrace_tab", "${_gwtrace_jw_tab}", "$_gwtrace_jw_tab", "\t")
_SHELL_FIELDS = {"$_gwtrace_atk2": "PARENT\tREMOTE\tFLAGS\tTRACESTATE", "$_gwtrace_atk": "PID\tTRACE"}
_SHELL_PRODUCERS = sorted((REPO / "bash").glob("*.sh")) + [REPO / "shim" / "gwtrace-job-wrapper"]
_TEMPLATE = re.compile(r'(?:(\w+)=)?"(gw1(?:\t|\$\{?_gwtrace_(?:lt|tab|jw_tab)\}?)[BEVA](?:\t|\$)[^"]*)"')


def shell_templates(text: str) -> List[Tuple[List[str], bool]]:
    """The fields of each event-line template ("gw1<TAB>K<TAB>...") of a shell file's code, and
    whether the variable it is assigned to is appended to within the next lines (a head whose
    last fields follow, escaped)."""
    out = []
    for match in _TEMPLATE.finditer(text):
        variable, template = match.groups()
        after = "\n".join(text[match.end():].split("\n")[1:6])
        for tab in _SHELL_TABS:
            template = template.replace(tab, "\x00")
        for name, fields in _SHELL_FIELDS.items():
            template = template.replace(name, fields.replace("\t", "\x00"))
        out.append((template.split("\x00"), bool(variable) and f"{variable}+=" in after))
    return out


def template_problem(parts: List[str], continued: bool = False) -> str:
    """Why a template's fields are not the described head and fields of its kind ('' if they are):
    too few (a continued head may leave its last two to the lines after it), or an attribute
    (key=value) where a fixed field belongs."""
    kind = parts[1]
    fixed = len(LINE["head"]) + len(LINE["records"][kind]["fields"])
    if parts[0] != LINE["tag"]["value"] or len(parts) < fixed - (2 if continued else 0):
        return f"{kind}: {len(parts)} fields, the description has {fixed}"
    if any(re.match(r"[\w.]+=", part) for part in parts[2:fixed]):
        return f"{kind}: an attribute among the fixed fields"
    return ""


def test_the_shell_producers_templates_have_the_described_fields() -> None:
    """Each hand-written line of the library, the auto layer and the job wrapper: the head and
    its kind's fields, in number, before any attribute (the conformance tests check the bytes)."""
    found = {path.name: shell_templates(_shell_text([path])) for path in _SHELL_PRODUCERS}
    kinds = {parts[1] for templates in found.values() for parts, _ in templates}
    assert sum(len(t) for t in found.values()) >= 25 and kinds == set(LINE["records"])
    assert [(name, template_problem(*t)) for name, templates in found.items() for t in templates
            if template_problem(*t)] == []
    assert template_problem(["gw1", "B", "$t", "$$", "$tr", "$sp", "-", "0", "01", "name", "k=v"]).endswith("fixed fields")
    assert template_problem(["gw1", "E", "$t", "$$", "$tr", "$sp"]).startswith("E: 6 fields")


def test_docs_protocol_shows_the_described_records() -> None:
    """docs/protocol.md's summary block: each kind's fields, in the described order."""
    doc = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    block = doc[doc.index("## Lines"):].split("```")[1]
    shown = {}
    for line in block.strip().splitlines():
        words = re.findall(r"<([^>]+)>|(\S+)", line)
        tokens = [a or b for a, b in words]
        shown[tokens[1]] = [t.replace(" ", "_") for t in tokens[2:] if t != "[attr...]"]
    assert set(shown) == set(LINE["records"])
    for kind, fields in shown.items():
        described = LINE["head"][2:] + LINE["records"][kind]["fields"]
        assert fields == described, kind


# --- tests/test_conformance.py's tables ----------------------------------------------------------

def _conformance() -> ModuleType:
    import test_conformance
    return test_conformance


def test_the_traceparent_table_has_a_rule_for_each_row_and_rows_for_each_rule() -> None:
    rows = [label for label, _, _ in _conformance().TRACEPARENTS]
    claimed = [case for rule in LINE["traceparent"]["rules"] for case in rule["cases"]]
    assert sorted(claimed) == sorted(rows)
    version00 = _described("version00_length")
    valid = _conformance().VALID
    assert len(valid) == version00 and valid.count("-") == 3
    tp = LINE["traceparent"]
    assert [len(p) for p in valid.split("-")[1:3]] == [tp["trace_id_hex"], tp["span_id_hex"]]


def test_the_conformance_inputs_reach_every_escape_and_limit() -> None:
    c = _conformance()
    texts = "".join(c.TEXTS)
    assert all(char in texts for char in LINE["escapes"]["table"])
    assert max(len(v) for v in c.VALUES if v.isascii()) > _limit("write_line_chars")
    assert max(len(v) for v in c.VALUES if not v.isascii()) > _limit("write_line_chars_non_ascii")
    assert max(len(m) for m in c.MESSAGES) > _limit("message_chars")
    assert "<= ATOMIC_WRITE_BYTES" in inspect.getsource(c._check) and c.KINDS == set(LINE["records"])
