"""The state directory: privacy, ownership and crash consistency."""

import json
import os

import pytest

from gwtrace.assembler import SpanRecord
from gwtrace.spool import Checkpoint, Spool, SpoolError


def span(i):
    return SpanRecord("4bf92f3577b34da6a3ce929d0e0e4736", f"{i + 1:016x}", "", False, 1, "", f"s{i}", 1, 7, 2,
                      "ok", "", {"k": "tab\there"}, [("e", 1, {"x": 1})])


def test_directory_must_be_private(tmp_path):
    d = tmp_path / "open"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    with pytest.raises(SpoolError, match="other users"):
        Spool(str(d))
    assert oct(os.stat(Spool(str(tmp_path / "new")).dir).st_mode & 0o777) == "0o700"


def test_one_owner_at_a_time(tmp_path):
    a, b = Spool(str(tmp_path / "gw")), Spool(str(tmp_path / "gw"))
    a.acquire()
    assert b.is_owned() and b.owner_pid() == os.getpid()
    with pytest.raises(SpoolError, match="another sidecar"):
        b.acquire()
    a.release()
    assert not b.is_owned()


def test_batches_round_trip_and_uncommitted_ones_are_discarded(tmp_path):
    sp = Spool(str(tmp_path / "gw"))
    sp.write_batch(0, [span(0), span(1)])
    sp.write_batch(1, [span(2)])
    sp.save_checkpoint(Checkpoint(offset=10, next_seq=1))
    assert [s.to_json() for s in sp.read_batch(0)] == [span(0).to_json(), span(1).to_json()]
    # Batch 1 was written but never committed: a restart regenerates it.
    assert sp.discard_uncommitted(sp.load_checkpoint().next_seq) == 1
    assert sp.batch_seqs() == [0]


def test_corrupt_checkpoint_is_a_clear_error(tmp_path):
    sp = Spool(str(tmp_path / "gw"))
    with open(sp.path("state.json"), "w") as f:
        f.write("{not json")
    with pytest.raises(SpoolError, match="corrupt checkpoint"):
        sp.load_checkpoint()


def test_outbox_rows_keep_every_field_and_type(tmp_path):
    sp = Spool(str(tmp_path / "gw"))
    rich = SpanRecord("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "1111111111111111", True, 1,
                      "rojo=00f067aa0ba902b7", "héllo ✓\tname", 10, 7, 20, "error", "exit code 3",
                      {"process.exit.code": 3, "ok": True, "n": "08", "x.name": "true"},
                      [("tick", 15, {"i": 1}), ("tock", 16, {})], dropped_attributes=2, dropped_events=5)
    sp.write_batch(0, [rich, span(1)])
    with open(sp.batch_path(0), "rb") as f:
        doc = json.loads(f.read())
    assert doc["version"] == 2 and len(doc["spans"][0]) == len(doc["fields"])
    back = sp.read_batch(0)
    assert back == [rich, span(1)]
    assert back[0].events[0] == ("tick", 15, {"i": 1}) and type(back[0].attributes["ok"]) is bool


def test_version_1_outbox_files_are_still_read(tmp_path):
    # Written by a sidecar before outbox version 2: delivered after an upgrade.
    sp = Spool(str(tmp_path / "gw"))
    with open(sp.batch_path(3), "w") as f:
        json.dump({"version": 1, "spans": [span(0).to_json(), span(1).to_json()]}, f)
    assert sp.read_batch(3) == [span(0), span(1)]


@pytest.mark.parametrize("doc", [{"version": 9, "spans": []},
                                 {"version": 2, "fields": ["trace_id"], "spans": [["x"]]},
                                 {"version": 2, "fields": list(__import__("gwtrace.assembler").assembler.ROW_FIELDS),
                                  "spans": [["short row"]]}])
def test_unknown_outbox_versions_and_shapes_are_unreadable_not_misread(tmp_path, doc):
    sp = Spool(str(tmp_path / "gw"))
    with open(sp.batch_path(0), "w") as f:
        json.dump(doc, f)
    with pytest.raises(ValueError):
        sp.read_batch(0)
