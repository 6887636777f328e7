"""run-all refreshes scenario partitions in one-thread worker processes before the leaderboards (the default on 2
cores or more, `--scenario-jobs`), and leaderboards in parallel processes (issue 12, `--jobs`): each leaderboard's chain (its scenario
partitions, then the leaderboard) runs in its own spawned process, its lines printed by run-all as they come; the runs
claim no op-level pool slot; a SIGKILLed run-all takes its chain processes with it, the next run-all marks their runs
FAILED and finishes the work, and the results equal those of the parallel run. (SIGTERM: run-all stops its chains,
SIGTERM then SIGKILL, before it exits; checked by hand, not here, to keep the suite short.)"""

import re
import signal
import subprocess
import time

import dagster as dg
import numpy as np
import pytest

from tinybench_assets.io.store import Store
from tinybench_assets.orchestration.orphans import PID_TAG, process_start_time
from tinybench_assets.testing import reliability_data as rd

pytestmark = pytest.mark.timeout(600)
TABLES = ["binarized", "matrix_items", "irt_items", "irt_models", "irt_dims"]


def _two_boards(root) -> dict:
    """A throwaway project with two small leaderboards (different data); its environment, results in DuckDB. Nine
    models each: below the estimation assets' minimum (they skip with a note), as this test is about run-all's
    processes, not the estimators."""
    env = rd.small_project(root, n_models=9, n_items=30)
    rd.write_table(rd.long_table(9, 30, scenario="quiz", seed=4), root / "incoming" / "tinyb" / "quiz.parquet")
    env.pop("TINYBENCH_STORE", None)
    return env


def _rows(db, table: str, key: str) -> list:
    """Every stored row of one partition, as sorted plain tuples (arrays as lists); run times left out."""
    df = Store(db).query(f"SELECT * EXCLUDE (partition_key) FROM {table} WHERE partition_key = ?", [key])
    df = df.drop(columns=[c for c in df.columns if c in ("seconds", "fit_seconds", "created_at", "updated_at")])
    rows = [tuple(v.tolist() if isinstance(v, np.ndarray) else v for v in r) for r in df.itertuples(index=False)]
    return sorted(rows, key=repr)


