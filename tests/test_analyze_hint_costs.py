"""The hints' cost model (docs/analysis.md, "What a hint costs"), on small fixtures computed by hand.

Each fixture is a handful of glidein records in ``GlideinRecord.to_dict()`` shape with round numbers,
so every expected figure below is arithmetic a reader can redo.
"""

import pytest

from gwtrace.analysis.hints import PILOT, REQUESTED, hints

DAY = 86400
T0 = 1_790_000_000
SCRIPTS = ("main/setup_script.sh", "main/validate_node.sh")


def glidein(n, site, entry, start, *, cpus=1, fail=None, life=7200, scripts=SCRIPTS, ce_wait=60, jobs=1,
            extra_script=None):
    """One glidein: its scripts take 10 s each; a failed one lives ``life`` s, all of it validation_fail."""
    t = start
    run = []
    for script in scripts + ((extra_script,) if extra_script else ()):
        run.append({"id": script, "start": t, "end": t + 10, "status": "ERROR" if script == fail else "OK"})
        t += 10
        if script == fail:
            break
    rec = {"cluster": n, "proc": 0, "schedd": "schedd@f", "factory": "F", "glidein_uuid": None, "site": site,
           "entry": entry, "frontend": "fe", "cpus": cpus, "memory_mb": 2048 * cpus, "started": start,
           "ended": start + life, "ce_submitted": start - ce_wait, "scripts": run,
           "status": "ERROR" if fail else "OK", "failed_script": fail}
    if fail:
        rec.update(condor_start=None, condor_end=None, jobs=[],
                   canonical={"validation_fail": life * cpus, "preemption_badput": 0.0, "decision_problem": 0.0})
    else:
        rec.update(condor_start=t, condor_end=start + life,
                   jobs=[{"start": t + 30, "end": start + life - 60, "preempted": False}] * jobs,
                   canonical={"validation_fail": 0.0, "preemption_badput": 0.0, "decision_problem": 0.0})
    return rec


def by_kind(found):
    return {(h.kind, tuple(sorted(h.scope.values()))): h for h in found}


def test_a_failure_rate_is_over_the_glideins_that_ran_the_script():
    # site S: 20 glideins at entry A run the extra check (13 fail), 20 at entry B never run it
    recs = []
    for i in range(20):
        fail = "entry/check.sh" if i < 13 else None
        recs.append(glidein(i, "S", "A", T0 + i * 600, extra_script="entry/check.sh", fail=fail, life=1229))
        recs.append(glidein(100 + i, "S", "B", T0 + i * 600))
    found = [h for h in hints(recs) if h.kind == "failing_script"]
    assert len(found) == 1
    hint = found[0]
    assert hint.evidence["failures"] == 13 and hint.evidence["glideins_that_ran_it"] == 20
    assert hint.evidence["glideins_at_site"] == 40
    assert hint.evidence["failure_rate"] == pytest.approx(0.65)
    assert "65%" in hint.summary and "13 of 20" in hint.summary


def test_a_site_losing_42_percent_of_its_glideins_ranks_above_a_trivial_cost():
    # site M: 100 glideins in a day, 42 fail validation and live as GlideinWMS makes them (30 s of
    # validation + the 1199 s sleep = 1229 s) on 4 cores. Entry T at site N: idle tails of 31 min on
    # 1-core glideins (just over the threshold), 10 of them.
    recs = [glidein(i, "M", "M_ce", T0 + i * 864, cpus=4, fail="main/validate_node.sh" if i % 100 < 42 else None,
                    life=1229 if i % 100 < 42 else 7200) for i in range(100)]
    for i in range(10):
        rec = glidein(1000 + i, "N", "T", T0 + i * 8640)
        rec["jobs"] = [{"start": rec["condor_start"] + 30, "end": rec["condor_end"] - 1860, "preempted": False}]
        recs.append(rec)
    found = hints(recs)
    assert [h.kind for h in found[:2]] == ["failing_script", "idle_tail"]
    failing, tail = found[0], found[1]
    m_days = (99 * 864 + 7200) / DAY                      # site M's own period: first start to last end
    assert failing.period_days == pytest.approx(m_days)
    assert failing.cost_per_day == pytest.approx(42 * 1229 * 4 / 3600 / m_days)
    assert failing.glideins_lost_per_day == pytest.approx(42 / m_days)
    assert failing.evidence["pilot_hours_per_failed_glidein"] == pytest.approx(1229 * 4 / 3600, abs=0.01)
    t_days = (9 * 8640 + 7200) / DAY
    assert tail.cost_per_day == pytest.approx(10 * 1860 / 3600 / t_days)
    assert failing.cost_per_day > 10 * tail.cost_per_day


def test_a_ce_wait_is_ranked_on_its_own_in_its_own_unit():
    # entry W: 10 glideins waiting 5 h at the CE on 8 cores (400 requested core-hours) — far more than the
    # 2-core idle tails at entry T — is still listed after them, in requested hours, not pilot hours
    recs = [glidein(i, "X", "W", T0 + i * 3600, cpus=8, ce_wait=5 * 3600) for i in range(10)]
    recs += [glidein(20 + i, "Y", f"other{i % 3}", T0 + i * 3600) for i in range(30)]
    for i in range(10):
        rec = glidein(100 + i, "Z", "T", T0 + i * 3600, cpus=2)
        rec["jobs"] = [{"start": rec["condor_start"] + 30, "end": rec["condor_end"] - 2400, "preempted": False}]
        recs.append(rec)
    found = hints(recs)
    assert [(h.kind, h.cost_unit, h.rank) for h in found] == [("idle_tail", PILOT, 1), ("ce_wait", REQUESTED, 1)]
    ce = found[1]
    days = (9 * 3600 + 7200) / DAY
    assert ce.cost_per_day == pytest.approx(10 * 5 * 3600 * 8 / 3600 / days)
    assert ce.cost_per_day > found[0].cost_per_day
    assert ce.to_dict()["cost_unit_text"].endswith("(not pilot time)")


def test_an_unrelated_short_glidein_does_not_move_a_hints_cost_per_day():
    recs = [glidein(i, "M", "M_ce", T0 + i * 864, fail="main/validate_node.sh" if i < 40 else None,
                    life=1229 if i < 40 else 7200) for i in range(100)]
    before = by_kind(hints(recs))
    # a 2-second glidein at another site, 30 days later: the whole period grows thirtyfold
    stray = glidein(9999, "Elsewhere", "E", T0 + 30 * DAY, life=2)
    after = by_kind(hints(recs + [stray]))
    assert before.keys() == after.keys() and before
    for key, hint in before.items():
        assert after[key].cost_per_day == pytest.approx(hint.cost_per_day)
        assert after[key].glideins_lost_per_day == pytest.approx(hint.glideins_lost_per_day)
        assert after[key].period_days == pytest.approx(hint.period_days)
