"""Sensors: the refresh sensor (new drops, stale or missing partitions: the one refresh decision run-all also
makes, ``refresh_plan.py``) and the orphaned-runs sensor (runs whose process was killed)."""

import hashlib
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg

from tinybench_assets.defs.jobs import jobs
from tinybench_assets.defs.partitions import register_partitions
from tinybench_assets.defs.resources import LandingResource, StoreResource
from tinybench_assets.orchestration.evaluations import register_evaluations
from tinybench_assets.orchestration.orphans import free_pool_slots, mark_orphaned_runs
from tinybench_assets.orchestration.refresh_plan import decide

#: seconds between full refresh decisions when nothing is seen to change (TINYBENCH_SENSOR_INTERVAL_S, default 30;
#: the tests use a few seconds). The sensor looks at every pass of Dagster's sensor daemon (one every 5 s), and decides
#: at once when a landing file or a run of the project's jobs changed.
SENSOR_INTERVAL_S = int(os.environ.get("TINYBENCH_SENSOR_INTERVAL_S", "30"))
#: the sensor's minimum interval: below the daemon's 5 s pass, so that no pass is skipped. Dagster measures the interval
#: from the end of the last tick: with 5 s, a pass that followed a tick that took a second (a decision that requests
#: runs) found 4 s elapsed and skipped it, and a chain's next run waited 10 s instead of 5
LOOK_INTERVAL_S = min(1, SENSOR_INTERVAL_S)
_ENDED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]


def landing_signature(incoming: Path | str) -> str:
    """A cheap signature of the landing folder (every file's path, size and mtime): it changes when a file lands,
    changes or goes; the content hashes are the decision's business."""
    root, marks = Path(incoming), []
    if root.is_dir():
        for path in sorted(root.rglob("*")):
            try:
                st = path.stat()
            except OSError:
                continue
            if path.is_file():
                marks.append(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(marks).encode()).hexdigest()[:16]


def runs_ended_since(instance: dg.DagsterInstance, since: float) -> bool:
    """Whether a run ended after epoch second ``since`` (the instance holds the project's runs)."""
    return bool(
        instance.get_run_records(
            dg.RunsFilter(statuses=_ENDED, updated_after=datetime.fromtimestamp(since, tz=timezone.utc)), limit=1
        )
    )


@dg.sensor(
    jobs=jobs,
    minimum_interval_seconds=LOOK_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Refreshes the project when leaderboard data arrives, asking the question `tinybench run-all` asks "
    "(tinybench_assets/orchestration/refresh_plan.py): new or changed files in the landing folder -> one ingest run (bad files are "
    "quarantined there); then, per scenario partition, one run of just its stale or missing assets (a drop refreshes "
    "its own partitions); then each leaderboard whose scenarios are done; then each evaluation (a file in "
    "data/incoming/evaluations/<leaderboard>/) whose leaderboard is done and whose answers or tiny benchmark changed. Runs are tagged with why "
    "(tinybench/reason). No run while one is live for the same partition or while a `tinybench run-all` holds the "
    "project's lock; a failing state is retried once, then left until its inputs or code change. It decides when a "
    "landing file or a run of the project changed, and every TINYBENCH_SENSOR_INTERVAL_S seconds (default 30); "
    "runs carry a priority, critical path first (leaderboards, then the larger leaderboard's scenarios), and no more "
    "are requested than the `duckdb` pool has free slots (the rest when a run ends).",
)
def refresh_sensor(context: dg.SensorEvaluationContext, landing: LandingResource, store: StoreResource):
    now = time.time()
    try:
        cursor = json.loads(context.cursor) if context.cursor else {}
    except ValueError:
        cursor = {}
    files = landing_signature(landing.incoming_path)
    last = float(cursor.get("at", 0.0))
    if (
        cursor
        and files == cursor.get("files")
        and now - last < SENSOR_INTERVAL_S
        and not runs_ended_since(context.instance, last)
    ):
        return dg.SkipReason("no landing file and no run changed since the last decision")
    context.update_cursor(json.dumps({"at": now, "files": files}))
    decision = decide(context.repository_def, context.instance, store.get(), landing.incoming_path)
    if decision.new_partitions:
        register_partitions(context.instance, decision.new_partitions)
    if decision.new_evaluations:
        register_evaluations(context.instance, decision.new_evaluations)
    if not decision.work:
        return dg.SkipReason(
            "nothing stale or missing" + (f"; {'; '.join(decision.waiting)[:1000]}" if decision.waiting else "")
        )
    for line in decision.waiting:
        context.log.info(line)
    work = decision.work
    # no more runs than the "duckdb" pool has free slots, the critical path first: runs queued beyond them took the
    # slots a leaderboard needed when it became ready (the queue launches within a second, this sensor looks every
    # 5 s), and the leaderboard waited for a whole scenario run of another leaderboard
    free = free_run_slots(context.instance, decision.live)
    if free < len(work):
        held = ", ".join(f"{w.job} {w.partition or ''}".strip() for w in work[free:])
        context.log.info(f"{len(work) - free} run(s) held back until a pool slot frees: {held}")
        work = work[:free]
    if not work:
        return dg.SkipReason(
            f"{decision.live} live run(s) hold the pool's slots; the next decision comes when one ends"
        )
    # the run key is the work's state plus its attempt: a tick repeats no request, a failed state is retried at most
    # MAX_ATTEMPTS times
    return [w.run_request(f"{w.job}:{w.partition or ''}:{w.state}:{w.attempt}", "refresh_sensor") for w in work]


sensors = [refresh_sensor]


def free_run_slots(instance: dg.DagsterInstance, live: int) -> int:
    """Runs the refresh sensor may request now: the instance's pool limit (``concurrency: pools: default_limit``,
    the "duckdb" pool's) less the project's live runs; unlimited when no limit is set."""
    limit = instance.global_op_concurrency_default_limit
    return 1_000_000 if not limit else max(0, int(limit) - live)


@dg.sensor(
    minimum_interval_seconds=min(60, SENSOR_INTERVAL_S),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Marks orphaned runs FAILED: runs shown as started whose process on this machine is known and gone (a "
    "`tinybench run-all` or a run worker killed with SIGKILL, out of memory, a restart), so the UI shows the truth; "
    "a queued or starting run whose worker has not reported its pid is never one. Gives back the `duckdb` pool slots "
    "of runs that ended.",
)
def orphaned_runs_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    # pool slots still held by runs that ended (a run worker killed mid-step leaves its pending step in the "duckdb"
    # pool, and the next run waited for Dagster's run monitoring to free it, a minute later)
    free_pool_slots(context.instance, ended_before_s=5.0)
    marked = mark_orphaned_runs(context.instance, who="orphaned_runs_sensor (Dagster daemon)")
    if not marked:
        return dg.SkipReason("no orphaned runs")
    for run_id, why in marked:
        context.log.warning(f"run {run_id} marked FAILED: {why}")
    return dg.SkipReason(f"marked {len(marked)} orphaned run(s) FAILED: {', '.join(r for r, _ in marked)}")


sensors.append(orphaned_runs_sensor)