def _run_all(env: dict, *args: str) -> str:
    done = subprocess.run(rd.run_all_cmd(*args), env=env, cwd=rd.ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _sigkill_mid_chain(env: dict, log_path) -> list:
    """Start `run-all --jobs 2`, SIGKILL it once a chain's scenario run exists (created, starting or started: each
    carries its process's pid tag); returns those runs as they stand after the kill, all still live."""
    statuses = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    with open(log_path, "w") as log:  # a file, not a pipe: Dagster's log-mirroring helpers may hold a pipe open
        proc = subprocess.Popen(
            rd.run_all_cmd("--jobs", "2"), env=env, cwd=rd.ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        instance, live, t0 = rd.instance_for(env), [], time.monotonic()
        try:
            while not live and time.monotonic() < t0 + 180 and proc.poll() is None:
                runs = instance.get_runs(dg.RunsFilter(job_name="refresh_scenario", statuses=statuses))
                live = [r for r in runs if PID_TAG in r.tags]
                time.sleep(0.02)
            rc = proc.poll()
            assert live and rc is None, (
                f"no chain run seen live in {time.monotonic() - t0:.0f} s; run-all's exit code {rc}; "
                f"its runs {[(r.job_name, r.status.value) for r in instance.get_runs()]}; "
                f"its output: {log_path.read_text()[-3000:]}"
            )
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.pid not in {int(r.tags[PID_TAG]) for r in live}
    live = [instance.get_run_by_id(r.run_id) for r in live]  # a run may have finished between the poll and the kill
    live = [r for r in live if r.status in statuses]
    assert live, "every chain run seen live finished before the kill"
    return live


def test_leaderboards_in_parallel_processes_a_killed_run_all_and_the_scenario_phase(tmp_path):
    env = _two_boards(tmp_path / "par")
    out = _run_all(env, "--jobs", "2")
    assert "2 leaderboards in 2 processes at once (1 thread(s) each)" in out, out  # 2 cores or more: 1 thread each
    for key in ("tiny.quiz", "tinyb.quiz", "tiny", "tinyb"):  # every chain's lines reach run-all's own output
        assert re.search(rf"^\s+(scenario|leaderboard) {re.escape(key)}\s+ok in", out, re.M), out
    instance = rd.instance_for(env)
    runs = [r for r in instance.get_runs() if r.job_name in ("refresh_scenario", "refresh_leaderboard")]
    assert runs and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    assert len({r.tags[PID_TAG] for r in runs}) == 2  # each chain in its own process
    assert not instance.event_log_storage.get_concurrency_run_ids()  # no op-level pool slot taken or left

    # the same project killed mid-chain: the chains die with run-all (parent-death signal) ...
    env1 = _two_boards(tmp_path / "killed")
    live = _sigkill_mid_chain(env1, tmp_path / "killed.log")
    chain_pids = {int(r.tags[PID_TAG]) for r in live}
    deadline = time.monotonic() + 20
    while any(process_start_time(p) is not None for p in chain_pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(process_start_time(p) is None for p in chain_pids)
    # ... the next run-all (one process, one thread: the parallel chains' thread count) marks their runs FAILED and
    # finishes; every result equals the parallel run's
    out1 = _run_all(env1, "--jobs", "1", "--threads", "1")
    assert "processes at once" not in out1
    for run in live:
        assert f"marked orphaned run {run.run_id} FAILED" in out1
    assert not [r for r in rd.instance_for(env1).get_runs() if r.status == dg.DagsterRunStatus.STARTED]
    for table in TABLES:
        n = 0
        for key in ("tiny.quiz", "tinyb.quiz", "tiny", "tinyb"):  # scenario fits and the leaderboards' joint fits
            rows = _rows(env["TINYBENCH_DUCKDB"], table, key)
            assert rows == _rows(env1["TINYBENCH_DUCKDB"], table, key), (table, key)
            n += len(rows)
        assert n > 0, table

    # the default on 2 cores or more: scenario partitions and leaderboards in one-thread worker processes, a
    # leaderboard as soon as its scenario partition is done; every result equals the one-process, one-thread run's
    env2 = _two_boards(tmp_path / "phase")
    out2 = _run_all(env2, "--scenario-jobs", "2")
    assert "2 scenario partition(s) to refresh in 2 processes at once (1 thread each)" in out2, out2
    lines = [k for _, k in re.findall(r"^\s+(scenario|leaderboard) (\S+)\s+ok in", out2, re.M)]
    assert sorted(lines) == ["tiny", "tiny.quiz", "tinyb", "tinyb.quiz"], out2
    recs = [
        r
        for r in rd.instance_for(env2).get_run_records()
        if r.dagster_run.job_name in ("refresh_scenario", "refresh_leaderboard")
    ]
    assert recs and all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in recs)
    by_part = {r.dagster_run.tags["dagster/partition"]: r for r in recs}
    for board in ("tiny", "tinyb"):  # a leaderboard starts after its own scenario partition has finished
        assert by_part[board].start_time >= by_part[f"{board}.quiz"].end_time
    assert len({r.dagster_run.tags[PID_TAG] for r in recs}) == 2  # the two workers did all of it, run-all itself none
    for table in TABLES:
        for key in ("tiny.quiz", "tinyb.quiz", "tiny", "tinyb"):
            assert _rows(env2["TINYBENCH_DUCKDB"], table, key) == _rows(env1["TINYBENCH_DUCKDB"], table, key), (
                table,
                key,
            )
    warm = _run_all(env2, "--scenario-jobs", "2")  # nothing new: no worker is started, nothing is materialized
    assert "processes at once" not in warm and re.search(r"\b0 asset materialization", warm), warm


def test_the_largest_leaderboard_and_its_scenarios_go_first():
    from tinybench_assets.cli.chains import scenario_phase_plan

    sizes = {"big.a": (0, 900), "big.b": (0, 1000), "small.texts": (50, 20), "small.c": (0, 30)}
    tasks, after = scenario_phase_plan(sizes, {"small": ["small.c", "small.texts"], "big": ["big.a", "big.b"]})
    assert list(tasks) == ["big.b", "big.a", "big", "small.texts", "small.c", "small"]
    assert tasks["big"] == [("refresh_leaderboard", "big", "leaderboard")]
    assert tasks["big.a"] == [("refresh_scenario", "big.a", "scenario")]
    assert after == {"big": {"big.a", "big.b"}, "small": {"small.texts", "small.c"}}
    # a leaderboard with no scenario partition to refresh waits for nothing
    tasks, after = scenario_phase_plan(sizes, {"small": [], "big": ["big.a"]})
    assert list(tasks) == ["big.a", "big", "small"] and after["small"] == set()


def _inline_workers(monkeypatch):
    """run_parallel's workers as threads of this process (so monkeypatched functions are the ones they call)."""
    import multiprocessing as mp
    import queue
    import threading

    from tinybench_assets.cli import chains

    class _Inline:
        def __init__(self, target, args):
            self.t = threading.Thread(target=target, args=args, daemon=True)

        def start(self):
            self.t.start()

        def is_alive(self):
            return self.t.is_alive()

        def join(self, timeout=None):
            self.t.join(timeout)

        terminate = kill = lambda self: None

    class _Ctx:
        Queue = staticmethod(queue.Queue)
        Process = _Inline

    monkeypatch.setattr(mp, "get_context", lambda kind: _Ctx)
    monkeypatch.setattr(chains, "_die_with_parent", lambda: None)
    return chains


TASKS = {
    "lb": [("refresh_leaderboard", "lb", "leaderboard")],
    "lb.a": [("refresh_scenario", "lb.a", "scenario")],
    "lb.b": [("refresh_scenario", "lb.b", "scenario")],
}


def test_a_waiting_task_starts_when_what_it_waits_for_is_done(monkeypatch):
    """run_parallel's dispatch: a task never starts before those it waits for, and a free worker takes the first ready
    task (here: with one worker, the order is exactly the waiting order)."""
    chains = _inline_workers(monkeypatch)
    order = []
    monkeypatch.setattr(chains, "run_units", lambda units, say=None, **kw: (order.append(units[0][1]), (1, []))[1])
    m, failed = chains.run_parallel(TASKS, 1, threads=0, after={"lb": {"lb.a", "lb.b"}})
    assert order == ["lb.a", "lb.b", "lb"] and m == 3 and failed == []


def test_a_worker_dying_mid_task_fails_that_task_and_the_rest_still_runs(monkeypatch, capsys):
    """A worker killed mid-task (here: its loop ends without reporting) fails that task; what waited for it still runs
    on the other worker, and run-all does not wait for ever."""
    chains = _inline_workers(monkeypatch)
    order = []
    worker = chains._worker

    def dying_worker(wid, tasks, results, threads, kw):
        if wid == 0:
            tasks.get()  # takes lb.a and dies with it
            return
        worker(wid, tasks, results, threads, kw)

    monkeypatch.setattr(chains, "_worker", dying_worker)
    monkeypatch.setattr(chains, "run_units", lambda units, say=None, **kw: (order.append(units[0][1]), (1, []))[1])
    m, failed = chains.run_parallel(TASKS, 2, threads=0, after={"lb": {"lb.a", "lb.b"}})
    assert failed == ["lb.a"] and order == ["lb.b", "lb"] and m == 2
    assert "worker process 0 died while refreshing lb.a" in capsys.readouterr().out
