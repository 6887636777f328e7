"""Sensors: the landing folder (new or changed drops refresh only their partitions), the partitions a sampled drop
turned out to touch, the leaderboard refresh after its scenarios, and orphaned runs (their process was killed)."""

import json
import os
import socket
import time
from pathlib import Path

import dagster as dg

from tinybench_assets.defs.jobs import ingest_job, leaderboard_job, scenario_job
from tinybench_assets.defs.partitions import leaderboard_partitions, scenario_partitions
from tinybench_assets.defs.resources import LandingResource
from tinybench_assets.io.drops import file_sha256, landing_files, split_partition_key
from tinybench_assets.io.landing import FULL_READ_MAX_BYTES, TICK_FULL_READ_BYTES, peek_drop

#: run tags of the landing sensor's ingest runs: files whose partitions the tick only sampled, and the partitions
#: the tick requested runs for (:func:`sampled_drop_partitions_sensor` requests the rest once the ingest is done)
SAMPLED_TAG, REQUESTED_TAG = "tinybench/sampled", "tinybench/requested"


def _fingerprint(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


@dg.sensor(
    jobs=[scenario_job, ingest_job],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches the landing folder. A new or changed file registers its scenario partitions and requests "
    "a refresh of those partitions only; a file it cannot read triggers the ingest job, which quarantines it. "
    "The cursor (path -> size, mtime, sha256) makes it idempotent. It parses a file whole only when small (4 MiB, "
    "32 MiB a tick); of a bigger one it reads the header and first rows, and the partitions the ingest finds beyond "
    "them are requested by sampled_drop_partitions_sensor.",
)
def landing_sensor(context: dg.SensorEvaluationContext, landing: LandingResource) -> dg.SensorResult | dg.SkipReason:
    seen: dict[str, list[str]] = json.loads(context.cursor) if context.cursor else {}
    incoming = landing.incoming_path
    current: dict[str, list[str]] = {}
    changed: dict[str, str] = {}  # rel path -> sha256 of files whose bytes are new
    for path in landing_files(incoming):
        rel = str(path.relative_to(incoming))
        try:
            fp = _fingerprint(path)
            prev = seen.get(rel)
            if prev and prev[0] == fp:
                current[rel] = prev
                continue
            sha = file_sha256(path)  # streams the bytes (no parsing, constant memory): about 0.1 s for 40 MB
        except FileNotFoundError:  # moved away (quarantined, ingested elsewhere) since the listing
            continue
        current[rel] = [fp, sha]
        if not prev or prev[1] != sha:
            changed[rel] = sha
    if not changed:
        return dg.SkipReason(f"no new or changed files in {incoming}")
    keys: set[str] = set()
    bad: list[str] = []
    sampled: list[str] = []
    budget = TICK_FULL_READ_BYTES
    trust = getattr(landing, "trust_pickle_drops", None)  # a resource setting where defined, else the environment's
    for rel, sha in changed.items():
        path = incoming / rel
        size = path.stat().st_size if path.exists() else 0
        whole = size <= min(FULL_READ_MAX_BYTES, budget)
        budget -= size if whole else 0
        peek = peek_drop(path, incoming, whole=whole, trust_pickles=trust)
        keys.update(peek.keys)
        if peek.error:
            context.log.warning(peek.error)
            bad.append(f"{rel}@{sha[:12]}")
        elif not peek.complete:
            sampled.append(rel)
    known = set(context.instance.get_dynamic_partitions(scenario_partitions.name))
    known_boards = set(context.instance.get_dynamic_partitions(leaderboard_partitions.name))
    new_keys = sorted(keys - known)
    new_boards = sorted({split_partition_key(k)[0] for k in keys} - known_boards)
    requests = []
    if keys or bad or sampled:
        tag = ",".join(sorted(f"{r}@{s[:12]}" for r, s in changed.items()))
        tags = {"tinybench/files": tag[:4000]}
        if sampled:
            tags.update({SAMPLED_TAG: ",".join(sorted(sampled))[:4000], REQUESTED_TAG: ",".join(sorted(keys))})
        requests.append(dg.RunRequest(run_key=f"ingest:{tag}", job_name=ingest_job.name, tags=tags))
    for key in sorted(keys):
        stamp = ",".join(sorted(s[:12] for s in changed.values()))
        requests.append(dg.RunRequest(run_key=f"{key}:{stamp}", job_name=scenario_job.name, partition_key=key))
    partition_requests = []
    if new_keys:
        partition_requests.append(scenario_partitions.build_add_request(new_keys))
    if new_boards:
        partition_requests.append(leaderboard_partitions.build_add_request(new_boards))
    return dg.SensorResult(run_requests=requests, dynamic_partitions_requests=partition_requests, cursor=json.dumps(current, sort_keys=True))


sensors = [landing_sensor]


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[ingest_job],
    request_job=scenario_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="After an ingest run that the landing sensor started for a file it could only sample (too big to "
    "read inside a tick), request a refresh of every scenario partition the ingest found that the landing sensor "
    "did not request itself.",
)
def sampled_drop_partitions_sensor(context: dg.RunStatusSensorContext):
    run = context.dagster_run
    if SAMPLED_TAG not in run.tags:
        return dg.SkipReason("no sampled drops in this ingest run")
    requested = {k for k in run.tags.get(REQUESTED_TAG, "").split(",") if k}
    touched: set[str] = set()
    for rec in context.instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records:
        mat = rec.event_log_entry.asset_materialization
        if mat is not None and mat.asset_key == dg.AssetKey("landing_ingest") and "partitions_touched" in mat.metadata:
            touched.update(mat.metadata["partitions_touched"].value)
    missing = sorted(touched - requested)
    if not missing:
        return dg.SkipReason(f"the sampled drops touched no partition beyond {sorted(requested)}")
    return [dg.RunRequest(run_key=f"{key}:{run.run_id}", partition_key=key) for key in missing]


