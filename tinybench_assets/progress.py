"""Progress a user can watch: rate-limited lines of how far a long loop is, and where a step's time went.

:class:`Progress` has one job: turn "done of total" counts into lines such as
``texts embedded: 3,072 of 14,042 (22 %), 61 s, about 3 min 38 s left`` at most every ``every`` seconds (the last
count always), handed to ``say``. Inside an asset ``say`` is ``context.log.info``, so each line lands in the run's
Dagster event log (the UI's run page), and ``tinybench run-all`` prints it as it lands (``cli/run_feed.py``).

:class:`Stopwatch` times a step's named parts (``with watch.part("encode"): ...``) and gives the ``seconds`` and
``time_breakdown`` metadata entries of a step that took long enough for the question "where did the time go".

Both read the time from ``clock`` (``time.monotonic``), so tests drive them with a fake one. Plain Python, no Dagster.
"""

from __future__ import annotations

import contextlib
import os
import time

__all__ = ["Progress", "Stopwatch", "duration", "progress_seconds", "heartbeat_seconds"]

#: at most one progress line per this many seconds from one reporter ($TINYBENCH_PROGRESS_S)
PROGRESS_S = 10.0
#: run-all says a step is still running after this many seconds without a line from it ($TINYBENCH_HEARTBEAT_S)
HEARTBEAT_S = 30.0


def _env_seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return value if value > 0 else default


def progress_seconds() -> float:
    """The least time between two lines of one :class:`Progress` ($TINYBENCH_PROGRESS_S, default 10 s)."""
    return _env_seconds("TINYBENCH_PROGRESS_S", PROGRESS_S)


def heartbeat_seconds() -> float:
    """How long run-all lets a running step go without a line before it says so ($TINYBENCH_HEARTBEAT_S, 30 s)."""
    return _env_seconds("TINYBENCH_HEARTBEAT_S", HEARTBEAT_S)


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``: a duration as a person reads it."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Progress:
    """Lines of ``what: done of total (pct), elapsed, about ETA left`` for a loop over ``total`` units.

    ``update(done)`` (or ``advance(n)``) says a line when ``every`` seconds have passed since the last line (or since
    the start), and always for the last unit; the ETA is the elapsed time per unit done so far times the units left.
    ``every`` defaults to :func:`progress_seconds`. Nothing is said when ``say`` is None.
    """

    def __init__(self, what: str, total: int, say=None, every: float | None = None, clock=time.monotonic):
        self.what, self.total, self.say, self.clock = what, max(0, int(total)), say, clock
        self.every = progress_seconds() if every is None else float(every)
        self.done, self.lines = 0, 0
        self.start = self.last = clock()

    def advance(self, n: int = 1) -> str | None:
        return self.update(self.done + n)

    def update(self, done: int) -> str | None:
        """Record ``done`` units; returns the line said, or None when the rate limit held it back."""
        self.done = min(int(done), self.total) if self.total else int(done)
        now = self.clock()
        if not (self.done >= self.total or now - self.last >= self.every):
            return None
        self.last = now
        line = self.line(now)
        self.lines += 1
        if self.say is not None:
            self.say(line)
        return line

    def eta(self, now: float | None = None) -> float | None:
        """Seconds left at the rate so far; None before the first unit is done."""
        elapsed = (self.clock() if now is None else now) - self.start
        if self.done <= 0 or elapsed <= 0:
            return None
        return elapsed / self.done * max(self.total - self.done, 0)

    def line(self, now: float | None = None) -> str:
        now = self.clock() if now is None else now
        elapsed = now - self.start
        pct = f" ({100 * self.done / self.total:.0f} %)" if self.total else ""
        text = f"{self.what}: {self.done:,} of {self.total:,}{pct}, {duration(elapsed)}"
        if self.done >= self.total:
            return text + (f", done ({self.done / elapsed:,.1f}/s)" if self.done and elapsed > 0 else ", done")
        eta = self.eta(now)
        return text + ("" if eta is None else f", about {duration(eta)} left")


class Stopwatch:
    """Seconds per named part of a step, and the total since it was made.

    ``with watch.part(name):`` times a block (a part entered twice adds up); ``add(name, seconds)`` records a part
    timed elsewhere (a predictor's own step timings). ``metadata()`` gives ``seconds`` (the total) and
    ``time_breakdown`` ({part: seconds}, the rest of the total as ``other``). With ``say``, a part that took at least
    ``say_after`` seconds is said as it ends (``<part> done in 12.3 s``). The total runs from ``start`` (default: now).
    """

    def __init__(self, say=None, say_after: float = 5.0, clock=time.perf_counter, start: float | None = None):
        self.say, self.say_after, self.clock = say, say_after, clock
        self.start = clock() if start is None else start  # ``start``: an earlier reading of ``clock``
        self.parts: dict[str, float] = {}

    @contextlib.contextmanager
    def part(self, name: str):
        t0 = self.clock()
        try:
            yield
        finally:
            self.add(name, self.clock() - t0, say=True)

    def add(self, name: str, seconds: float, say: bool = False) -> None:
        self.parts[name] = self.parts.get(name, 0.0) + float(seconds)
        if say and self.say is not None and seconds >= self.say_after:
            self.say(f"{name} done in {seconds:.1f} s")

    def total(self) -> float:
        return self.clock() - self.start

    def breakdown(self) -> dict[str, float]:
        """{part: seconds} rounded to 0.1 s, largest first, and ``other``: the total's untimed rest (when > 0.05 s)."""
        total = self.total()
        out = {k: round(v, 1) for k, v in sorted(self.parts.items(), key=lambda kv: -kv[1])}
        rest = total - sum(self.parts.values())
        if rest > 0.05:
            out["other"] = round(rest, 1)
        return out

    def metadata(self) -> dict:
        """``seconds`` and ``time_breakdown`` for a step's metadata (a dict Dagster shows as JSON)."""
        return {"seconds": round(self.total(), 1), "time_breakdown": self.breakdown()}
