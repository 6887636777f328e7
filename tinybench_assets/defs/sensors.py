"""The landing-folder sensor: new or changed drops register partitions and refresh only those partitions."""

import json
from pathlib import Path

import dagster as dg

from tinybench_assets.defs.jobs import ingest_job, leaderboard_job, scenario_job
from tinybench_assets.defs.partitions import leaderboard_partitions, scenario_partitions
from tinybench_assets.defs.resources import LandingResource
from tinybench_assets.io.drops import DropError, file_sha256, landing_files, leaderboard_of, read_drop, split_partition_key


def _fingerprint(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


@dg.sensor(
    jobs=[scenario_job, ingest_job],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches the landing folder. A new or changed file registers its scenario partitions and requests "
    "a refresh of those partitions only; a file it cannot read triggers the ingest job, which quarantines it. "
    "The cursor (path -> size, mtime, sha256) makes it idempotent.",
)
def landing_sensor(context: dg.SensorEvaluationContext, landing: LandingResource) -> dg.SensorResult | dg.SkipReason:
    seen: dict[str, list[str]] = json.loads(context.cursor) if context.cursor else {}
    incoming = landing.incoming_path
    current: dict[str, list[str]] = {}
    changed: dict[str, str] = {}  # rel path -> sha256 of files whose bytes are new
    for path in landing_files(incoming):
        rel = str(path.relative_to(incoming))
        fp = _fingerprint(path)
        prev = seen.get(rel)
        if prev and prev[0] == fp:
            current[rel] = prev
            continue
        sha = file_sha256(path)
        current[rel] = [fp, sha]
        if not prev or prev[1] != sha:
            changed[rel] = sha
    if not changed:
        return dg.SkipReason(f"no new or changed files in {incoming}")
    keys: set[str] = set()
    bad: list[str] = []
    for rel, sha in changed.items():
        path = incoming / rel
        try:
            keys.update(read_drop(path, leaderboard_of(path, incoming)).partition_keys())
        except DropError as err:
            context.log.warning(str(err))
            bad.append(f"{rel}@{sha[:12]}")
    known = set(context.instance.get_dynamic_partitions(scenario_partitions.name))
    known_boards = set(context.instance.get_dynamic_partitions(leaderboard_partitions.name))
    new_keys = sorted(keys - known)
    new_boards = sorted({split_partition_key(k)[0] for k in keys} - known_boards)
    requests = []
    if keys or bad:
        tag = ",".join(sorted(f"{r}@{s[:12]}" for r, s in changed.items()))
        requests.append(dg.RunRequest(run_key=f"ingest:{tag}", job_name=ingest_job.name, tags={"tinybench/files": tag[:4000]}))
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