sensors.append(sampled_drop_partitions_sensor)


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[scenario_job],
    request_job=leaderboard_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="When a scenario refresh succeeds and no other scenario run of the same leaderboard is queued or "
    "running, refresh the leaderboard's joint fit, anchors, estimates and backtest once.",
)
def leaderboard_refresh_sensor(context: dg.RunStatusSensorContext):
    key = context.dagster_run.tags.get("dagster/partition")
    if not key or "." not in key:
        return dg.SkipReason("scenario run without a partition")
    board = split_partition_key(key)[0]
    pending = context.instance.get_runs(
        filters=dg.RunsFilter(
            job_name=scenario_job.name,
            statuses=[dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
                      dg.DagsterRunStatus.STARTED],
        )
    )
    busy = [r.tags.get("dagster/partition") for r in pending if (r.tags.get("dagster/partition") or "").startswith(board + ".")]
    if busy:
        return dg.SkipReason(f"{board}: scenario runs still pending for {busy}; the last one to finish triggers the refresh")
    return dg.RunRequest(run_key=f"{board}:{context.dagster_run.run_id}", partition_key=board)


sensors.append(leaderboard_refresh_sensor)


# ---------------------------------------------------------------------- orphaned runs
#: run tags naming the process that executes a run in-process (``tinybench run-all``): pid, host, start (epoch s)
PID_TAG, HOST_TAG, PROCESS_START_TAG = "tinybench/pid", "tinybench/host", "tinybench/process_start"
_LIVE = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


def process_start_time(pid: int) -> float | None:
    """When the live process ``pid`` started (epoch seconds, from Linux's /proc; 0.0 where unknown), or None when no
    live process has that pid (a zombie counts as gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc: existence only
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0.0
    if fields[0] in ("Z", "X"):
        return None
    btime = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
    return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def run_owner_tags() -> dict[str, str]:
    """Tags for the runs this process executes in-process: what :func:`orphaned_runs` needs to tell it is gone."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname(),
            PROCESS_START_TAG: f"{process_start_time(os.getpid()) or 0.0:.2f}"}


def _local_instance(instance: dg.DagsterInstance) -> bool:
    """Whether the instance's runs live on this machine (SQLite or in memory), so an untagged run's pid is one here."""
    from dagster._core.storage.runs import InMemoryRunStorage, SqliteRunStorage

    return isinstance(instance.run_storage, (SqliteRunStorage, InMemoryRunStorage))


def _owner(instance: dg.DagsterInstance, run: dg.DagsterRun) -> tuple[int, str | None, float | None] | None:
    """(pid, host, process start) of the process executing a run: its tags, else the pid its executor recorded in
    its first engine event (in-process and multiprocess executors do; host and start unknown)."""
    if PID_TAG in run.tags:
        start = float(run.tags.get(PROCESS_START_TAG) or 0) or None
        return int(run.tags[PID_TAG]), run.tags.get(HOST_TAG), start
    for rec in instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=50).records:
        event = rec.event_log_entry.dagster_event
        meta = event.engine_event_data.metadata if event is not None and event.engine_event_data else {}
        if "pid" in meta:
            return int(getattr(meta["pid"], "value", meta["pid"])), None, None
    return None


