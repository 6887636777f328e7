"""The project-wide refresh decision, shared by ``tinybench run-all``, the daemon's ``refresh_sensor`` and the
nightly schedule: what needs a run, partition by partition, and why (:func:`decide`), and how the two ways of
running it keep out of each other's way.

* **One question.** New or changed files in the landing folder (the drops the store has not ingested,
  ``io.landing.pending_drops``) need the ingest job; a scenario or leaderboard partition needs a run of exactly the
  keys :func:`tinybench_assets.orchestration.refresh.explain` calls stale or missing (Dagster's data versions with the project's
  two corrections). No cursor of its own: the state lives in the store and the Dagster instance, so a daemon started
  after a run-all finds nothing to do, and a run-all after the daemon caught up materializes nothing.
* **Order.** Ingest first (nothing else is decided while drops wait or an ingest runs: their partitions are not known
  yet); then every scenario partition; a leaderboard only once none of its scenario partitions has work or a live run.
* **No double work.** A partition with a live run (queued, starting or started, from either path) gets no second
  one. While a ``tinybench run-all`` holds the project's run lock the daemon requests nothing (run-all does it all);
  run-all, for its part, waits for the daemon's live runs before it decides (``live_runs.wait_for_live_runs``).
* **Critical path first.** Work carries a ``dagster/priority``: leaderboard runs before scenario runs, and a larger
  leaderboard's partitions (more response cells: a longer leaderboard run after them) before a smaller one's. A leaderboard
  whose scenarios just finished is launched before scenario runs still queued for another leaderboard.
* **No retry loop.** A request carries its state (a digest of the partition, the keys and what they read); a state
  whose runs failed :data:`MAX_ATTEMPTS` times is not requested again until its inputs or code change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from tinybench_assets import paths
from tinybench_assets.io.drops import split_partition_key
from tinybench_assets.orchestration.evaluations import EVALUATION_JOB, EVALUATION_PARTITIONS
from tinybench_assets.orchestration.live_runs import live_runs
from tinybench_assets.orchestration.orphans import process_start_time
from tinybench_assets.orchestration.refresh import explain, repository, resolver_for
from tinybench_assets.orchestration.versions import code_version, landing_version

INGEST_JOB, SCENARIO_JOB, LEADERBOARD_JOB = "ingest_landing", "refresh_scenario", "refresh_leaderboard"
#: run tags: why a run was requested, its state digest, and what requested it
REASON_TAG, STATE_TAG, TRIGGER_TAG = "tinybench/reason", "tinybench/state", "tinybench/trigger"
PRIORITY_TAG = "dagster/priority"  # the daemon's run queue launches higher values first
MAX_ATTEMPTS = 2
#: priority of leaderboard work over any scenario work (a leaderboard run is the long pole of a refresh)
LEADERBOARD_PRIORITY = 1_000_000


@dataclass
class Work:
    """One run to request: ``keys`` of ``job`` at ``partition`` (None: unpartitioned), and why."""

    job: str
    partition: str | None
    keys: list[str]
    reason: str
    state: str
    attempt: int = 0  # runs of this state that failed so far
    #: larger first: leaderboards before scenarios, then the larger leaderboard's partitions (critical path first)
    priority: int = 0

    @property
    def tags(self) -> dict[str, str]:
        return {REASON_TAG: self.reason[:2000], STATE_TAG: self.state, PRIORITY_TAG: str(self.priority)}

    def run_request(self, run_key: str, trigger: str) -> dg.RunRequest:
        """The RunRequest of this work: only its keys (all of the job's for the ingest), tagged with why and by whom."""
        return dg.RunRequest(
            run_key=run_key,
            job_name=self.job,
            partition_key=self.partition,
            asset_selection=[dg.AssetKey.from_user_string(k) for k in self.keys] if self.keys else None,
            tags={**self.tags, TRIGGER_TAG: trigger},
        )


@dataclass
class Decision:
    work: list[Work] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # what is not requested now, and why
    new_partitions: list[str] = field(default_factory=list)  # scenario keys the instance does not know yet
    new_evaluations: list[str] = field(default_factory=list)  # evaluation keys (board/model) it does not know yet
    live: int = 0  # runs queued, starting or started now, of either path


def run_all_lock_path() -> Path:
    """The project's run-all lock, beside the DuckDB file: one run-all per store at a time."""
    db = Path(paths.duckdb_path())
    return db.with_name(db.name + ".run-all.lock")


def run_all_holder() -> str | None:
    """Who holds the run-all lock ("pid 123, started ..."), when a live process does; else None."""
    try:
        text = run_all_lock_path().read_text().strip()
    except OSError:
        return None
    if not text.startswith("pid "):
        return None
    try:
        pid = int(text.split(",")[0].split()[1])
    except (IndexError, ValueError):
        return None
    return text if process_start_time(pid) is not None else None


def _digest(*parts) -> str:
    return hashlib.sha256("\n".join(map(str, parts)).encode()).hexdigest()[:16]


def failed_attempts(instance: dg.DagsterInstance, state: str) -> int:
    return instance.get_runs_count(
        dg.RunsFilter(tags={STATE_TAG: state}, statuses=[dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED])
    )


def decide(defs, instance: dg.DagsterInstance, store, incoming: Path | str) -> Decision:
    """What needs a run now, and why (see the module docstring). ``defs``: a Definitions or RepositoryDefinition.
    Nothing while a live ``tinybench run-all`` holds the project's lock: it does the work."""
    # lazy: loads duckdb (io.landing: ~0.4 s)
    from tinybench_assets.io.landing import pending_drops

    out = Decision()
    holder = run_all_holder()
    if holder:
        out.waiting.append(f"tinybench run-all is refreshing the project ({holder}); it does the work")
        return out
    live = live_runs(instance)
    out.live = sum(len(runs) for runs in live.values())
    if any(job == INGEST_JOB for job, _ in live):
        out.waiting.append("an ingest run is live; partitions are decided once it ends")
        return out
    drops = pending_drops(store, incoming)
    if drops:
        return _ingest_decision(out, instance, Path(incoming), drops)
    return _partition_decision(out, defs, instance, store, live, Path(incoming))


def _ingest_decision(out: Decision, instance, incoming: Path, drops) -> Decision:
    """New or changed drops: one ingest run (its state: the files' names, sizes and times and the ingest code), or
    nothing once its runs failed MAX_ATTEMPTS times on them; partitions wait for it."""
    marks = []
    for rel in sorted(drops):
        try:
            st = (incoming / rel).stat()
            marks.append(f"{rel}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            marks.append(rel)
    shown = ", ".join(sorted(drops)[:20]) + (f" and {len(drops) - 20} more" if len(drops) > 20 else "")
    out.work.append(
        Work(
            INGEST_JOB,
            None,
            [],
            f"{len(drops)} new or changed file(s) in the landing folder: {shown}",
            _digest(INGEST_JOB, *marks, code_version("ingest")),
        )
    )
    out.work[-1].attempt = failed_attempts(instance, out.work[-1].state)
    if out.work[-1].attempt >= MAX_ATTEMPTS:
        out.waiting[:] = [
            f"ingest: its runs failed {MAX_ATTEMPTS} times on these files; not retried until they "
            "or the code change (see the failed runs)"
        ]
        out.work.clear()
        return out
    out.waiting.append("partitions are decided once the new drops are ingested")
    return out


def _partition_decision(out: Decision, defs, instance, store, live: dict, incoming: Path) -> Decision:
    """Every scenario partition with stale or missing assets, each leaderboard once its scenario partitions have
    nothing to do, and each evaluation (a file in the evaluations landing folder) once its leaderboard has nothing to
    do; the larger leaderboards first."""
    from tinybench_assets.io.evaluation_files import evaluation_files  # lazy, as io.landing above

    repo = repository(defs)
    resolver = resolver_for(instance, repo.asset_graph)
    keys = store.partition_keys()
    known = set(instance.get_dynamic_partitions("scenarios"))
    out.new_partitions = [k for k in keys if k not in known]
    landed = landing_version(store)
    versions = {d: code_version(d) for d in ("ingest", "irt", "estimation", "router", "magi", "evaluations")}
    evaluations: dict[str, list] = {}
    for ev in evaluation_files(incoming):
        evaluations.setdefault(ev.leaderboard, []).append(ev)
    known_evaluations = set(instance.get_dynamic_partitions(EVALUATION_PARTITIONS))
    out.new_evaluations = [
        e.partition for evs in evaluations.values() for e in evs if e.partition not in known_evaluations
    ]
    boards: dict[str, list[str]] = {}
    for k in keys:
        boards.setdefault(split_partition_key(k)[0], []).append(k)
    jobs = set(repo.job_names)

    cells = store.board_cells()
    # rank by landed response cells: the larger leaderboard's runs first (0 = smallest)
    size = {b: r for r, b in enumerate(sorted(boards, key=lambda b: (cells.get(b, 0), b), reverse=False))}

    def consider(job: str, part: str, priority: int, content: str = "") -> bool:
        """Adds the partition's work (if any); True when it has work or a live run. ``content``: a version of what the
        partition reads beyond the store (an evaluation's answers file), part of its state."""
        if (job, part) in live:
            out.waiting.append(f"{job} {part}: a run is live ({live[(job, part)][0].run_id})")
            return True
        if part in out.new_partitions or part in out.new_evaluations:
            todo = set(repo.get_job(job).asset_layer.selected_asset_keys)  # not a partition yet: all of it
            why = {k: "new partition" for k in todo}
        else:
            todo, why = explain(repo, instance, job, part, store, resolver)
        if not todo:
            return False
        names = sorted(k.to_user_string() for k in todo)
        state = _digest(job, part, *names, landed, *sorted(versions.items()), content)
        attempt = failed_attempts(instance, state)
        if attempt >= MAX_ATTEMPTS:
            out.waiting.append(
                f"{job} {part}: its runs failed {MAX_ATTEMPTS} times on these inputs and code; not "
                "retried until a drop or the code changes (see the failed runs, or run-all)"
            )
            return True
        reason = "; ".join(f"{n}: {why[k]}" for n, k in sorted((k.to_user_string(), k) for k in todo))
        out.work.append(Work(job, part, names, reason, state, attempt, priority))
        return True

    for board in sorted(set(boards) | set(evaluations)):
        parts = boards.get(board, [])
        busy = [consider(SCENARIO_JOB, p, size[board]) for p in sorted(parts)]
        if LEADERBOARD_JOB not in jobs or not parts:
            board_busy = any(busy)
        elif any(busy):
            out.waiting.append(f"{LEADERBOARD_JOB} {board}: waits for its scenario partitions")
            board_busy = True
        else:
            board_busy = consider(LEADERBOARD_JOB, board, LEADERBOARD_PRIORITY + size[board])
        if board_busy and evaluations.get(board):
            out.waiting.append(f"{EVALUATION_JOB} {board}/*: waits for its leaderboard's refresh")
        elif EVALUATION_JOB in jobs:
            for ev in evaluations.get(board, []):
                consider(EVALUATION_JOB, ev.partition, -1, ev.sha256())
    out.work.sort(key=lambda w: -w.priority)  # stable: partitions in name order within a priority
    return out
