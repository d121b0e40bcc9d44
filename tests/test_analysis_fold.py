"""The analysis read in parts side by side (analysis/fold.py) gives exactly what one pass gives."""

import io
import json
import os

import pytest
from conftest import demo_factory

from gwtrace.analysis import fold as fold_mod
from gwtrace.analysis.report import folded
from gwtrace.cli.analyze import main
from gwtrace.analysis.hints import Thresholds
from gwtrace.analysis.outliers import OutlierGroups
from gwtrace.analysis.summary import summarize
from gwtrace.analysis import selection
from gwtrace.factory.collect import collect
from gwtrace.store import TraceStore

demo_factory()   # skips this module without HTCondor's bindings (the demo's Condor-G logs need them)


@pytest.fixture(scope="module")
def planted(planted_pool):
    found = collect([str(planted_pool[0])])
    assert found.errors == []
    return found.records


def _parts(summaries, cuts):
    """The summaries cut at the given positions, as parts (each a fresh iterator, as a store reader is)."""
    bounds = list(zip([0] + cuts, cuts + [len(summaries)]))
    return [lambda low=low, high=high: iter(summaries[low:high]) for low, high in bounds]


def _body(report, found, lengths):
    return json.dumps([report, [h.to_dict() for h in found], {k: list(v) for k, v in lengths.items()}],
                      sort_keys=True)


@pytest.mark.parametrize("cuts", [[600], [1, 2], [300, 700, 1150]])
def test_parts_in_children_give_what_one_pass_gives(planted, cuts):
    summaries = [summarize(r.to_dict()) for r in planted]
    for by in ("entry", "site"):
        one = folded(_parts(summaries, []), by, Thresholds(), full=True)
        assert one[1], "the planted factory has hints"
        assert _body(*folded(_parts(summaries, cuts), by, Thresholds(), full=True)) == _body(*one)
    single = fold_mod.fold(_parts(summaries, []), lambda: (OutlierGroups(),))[0].found()
    assert single and fold_mod.fold(_parts(summaries, cuts), lambda: (OutlierGroups(),))[0].found() == single


def test_the_cli_over_the_store_in_parts_prints_what_one_process_prints(planted, tmp_path, monkeypatch):
    db = tmp_path / "store.db"
    with TraceStore(db) as store:
        store.put_glidein_records(planted)
    with TraceStore(db, create=False) as store:
        cuts = store.summary_cuts(3, 100)
        assert len(cuts) == 2
        sizes = [sum(1 for _ in store.glidein_summaries(part=part, refresh=False))
                 for part in zip([None] + cuts, cuts + [None])]
        assert sum(sizes) == len(planted) and min(sizes) >= 100
        assert store.summary_cuts(3, 1000) == []   # too few for two parts of 1000
    monkeypatch.setattr(selection, "MIN_PART", 100)
    spawned = []
    real_spawn = fold_mod._spawn
    monkeypatch.setattr(fold_mod, "_spawn", lambda *a: spawned.append(1) or real_spawn(*a))
    outputs = []
    for workers in ("1", "3"):
        out = io.StringIO()
        assert main(["analyze", "--store", str(db), "--format", "json", "--workers", workers][1:], stdout=out) == 0
        outputs.append(json.loads(out.getvalue()))
    assert len(spawned) == 2, "three parts: two children"
    assert outputs[0] == outputs[1] and outputs[0]["hints"] and outputs[0]["phases"]


def test_a_failing_part_is_one_error_and_leaves_no_process(planted):
    summaries = [summarize(r.to_dict()) for r in planted[:50]]

    def broken():
        yield summaries[0]
        raise OSError("disk I/O error")

    with pytest.raises(RuntimeError, match="a part of the analysis failed: OSError: disk I/O error"):
        folded([lambda: iter(summaries), broken], "entry", Thresholds(), full=True)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)   # every child was reaped


def test_workers_must_be_a_positive_number(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--workers", "0"])
    assert stop.value.code == 2
    assert "--workers takes a number of processes" in capsys.readouterr().err
