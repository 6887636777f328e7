"""The landing-folder sensor: new or changed drops register partitions and refresh only those partitions."""

import json
from pathlib import Path

import dagster as dg

from tinybench_assets.defs.jobs import ingest_job, scenario_job
from tinybench_assets.defs.partitions import leaderboard_partitions, scenario_partitions
from tinybench_assets.defs.resources import LandingResource
from tinybench_assets.io.drops import DropError, file_sha256, landing_files, leaderboard_of, read_drop


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
    new_boards = sorted({k.split(".", 1)[0] for k in keys} - known_boards)
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
