"""Runs in hand: the runs of either path (``tinybench run-all``, the Dagster daemon) that are queued, starting or
started, and how run-all waits for the daemon's (so a partition is computed once when the two paths meet)."""

from __future__ import annotations

import time

import dagster as dg

from tinybench_assets.orchestration.orphans import PID_TAG

LIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def live_runs(instance: dg.DagsterInstance) -> dict[tuple[str, str | None], list[dg.DagsterRun]]:
    """{(job name, partition or None): runs queued, starting or started} across both paths."""
    out: dict = {}
    for run in instance.get_runs(dg.RunsFilter(statuses=LIVE)):
        out.setdefault((run.job_name, run.tags.get("dagster/partition")), []).append(run)
    return out


def wait_for_live_runs(
    instance: dg.DagsterInstance,
    job_name: str | None = None,
    partition: str | None = None,
    say=print,
    poll_s: float = 2.0,
    timeout_s: float = 3600.0,
) -> int:
    """Wait until no run of ``job_name`` at ``partition`` (any job / partition when None) that the Dagster daemon
    has in hand is queued, starting or started; returns how many were waited for. Queued runs that no live daemon will
    launch are canceled instead (their work is about to be done by the caller). run-all's own in-process runs (tagged
    with its pid; one run-all per project holds the lock) are not waited for."""
    waited, said, t0 = set(), False, time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        mine = [
            r
            for (job, part), runs in live_runs(instance).items()
            for r in runs
            if (job_name is None or job == job_name)
            and (partition is None or part == partition)
            and PID_TAG not in r.tags
        ]
        if not mine:
            return len(waited)
        if not daemon_alive(instance):
            for run in [r for r in mine if r.status == dg.DagsterRunStatus.QUEUED]:
                instance.report_run_canceled(
                    run,
                    "Canceled by tinybench run-all: it was queued for the Dagster daemon, "
                    "which is not running, and run-all does its work now.",
                )
                say(
                    f"  canceled queued run {run.run_id} ({run.job_name} {run.tags.get('dagster/partition') or ''}): "
                    "no daemon is running to launch it; run-all does its work"
                )
            mine = [r for r in mine if r.status != dg.DagsterRunStatus.QUEUED]
            if not mine:
                continue
        waited.update(r.run_id for r in mine)
        if not said:
            say(
                f"  waiting for {len(mine)} run(s) the Dagster daemon has in hand: "
                + ", ".join(
                    f"{r.job_name} {r.tags.get('dagster/partition') or ''} ({r.status.value})" for r in mine[:6]
                )
            )
            said = True
        time.sleep(poll_s)
    return len(waited)


def daemon_alive(instance: dg.DagsterInstance, within_s: float = 90.0) -> bool:
    """Whether a Dagster daemon that launches queued runs has sent a heartbeat lately."""
    try:
        beats = instance.get_daemon_heartbeats()
    except Exception:  # noqa: BLE001 - an instance without daemon storage
        return False
    now = time.time()
    return any(k in ("QUEUED_RUN_COORDINATOR", "SENSOR") and now - hb.timestamp < within_s for k, hb in beats.items())
