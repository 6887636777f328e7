"""What ``tinybench run-all`` prints while its steps run: the assets' own log lines, read from the Dagster event log
as they land, and a heartbeat for a step that has said nothing for a while.

Every run that run-all executes, in its own process or in a worker process, carries the tag :data:`RUN_ALL_TAG`
(this run-all's id). :class:`RunFeed`, a thread in run-all's process, asks the Dagster instance every ``poll_s``
seconds for those runs and for the events each logged since the last look (``instance.get_records_for_run`` with the
run's cursor: the store the UI's run pages read), and prints

* each INFO-or-higher line an asset logged (``context.log.info``: progress such as ``texts embedded: 3,072 of
  14,042 (22 %), 61 s, about 3 min 38 s left``), as ``  <partition> <step>: <line>``;
* ``  <partition> <step> done in 3 min 32 s`` when a step that ran at least ``heartbeat_s`` seconds ends
  (``FAILED after ...: <the error's first line>`` when it failed);
* ``  <partition>: <step> running for 95 s`` when a running step has had no line for ``heartbeat_s`` seconds, less one
  look (:func:`~tinybench_assets.progress.heartbeat_seconds`, $TINYBENCH_HEARTBEAT_S, default 30 s), so the terminal
  is never silent longer than that while a step runs.

So the lines on the terminal are the lines in the run's event log (the heartbeat aside, which is run-all's own).
A failed look (a store busy for a moment) is skipped and tried again at the next one; the feed never stops run-all.
A look costs about 4 ms of CPU on the project's SQLite instance (measured: 20 looks at a finished run-all's runs).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import uuid

from tinybench_assets.progress import duration, heartbeat_seconds

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions

#: the tag every run of one run-all carries: this run-all's id
RUN_ALL_TAG = "tinybench/run_all"
_PRINT_LOCK = threading.Lock()
MAX_LINE = 300
#: a look asks for the runs changed since this many seconds before the last look (clocks and commits that lag)
OVERLAP_S = 10.0


def echo(line: str) -> None:
    """One whole line on stdout (the feed's thread and run-all's main thread print between each other's lines)."""
    with _PRINT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def run_all_tags() -> dict[str, str]:
    """The tag of this run-all's runs: a fresh id (pid and time, for the UI's run filter)."""
    return {RUN_ALL_TAG: f"{time.strftime('%Y%m%d-%H%M%S')}-pid{os.getpid()}-{uuid.uuid4().hex[:6]}"}


def _why(event) -> str:
    """``: <the error's first line>`` of a STEP_FAILURE event (empty when it carries none)."""
    error = getattr(getattr(event, "event_specific_data", None), "error", None)
    lines = (getattr(error, "message", "") or "").strip().splitlines()
    return f": {lines[0][:MAX_LINE]}" if lines else ""


class _Step:
    """A running step of one run: when it started and when the feed last said something about it."""

    def __init__(self, started: float, now: float):
        self.started, self.said = started, now


class RunFeed:
    """The feed of one run-all's runs (module docstring). ``instance``: a Dagster instance (the feed opens its own
    from the instance's ref when it runs as a thread); ``tags``: :func:`run_all_tags`; ``messages``: False to print
    only the heartbeat and step ends (run-all's ``--log-level INFO`` prints the lines itself). Use as a context
    manager, or call :meth:`poll` yourself (tests)."""

    def __init__(
        self,
        instance,
        tags: dict,
        say=echo,
        poll_s: float = 1.0,
        heartbeat_s: float | None = None,
        messages: bool = True,
        clock=time.time,
    ):
        self.instance, self.tags, self.say, self.clock = instance, dict(tags), say, clock
        self.heartbeat_s = heartbeat_seconds() if heartbeat_s is None else float(heartbeat_s)
        self.poll_s, self.messages = min(poll_s, max(self.heartbeat_s / 2, 0.1)), messages
        self.cursors: dict[str, str | None] = {}  # run id -> event log cursor
        self.parts: dict[str, str] = {}  # run id -> partition key
        self.running: dict[tuple[str, str], _Step] = {}  # (run id, step key) -> its step
        self.finished: set[str] = set()
        self.since = None  # the last look's time, less OVERLAP_S (None: every run of this run-all)
        self.failed_looks = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ one look
    def poll(self) -> None:
        """Print what this run-all's runs logged since the last look, then the heartbeats that are due. The runs
        asked for are those created or changed (started, ended) since a little before the last look; the events
        are read of every run seen started and not yet seen ended (its last events too, once it has ended)."""
        import datetime as dt

        import dagster as dg

        since, self.since = self.since, dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=OVERLAP_S)
        ended = []
        for run in self.instance.get_runs(dg.RunsFilter(tags=self.tags, updated_after=since)):
            if run.run_id in self.finished or run.status == dg.DagsterRunStatus.NOT_STARTED:
                continue
            self.parts[run.run_id] = run.tags.get("dagster/partition") or run.job_name
            if run.is_finished:
                ended.append(run.run_id)
        for run_id in sorted(set(self.parts) - self.finished):
            self._read(run_id)
        for run_id in ended:  # its last events are read: no more to come
            self.finished.add(run_id)
            for key in [k for k in self.running if k[0] == run_id]:
                self.running.pop(key)
        self._heartbeat()

    def _read(self, run_id: str) -> None:
        while True:
            conn = self.instance.get_records_for_run(run_id, cursor=self.cursors.get(run_id), limit=500)
            for rec in conn.records:
                self._event(run_id, rec.event_log_entry)
            self.cursors[run_id] = conn.cursor
            if not conn.has_more:
                return

    def _event(self, run_id: str, entry) -> None:
        import dagster as dg

        now, step, part = self.clock(), entry.step_key, self.parts[run_id]
        event = entry.dagster_event
        if event is None:
            if self.messages and entry.level >= logging.INFO and entry.user_message:
                self._said(run_id, step, now)
                self.say(self._line(part, step, entry.user_message))
            return
        kind = event.event_type
        if kind == dg.DagsterEventType.STEP_START and step:
            self.running[(run_id, step)] = _Step(entry.timestamp, now)
        elif kind in (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE) and step:
            began = self.running.pop((run_id, step), None)
            took = entry.timestamp - began.started if began else 0.0
            if kind == dg.DagsterEventType.STEP_FAILURE:
                self.say(f"  {part} {step} FAILED after {duration(took)}{_why(event)}")
            elif took >= self.heartbeat_s:
                self.say(f"  {part} {step} done in {duration(took)}")

    def _said(self, run_id: str, step: str | None, now: float) -> None:
        for key, s in self.running.items():  # a line without a step key speaks for every step of its run
            if key[0] == run_id and (step is None or key[1] == step):
                s.said = now

    def _heartbeat(self) -> None:
        now = self.clock()
        for (run_id, step), s in sorted(self.running.items(), key=lambda kv: kv[1].started):
            if now - s.said + self.poll_s >= self.heartbeat_s:  # by the next look it would be late
                s.said = now
                self.say(f"  {self.parts[run_id]}: {step} running for {duration(now - s.started)}")

    @staticmethod
    def _line(part: str, step: str | None, message: str) -> str:
        text = message.strip().replace("\n", " ")
        if text.startswith(f"{part}: "):  # the asset named its partition already
            text = text[len(part) + 2 :]
        text = text if len(text) <= MAX_LINE else text[: MAX_LINE - 3] + "..."
        return f"  {part} {step or '(run)'}: {text}"

    # ------------------------------------------------------------------ the thread
    def _loop(self) -> None:
        import dagster as dg

        try:  # this thread's own connections to the instance's storage
            self.instance = dg.DagsterInstance.from_ref(self.instance.get_ref())
        except Exception:  # noqa: BLE001 - an ephemeral instance has no ref: share it
            pass
        while not self._stop.wait(self.poll_s):
            self._safe_poll()
        self._safe_poll()  # what the last runs logged before they ended

    def _safe_poll(self) -> None:
        try:
            self.poll()
        except Exception:  # noqa: BLE001 - a busy store: look again next time; never stop run-all
            self.failed_looks += 1

    def __enter__(self) -> RunFeed:
        self._thread = threading.Thread(target=self._loop, name="tinybench-run-feed", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
