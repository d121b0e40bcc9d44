"""The state directory: privacy, ownership and crash consistency."""

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
