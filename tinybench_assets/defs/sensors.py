"""Sensors: the landing folder (new or changed drops refresh only their partitions), the partitions a sampled drop
turned out to touch, the leaderboard refresh after its scenarios, and orphaned runs (their process was killed)."""

import json
from pathlib import Path

import dagster as dg

from tinybench_assets.defs.jobs import ingest_job, leaderboard_job, scenario_job
from tinybench_assets.defs.orphans import mark_orphaned_runs
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
