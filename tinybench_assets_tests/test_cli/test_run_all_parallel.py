"""run-all refreshes leaderboards in parallel processes (issue 12): each leaderboard's chain (its scenario
partitions, then the leaderboard) runs in its own spawned process, its lines printed by run-all as they come; the
results equal a one-process run; the runs claim no op-level pool slot; a SIGKILLed run-all takes its chain
processes with it, and the next run-all marks their runs FAILED."""
import os
import re
import signal
import subprocess
import time

import dagster as dg
import numpy as np
import pytest

from tinybench_assets import cli
from tinybench_assets.defs.orphans import PID_TAG, process_start_time
from tinybench_assets.io.store import Store
from tinybench_assets_tests import reliability_data as rd

pytestmark = pytest.mark.timeout(600)
TABLES = ["binarized", "matrix_items", "irt_items", "irt_models", "irt_dims"]


def _two_boards(root, monkeypatch=None) -> dict:
    env = rd.small_project(root, n_models=20, n_items=30)
    rd.write_table(rd.long_table(20, 30, scenario="quiz", seed=4), root / "incoming" / "tinyb" / "quiz.parquet")
    if monkeypatch is not None:
        for var in ("TINYBENCH_DUCKDB", "TINYBENCH_INCOMING", "TINYBENCH_QUARANTINE", "TINYBENCH_ARTIFACTS", "DAGSTER_HOME"):
            monkeypatch.setenv(var, env[var])
        monkeypatch.delenv("TINYBENCH_STORE", raising=False)
    return env


def _rows(db, table: str, key: str) -> list:
    """Every stored row of one partition, as sorted plain tuples (arrays as lists); run times left out."""
    df = Store(db).query(f"SELECT * EXCLUDE (partition_key) FROM {table} WHERE partition_key = ?", [key])
    df = df.drop(columns=[c for c in df.columns if c in ("seconds", "fit_seconds", "created_at", "updated_at")])
    rows = [tuple(v.tolist() if isinstance(v, np.ndarray) else v for v in r) for r in df.itertuples(index=False)]
    return sorted(rows, key=repr)


def test_two_leaderboards_in_two_processes_equal_one_process(tmp_path, monkeypatch, capsys):
    env = _two_boards(tmp_path / "par", monkeypatch)
    assert cli.main(["run-all", "--no-seed", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 leaderboards in 2 processes at once" in out, out
    for key in ("tiny.quiz", "tinyb.quiz", "tiny", "tinyb"):  # every chain's lines reach run-all's own output
        assert re.search(rf"^\s+(scenario|leaderboard) {re.escape(key)}\s+ok in", out, re.M), out
    instance = dg.DagsterInstance.from_config(env["DAGSTER_HOME"])
    runs = [r for r in instance.get_runs() if r.job_name in ("refresh_scenario", "refresh_leaderboard")]
    assert runs and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    pids = {r.tags[PID_TAG] for r in runs}
    assert len(pids) == 2 and str(os.getpid()) not in pids  # each chain in its own process, not this one
    assert not instance.event_log_storage.get_concurrency_run_ids()  # no op-level pool slot taken or left
    # the results of the two chains that ran at once equal those of a one-process run of the same project
    db = env["TINYBENCH_DUCKDB"]
    env1 = _two_boards(tmp_path / "one", monkeypatch)
    assert cli.main(["run-all", "--no-seed", "--jobs", "1"]) == 0
    assert "processes at once" not in capsys.readouterr().out
    for table in TABLES:
        n = 0
        for key in ("tiny.quiz", "tinyb.quiz", "tiny", "tinyb"):  # scenario fits and the leaderboards' joint fits
            rows = _rows(db, table, key)
            assert rows == _rows(env1["TINYBENCH_DUCKDB"], table, key), (table, key)
            n += len(rows)
        assert n > 0, table


def test_killed_run_all_takes_its_chain_processes_along(tmp_path):
    env = _two_boards(tmp_path)
    env.pop("TINYBENCH_STORE", None)
    log = open(tmp_path / "run-all.log", "w")  # a file, not a pipe: Dagster's log-mirroring helpers may hold a pipe
    proc = subprocess.Popen(rd.run_all_cmd("--jobs", "2"), env=env, cwd=rd.ROOT, stdout=log, stderr=subprocess.STDOUT)
    instance = rd.instance_for(env)
    deadline, live = time.monotonic() + 180, []
    try:
        while not live and time.monotonic() < deadline and proc.poll() is None:
            live = instance.get_runs(dg.RunsFilter(job_name="refresh_scenario", statuses=[dg.DagsterRunStatus.STARTED]))
            time.sleep(0.05)
        assert live and proc.poll() is None, "no chain run started before run-all ended"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    chain_pids = {int(r.tags[PID_TAG]) for r in live}
    assert proc.pid not in chain_pids
    deadline = time.monotonic() + 20
    while any(process_start_time(p) is not None for p in chain_pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(process_start_time(p) is None for p in chain_pids)  # the chains died with run-all
    done = subprocess.run(rd.run_all_cmd(), env=env, cwd=rd.ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for run in live:
        assert f"marked orphaned run {run.run_id} FAILED" in done.stdout
    instance = rd.instance_for(env)
    assert not [r for r in instance.get_runs() if r.status == dg.DagsterRunStatus.STARTED]
