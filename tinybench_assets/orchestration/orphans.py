"""Orphaned runs: runs the Dagster instance shows as started whose process on this machine is gone (a ``tinybench
run-all`` or a run worker killed with SIGKILL, out of memory, a restart). Used by run-all at its start and by the
daemon's ``orphaned_runs_sensor``: :func:`run_owner_tags` (who executes a run), :func:`orphaned_runs`,
:func:`mark_orphaned_runs` (FAILED with the reason) and :func:`free_pool_slots` (the pool slots they held)."""

import os
import socket
import time
from pathlib import Path

import dagster as dg

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
    btime = next(
        int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime")
    )
    return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def run_owner_tags() -> dict[str, str]:
    """Tags for the runs this process executes in-process: what :func:`orphaned_runs` needs to tell it is gone."""
    return {
        PID_TAG: str(os.getpid()),
        HOST_TAG: socket.gethostname(),
        PROCESS_START_TAG: f"{process_start_time(os.getpid()) or 0.0:.2f}",
    }


def _local_instance(instance: dg.DagsterInstance) -> bool:
    """Whether the instance's runs live on this machine (SQLite or in memory), so an untagged run's pid is one here."""
    # lazy: dagster_private loads ~0.55 s of private Dagster modules that the definitions do not
    from tinybench_assets.orchestration.dagster_private import InMemoryRunStorage, SqliteRunStorage

    return isinstance(instance.run_storage, (SqliteRunStorage, InMemoryRunStorage))


def _owner(
    instance: dg.DagsterInstance, run: dg.DagsterRun
) -> tuple[int, str | None, float | None, float | None] | None:
    """(pid, host, process start, reported at) of the process executing a run: its tags (run-all's in-process runs),
    else the pid its run worker recorded in an engine event (in-process and multiprocess executors do), with that
    event's time; host and start unknown. None while the worker has not reported: a queued or starting run."""
    if PID_TAG in run.tags:
        start = float(run.tags.get(PROCESS_START_TAG) or 0) or None
        return int(run.tags[PID_TAG]), run.tags.get(HOST_TAG), start, None
    for rec in instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=50).records:
        event = rec.event_log_entry.dagster_event
        meta = event.engine_event_data.metadata if event is not None and event.engine_event_data else {}
        if "pid" in meta:
            return int(getattr(meta["pid"], "value", meta["pid"])), None, None, rec.event_log_entry.timestamp
    return None


def orphaned_runs(instance: dg.DagsterInstance) -> list[tuple[dg.DagsterRun, str]]:
    """Runs the instance shows NOT_STARTED, STARTING or STARTED whose process is gone (killed: SIGKILL, out of
    memory, a restart), each with the reason. Only runs whose process is known to be on this host count: tagged with
    this host (:func:`run_owner_tags`), or untagged on an instance stored on this machine; a NOT_STARTED run only when
    tagged (an untagged one may wait for a launcher). A run whose worker has not reported its pid yet (queued,
    starting) is never an orphan: Dagster's run monitoring fails one that does not start in time."""
    host, local, out = socket.gethostname(), _local_instance(instance), []
    for rec in instance.get_run_records(dg.RunsFilter(statuses=_LIVE)):
        run = rec.dagster_run
        owner = _owner(instance, run)
        if owner is None or (run.status == dg.DagsterRunStatus.NOT_STARTED and PID_TAG not in run.tags):
            continue
        pid, run_host, started, reported = owner
        if (run_host or (host if local else None)) != host:
            continue
        alive_since = process_start_time(pid)
        # the same process lives when it started when the tag says, or (a run worker) before it reported its pid: a
        # worker launched long after its run was queued is alive, a pid taken over by a later process is not
        if alive_since is not None and (
            alive_since == 0.0 or (abs(alive_since - started) < 2.0 if started else alive_since <= reported + 2.0)
        ):
            continue
        gone = "is gone" if alive_since is None else f"is gone (pid {pid} now belongs to a process started later)"
        out.append(
            (
                run,
                f"its process (pid {pid} on {host}"
                f"{time.strftime(', started %Y-%m-%d %H:%M:%S', time.localtime(started)) if started else ''}) {gone}",
            )
        )
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
        instance.report_run_failed(
            fresh,
            f"Orphaned run: {why}: it was killed before it could record how it ended. "
            f"Marked FAILED by {who} at {time.strftime('%Y-%m-%d %H:%M:%S')}; run "
            "`tinybench run-all` (or materialize again) to redo its work.",
        )
        marked.append((run.run_id, why))
    free_pool_slots(instance, {r for r, _ in marked})
    return marked
