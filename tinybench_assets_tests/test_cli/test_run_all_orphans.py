"""Orphaned runs (issue 14): a `tinybench run-all` killed with SIGKILL left its Dagster run STARTED for ever, so the UI
showed it running. The next run-all (and the daemon's orphaned_runs_sensor) marks such runs FAILED, saying why;
runs whose process lives, or lives on another host, are left alone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import dagster as dg
import pytest
from dagster._core.test_utils import create_run_for_test

from tinybench_assets import cli
from tinybench_assets.defs import sensors as s
from tinybench_assets.orchestration import orphans as o
from tinybench_assets.testing import reliability_data as rd


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _run(instance, status=dg.DagsterRunStatus.STARTED, **tags):
    return create_run_for_test(
        instance, job_name="refresh_scenario", status=status, tags={k.replace("_", "/", 1): v for k, v in tags.items()}
    )


def test_orphans_are_marked_failed_and_live_or_foreign_runs_are_not(tmp_path):
    instance = dg.DagsterInstance.local_temp(str(tmp_path))  # SQLite, as a project's .dagster_home
    me, host = o.run_owner_tags(), socket.gethostname()
    dead = _dead_pid()
    orphan = _run(instance, tinybench_pid=str(dead), tinybench_host=host, tinybench_process_start="1000.0")
    not_started = _run(instance, status=dg.DagsterRunStatus.NOT_STARTED, tinybench_pid=str(dead), tinybench_host=host)
    reused = _run(
        instance,
        tinybench_pid=me[o.PID_TAG],
        tinybench_host=host,  # our pid, but a process started earlier
        tinybench_process_start=str(float(me[o.PROCESS_START_TAG]) - 3600),
    )
    live = _run(instance, **{k.replace("/", "_"): v for k, v in me.items()})
    foreign = _run(instance, tinybench_pid=str(dead), tinybench_host=host + "-elsewhere")
    untagged = _run(instance)  # no pid anywhere (no engine event): nothing to judge by
    finished = _run(instance, status=dg.DagsterRunStatus.SUCCESS, tinybench_pid=str(dead), tinybench_host=host)

    slots = instance.event_log_storage
    slots.set_concurrency_slots("duckdb", 3)
    for run in (orphan, live, finished):  # the killed run still holds its "duckdb" pool slot
        assert slots.claim_concurrency_slot("duckdb", run.run_id, "raw_responses").is_claimed

    marked = dict(o.mark_orphaned_runs(instance, who="the test"))
    assert slots.get_concurrency_run_ids() == {live.run_id}  # given back: the orphan's, and the long-finished run's
    assert set(marked) == {orphan.run_id, not_started.run_id, reused.run_id}
    assert f"pid {dead} on {host}" in marked[orphan.run_id] and "is gone" in marked[orphan.run_id]
    assert "belongs to a process started later" in marked[reused.run_id]
    status = {r.run_id: r.status for r in instance.get_runs()}
    assert {status[r.run_id] for r in (orphan, not_started, reused)} == {dg.DagsterRunStatus.FAILURE}
    assert status[live.run_id] == status[foreign.run_id] == status[untagged.run_id] == dg.DagsterRunStatus.STARTED
    assert status[finished.run_id] == dg.DagsterRunStatus.SUCCESS
    failure = instance.all_logs(orphan.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)[-1]
    assert "Orphaned run" in failure.message and "Marked FAILED by the test" in failure.message

    # the daemon's sensor does the same on its next tick
    late = _run(instance, tinybench_pid=str(dead), tinybench_host=host)
    tick = s.orphaned_runs_sensor(dg.build_sensor_context(instance=instance))
    assert isinstance(tick, dg.SkipReason) and late.run_id in tick.skip_message
    assert instance.get_run_by_id(late.run_id).status == dg.DagsterRunStatus.FAILURE
    assert s.orphaned_runs_sensor(dg.build_sensor_context(instance=instance)).skip_message == "no orphaned runs"


def test_process_start_time():
    assert o.process_start_time(_dead_pid()) is None
    assert abs(o.process_start_time(os.getpid()) - float(o.run_owner_tags()[o.PROCESS_START_TAG])) < 0.05


@pytest.mark.timeout(300)
def test_sigkilled_run_all_leaves_a_started_run_that_the_next_run_all_marks_failed(tmp_path, monkeypatch, capsys):
    env = rd.small_project(tmp_path, n_models=9, n_items=30)  # < 10 models: no estimation fits to wait for
    for var in (
        "TINYBENCH_DUCKDB",
        "TINYBENCH_INCOMING",
        "TINYBENCH_QUARANTINE",
        "TINYBENCH_ARTIFACTS",
        "DAGSTER_HOME",
    ):
        monkeypatch.setenv(var, env[var])
    run_id, out = rd.kill_run_all_mid_run(env, job="refresh_scenario")
    instance = rd.instance_for(env)
    assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.STARTED, out  # what the UI showed for ever
    # run-all's runs claim no op-level pool slots (its run lock serializes run-alls; pool granularity "run" for them)
    assert run_id not in instance.event_log_storage.get_concurrency_run_ids()

    assert cli.main(["run-all", "--no-seed"]) == 0
    printed = capsys.readouterr().out
    assert f"marked orphaned run {run_id} FAILED" in printed and "is gone" in printed, printed
    instance = rd.instance_for(env)
    assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
    assert "Orphaned run" in instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)[-1].message
    assert not instance.event_log_storage.get_concurrency_run_ids()  # no slot left taken
    runs = instance.get_runs()
    assert not [r.run_id for r in runs if r.status in (dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING)]
    later = [
        r
        for r in runs
        if r.run_id != run_id
        and r.job_name in ("refresh_scenario", "refresh_leaderboard")
        and r.status == dg.DagsterRunStatus.SUCCESS
    ]
    assert {r.tags.get("dagster/partition") for r in later} >= {"tiny.quiz", "tiny"}, (
        printed
    )  # the second run completed


def test_a_worker_that_starts_long_after_its_run_was_queued_is_not_an_orphan(tmp_path):
    """The race the daemon hit: a run queued for seconds, then its worker started and reported its pid; the worker's
    start is after the run's creation, which once read as "pid now belongs to a process started later"."""
    import time

    from dagster._core.events import EngineEventData

    instance = dg.DagsterInstance.local_temp(str(tmp_path))
    run = create_run_for_test(instance, job_name="refresh_scenario", status=dg.DagsterRunStatus.STARTED)
    assert o.orphaned_runs(instance) == []  # no worker has reported yet: never an orphan
    time.sleep(3.0)  # queued behind other runs
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        time.sleep(0.5)
        instance.report_engine_event(
            f"Executing steps in process (pid: {worker.pid})", run, EngineEventData.in_process(worker.pid)
        )
        for _ in range(3):  # the sensor ticking every second
            assert o.mark_orphaned_runs(instance, who="the test") == []
            time.sleep(1.0)
    finally:
        worker.kill()
        worker.wait()
    marked = o.mark_orphaned_runs(instance, who="the test")
    assert [r for r, _ in marked] == [run.run_id] and f"pid {worker.pid}" in marked[0][1]
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
