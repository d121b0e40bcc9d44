"""Canonical-unit accounting: the GIL report's worked examples, additivity, buckets."""

import pytest

from gwtrace.factory.canonical import (CATEGORIES, Interval, allocate, idle_units, segments, split_buckets,
                                       totals)


@pytest.mark.parametrize("cores, gb, units", [(3, 3, 1), (3, 1, 0), (2, 6, 2), (0, 8, 0), (4, 8, 4), (5, 7.9, 3)])
def test_idle_capacity_counts_in_whole_units_of_the_scarcer_resource(cores, gb, units):
    # the report's examples: 3 cores + 3 GB -> 1; 3 cores + 1 GB -> 0; 2 cores + 6 GB -> 2
    assert idle_units(cores, gb * 1024) == units


def test_report_example_hour_of_unused_capacity():
    # a 4-core 8 GB pilot running one 1-core 5 GB job for an hour: 3 cores + 3 GB unused -> 1 core-hour overhead
    job = Interval(0, 3600, 1, 5 * 1024, 0, "goodput")
    got = totals(segments(0, 3600, 4, 8 * 1024, 0, [job]))
    assert got["overhead"] == 3600
    assert got["goodput"] == pytest.approx(3 * 3600)  # the 3 units left over go to the only job
    assert got["total"] == pytest.approx(4 * 3600)


def test_leftover_is_split_proportionally_among_running_jobs():
    # GIL example: 2 leftover cores (memory scarce), 2 equal jobs -> 1 core-hour each, per category
    jobs = [Interval(0, 3600, 1, 3 * 1024, 0, "goodput"), Interval(0, 3600, 1, 3 * 1024, 0, "preemption_badput")]
    got = totals(segments(0, 3600, 4, 7 * 1024, 0, jobs))
    assert got["overhead"] == 0  # 2 idle cores but only 1 GB idle: no whole unit
    assert got["goodput"] == pytest.approx(2 * 3600) and got["preemption_badput"] == pytest.approx(2 * 3600)


def test_pilot_without_jobs_is_all_in_its_category_even_if_fractional():
    got = totals(segments(0, 100, 3, 5 * 1024, 0, [], "decision_problem"))
    assert got["decision_problem"] == pytest.approx(300) and got["total"] == pytest.approx(300)


def test_time_without_jobs_in_a_pilot_that_ran_jobs_is_overhead():
    got = totals(segments(0, 1000, 2, 4096, 0, [Interval(400, 600, 2, 4096, 0, "goodput")]))
    assert got == pytest.approx({**dict.fromkeys(CATEGORIES, 0.0), "goodput": 400, "overhead": 1600,
                                 "total": 2000})


def test_gpu_chips_are_their_own_canonical_unit():
    segs = segments(0, 100, 4, 8192, 2, [Interval(0, 100, 1, 2048, 1, "goodput")])
    assert totals(segs, "gpu") == pytest.approx({**dict.fromkeys(CATEGORIES, 0.0), "goodput": 100,
                                                 "overhead": 100, "total": 200})


def test_overcommitted_memory_never_exceeds_pilot_capacity():
    jobs = [Interval(0, 10, 1, 6000, 0, "goodput"), Interval(0, 10, 1, 6000, 0, "goodput")]
    alloc = allocate(2, 8192, jobs)
    assert sum(alloc.values()) == pytest.approx(4.0)


def test_buckets_sum_to_the_totals():
    jobs = [Interval(50, 4000, 1, 2048, 0, "goodput"), Interval(3000, 7000, 2, 1024, 0, "preemption_badput")]
    segs = segments(10, 7300, 4, 6 * 1024, 0, jobs)
    buckets = split_buckets(segs, 3600)
    assert sorted(buckets) == [0, 3600, 7200]
    assert buckets[7200]["overhead"] == pytest.approx(100 * 4)  # no job after 7000: all 4 units
    summed = {c: sum(b[c] for b in buckets.values()) for c in CATEGORIES}
    want = totals(segs)
    assert summed == pytest.approx({c: want[c] for c in CATEGORIES})