def orphaned_runs(instance: dg.DagsterInstance) -> list[tuple[dg.DagsterRun, str]]:
    """Runs the instance shows NOT_STARTED, STARTING or STARTED whose process is gone (killed: SIGKILL, out of
    memory, a restart), each with the reason. Only runs whose process is known to be on this host count: tagged with
    this host (:func:`run_owner_tags`), or untagged on an instance stored on this machine; a NOT_STARTED run only when
    tagged (an untagged one may wait for a launcher)."""
    host, local, out = socket.gethostname(), _local_instance(instance), []
    for rec in instance.get_run_records(dg.RunsFilter(statuses=_LIVE)):
        run = rec.dagster_run
        owner = _owner(instance, run)
        if owner is None or (run.status == dg.DagsterRunStatus.NOT_STARTED and PID_TAG not in run.tags):
            continue
        pid, run_host, started = owner
        if (run_host or (host if local else None)) != host:
            continue
        alive_since = process_start_time(pid)
        began = rec.start_time or rec.create_timestamp.timestamp()
        if alive_since is not None and (alive_since == 0.0 or (abs(alive_since - started) < 2.0 if started else alive_since <= began + 2.0)):
            continue  # its process lives (the same one: it started when the tag says, or before the run began)
        gone = "is gone" if alive_since is None else f"is gone (pid {pid} now belongs to a process started later)"
        out.append((run, f"its process (pid {pid} on {host}"
                         f"{time.strftime(', started %Y-%m-%d %H:%M:%S', time.localtime(started)) if started else ''}) {gone}"))
    return out


def free_pool_slots(instance: dg.DagsterInstance, run_ids=(), ended_before_s: float = 60.0) -> list[str]:
    """Give back the concurrency-pool slots (the "duckdb" pool) held by ``run_ids`` and by runs that ended more than
    ``ended_before_s`` ago; returns the runs freed. A killed run never returns its slot, and a later run's step then
    waits for the pool for ever (Dagster's in-process executor polls it at full CPU)."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return []
    holders = storage.get_concurrency_run_ids()
    if not holders:
        return []
    known = {r.dagster_run.run_id: r for r in instance.get_run_records(dg.RunsFilter(run_ids=list(holders)))}
    now, freed = time.time(), []
    for run_id in sorted(holders):
        rec = known.get(run_id)
        ended = rec is not None and rec.dagster_run.is_finished and (rec.end_time or 0) < now - ended_before_s
        if run_id in run_ids or rec is None or ended:
            storage.free_concurrency_slots_for_run(run_id)
            freed.append(run_id)
    return freed


def mark_orphaned_runs(instance: dg.DagsterInstance, who: str) -> list[tuple[str, str]]:
    """Mark every orphaned run (:func:`orphaned_runs`) FAILED with a message saying why and by whom, and give back
    the pool slots they held (:func:`free_pool_slots`); returns (run id, reason) of those marked. Dagster's run
    monitoring cannot see these: the default run launcher has no worker health check, and a ``tinybench run-all``
    runs its jobs in its own process, with no launcher."""
    marked = []
    for run, why in orphaned_runs(instance):
        fresh = instance.get_run_by_id(run.run_id)
        if fresh is None or fresh.status not in _LIVE:
            continue  # it ended meanwhile
        instance.report_run_failed(fresh, f"Orphaned run: {why}: it was killed before it could record how it ended. "
                                          f"Marked FAILED by {who} at {time.strftime('%Y-%m-%d %H:%M:%S')}; run "
                                          "`tinybench run-all` (or materialize again) to redo its work.")
        marked.append((run.run_id, why))
    free_pool_slots(instance, {r for r, _ in marked})
    return marked


@dg.sensor(
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Marks orphaned runs FAILED: runs shown as started whose process on this machine is gone (a "
    "`tinybench run-all` or a run worker killed with SIGKILL, out of memory, a restart), so the UI shows the truth.",
)
def orphaned_runs_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    marked = mark_orphaned_runs(context.instance, who="orphaned_runs_sensor (Dagster daemon)")
    if not marked:
        return dg.SkipReason("no orphaned runs")
    for run_id, why in marked:
        context.log.warning(f"run {run_id} marked FAILED: {why}")
    return dg.SkipReason(f"marked {len(marked)} orphaned run(s) FAILED: {', '.join(r for r, _ in marked)}")


sensors.append(orphaned_runs_sensor)
