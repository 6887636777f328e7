"""The progress reporter and the stopwatch (tinybench_assets/progress.py), on a fake clock."""

import pytest

from tinybench_assets.progress import Progress, Stopwatch, duration, heartbeat_seconds, progress_seconds


class Clock:
    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_progress_is_rate_limited_and_always_says_the_last_unit():
    clock, lines = Clock(), []
    p = Progress("texts embedded", 1000, say=lines.append, every=10, clock=clock)
    clock.t += 4
    assert p.update(100) is None  # 4 s since the start: held back
    clock.t += 6
    assert p.update(200) == lines[-1]  # 10 s: said
    for done in (300, 400):  # 2 s apart: held back
        clock.t += 2
        assert p.update(done) is None
    clock.t += 6
    p.advance(100)  # 500, 10 s after the last line
    clock.t += 1
    p.update(1000)  # the last unit: said at once
    assert len(lines) == 3 and p.lines == 3
    assert lines[0] == "texts embedded: 200 of 1,000 (20 %), 10 s, about 40 s left"
    assert lines[1].startswith("texts embedded: 500 of 1,000 (50 %), 20 s, about 20 s left")
    assert lines[2] == "texts embedded: 1,000 of 1,000 (100 %), 21 s, done (47.6/s)"


def test_progress_eta_is_the_rate_so_far():
    clock = Clock(0.0)
    p = Progress("splits done", 5, every=0, clock=clock)
    assert p.eta() is None  # nothing done yet: no rate to tell
    clock.t = 120.0
    p.update(2)
    assert p.eta() == pytest.approx(180.0)  # 60 s a split, 3 left
    assert p.line().endswith("2 min 00 s, about 3 min 00 s left")
    p.update(9)  # more than the total counts as the total
    assert p.done == 5 and p.eta() == 0.0


def test_progress_without_say_or_total():
    clock = Clock()
    p = Progress("nothing", 0, every=0, clock=clock)
    clock.t += 3
    assert p.update(0) == "nothing: 0 of 0, 3 s, done"


def test_duration_reads_as_a_person_writes_it():
    assert [duration(s) for s in (0.4, 42, 65, 3725)] == ["0 s", "42 s", "1 min 05 s", "1 h 02 min"]


def test_intervals_from_the_environment(monkeypatch):
    monkeypatch.setenv("TINYBENCH_HEARTBEAT_S", "1.5")
    monkeypatch.setenv("TINYBENCH_PROGRESS_S", "nonsense")
    assert heartbeat_seconds() == 1.5 and progress_seconds() == 10.0
    monkeypatch.setenv("TINYBENCH_HEARTBEAT_S", "0")  # not a useful interval: the default
    assert heartbeat_seconds() == 30.0


def test_stopwatch_breakdown_and_metadata():
    clock, lines = Clock(0.0), []
    watch = Stopwatch(say=lines.append, say_after=5, clock=clock)
    with watch.part("read"):
        clock.t += 2
    with watch.part("encode"):
        clock.t += 40
    with watch.part("read"):  # a part entered twice adds up
        clock.t += 1
    watch.add("fit: irt", 7.25)  # timed elsewhere: in the total only as far as the clock moved
    clock.t += 10
    assert lines == ["encode done in 40.0 s"]  # only the parts of at least say_after seconds
    assert watch.metadata() == {
        "seconds": 53.0,
        "time_breakdown": {"encode": 40.0, "fit: irt": 7.2, "read": 3.0, "other": 2.8},
    }
    late = Stopwatch(clock=clock, start=clock.t - 5)  # started from an earlier reading
    assert late.total() == 5
