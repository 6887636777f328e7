"""The daemon path, for real: ``dagster-daemon run`` on the project's workspace.yaml and instance template, on a
throwaway project home holding small slices of ../shared/data (openllm arc + mmlu, RouterDC mmlu + gsm8k), beside
``tinybench run-all`` as a user runs it (a subprocess).

* drop files -> the daemon alone brings every partition up to date; the store equals a run-all's on the same files;
* a daemon restart with nothing new launches no run; run-all afterwards materializes nothing; run-all first, then the
  daemon: no run;
* a changed drop refreshes only its scenario partition and its leaderboard; a bad file is quarantined with its
  report while the good one beside it lands;
* run-all started while the daemon refreshes the same drop: every asset partition is computed once;
* a run worker SIGKILLed mid-step is marked FAILED once, with the reason, and its partition is redone; 20 runs queued
  and launched one after another (each waiting its turn for the "duckdb" pool) are never taken for orphans.
"""
from __future__ import annotations

import collections
import json
import os
import signal
import time
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from tinybench_assets_tests import reliability_data as rd
from tinybench_assets_tests.daemon_harness import DaemonProject, assert_same_store, queue_runs, write_slice

pytestmark = pytest.mark.timeout(900)


def runs_since(p: DaemonProject, before: set[str]) -> list[tuple[str, str | None]]:
    return sorted((r.job_name, r.tags.get("dagster/partition")) for r in p.runs() if r.run_id not in before)


def computed_twice(p: DaemonProject, after_storage_id: int) -> list:
    counts = collections.Counter((a, k) for a, k, _ in p.materializations(after_storage_id))
    return sorted(k for k, n in counts.items() if n > 1)


def test_the_daemon_refreshes_the_project_alone_truthfully_and_beside_run_all(tmp_path):
    p, ref = DaemonProject(tmp_path / "daemon"), DaemonProject(tmp_path / "runall")
    write_slice(p.incoming)
    write_slice(ref.incoming)
    try:
        # drop files: the daemon alone brings everything up to date, to the same rows as run-all
        p.start()
        p.wait_converged(timeout_s=400)
        ran = runs_since(p, set())
        assert ran.count(("ingest_landing", None)) == 1 and len(ran) == 7, ran
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in p.runs()), [(r.job_name, r.status) for r in p.runs()]
        res = ref.run_all()
        assert res.returncode == 0, res.stdout + res.stderr
        assert_same_store(p.db, ref.db)

        # a restart with nothing new: no run over several ticks
        p.stop()
        before = {r.run_id for r in p.runs()}
        p.start()
        time.sleep(4 * p.sensor_interval_s + 5)
        assert runs_since(p, before) == [], p.tail()
        p.stop()
        # run-all after the daemon caught up: nothing to materialize
        mark = p.last_storage_id()
        res = p.run_all()
        assert res.returncode == 0 and "0 asset materialization" in res.stdout, res.stdout + res.stderr
        assert p.materializations(mark) == []
        # the other way round: run-all first (ref), then its daemon: no run
        before = {r.run_id for r in ref.runs()}
        ref.start()
        time.sleep(4 * ref.sensor_interval_s + 5)
        assert before and runs_since(ref, before) == [], ref.tail()
        ref.stop()

        # a changed drop (and a bad file beside a good new one) while the daemon runs
        p.start()
        before, mark = {r.run_id for r in p.runs()}, p.last_storage_id()
        path = p.incoming / "routerdc" / "gsm8k-train.json"
        path.write_text(json.dumps(json.loads(path.read_text())[:-5]))
        (p.incoming / "twin").mkdir()
        (p.incoming / "twin" / "broken.csv").write_text("model,scenario,item,score\na,quiz,q1,7\n")
        rd.write_table(rd.long_table(20, 30, scenario="quiz", seed=3), p.incoming / "twin" / "quiz.csv")
        p.wait_converged(timeout_s=300)
        assert runs_since(p, before) == [("ingest_landing", None), ("refresh_leaderboard", "routerdc"),
                                         ("refresh_leaderboard", "twin"), ("refresh_scenario", "routerdc.gsm8k"),
                                         ("refresh_scenario", "twin.quiz")], p.tail()
        touched = {k for _, k, _ in p.materializations(mark)}
        assert touched == {None, "routerdc.gsm8k", "routerdc", "twin.quiz", "twin"}, touched
        assert (p.quarantine / "twin" / "broken.csv").exists()
        assert "score" in (p.quarantine / "twin" / "broken.csv.error.txt").read_text()
        assert not (p.incoming / "twin" / "broken.csv").exists()

        # run-all started while the daemon refreshes the same drop: each asset partition is computed once
        mark = p.last_storage_id()
        path = p.incoming / "openllm" / "arc.responses.parquet"
        df = pd.read_parquet(path)
        df.assign(score=1 - df["score"]).to_parquet(path, index=False)
        t0 = time.monotonic()
        while not any(r.job_name == "refresh_scenario" for r in p.live_runs()) and time.monotonic() - t0 < 120:
            time.sleep(0.5)
        res = p.run_all()
        assert res.returncode == 0, res.stdout + res.stderr
        p.wait_converged(timeout_s=300)
        assert computed_twice(p, mark) == [], p.materializations(mark)
        assert {k for _, k, _ in p.materializations(mark)} >= {"openllm.arc", "openllm"}
    finally:
        p.close()
        ref.close()


def test_a_killed_run_worker_is_failed_once_and_redone_and_queued_runs_are_never_orphans(tmp_path):
    p = DaemonProject(tmp_path / "daemon")
    write_slice(p.incoming, n_models=30, routerdc_records=0)
    try:
        p.start()
        p.wait_converged(timeout_s=300)
        # a changed drop; its scenario run's worker is killed mid-step
        before = {r.run_id for r in p.runs()}
        path = p.incoming / "openllm" / "arc.responses.parquet"
        df = pd.read_parquet(path)
        df.assign(score=1 - df["score"]).to_parquet(path, index=False)
        victim, pid = None, None
        t0 = time.monotonic()
        while pid is None and time.monotonic() - t0 < 180:
            for run in p.live_runs():
                if run.job_name == "refresh_scenario" and run.run_id not in before:
                    victim, pid = run, p.worker_pid(run.run_id, after_step="raw_responses")
            time.sleep(0.2)
        assert pid, p.tail()
        os.kill(pid, signal.SIGKILL)
        p.wait_converged(timeout_s=300)
        killed = p.instance.get_run_by_id(victim.run_id)
        assert killed.status == dg.DagsterRunStatus.FAILURE
        failures = p.instance.all_logs(victim.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        assert len(failures) == 1, failures  # once: by Dagster's code server (it saw its child die) or the orphan sensor
        why = " ".join(e.message or "" for e in p.instance.all_logs(victim.run_id))
        assert "SIGKILL" in why or ("Orphaned run" in why and f"pid {pid}" in why), why
        redo = [r for r in p.runs() if r.run_id not in before and r.run_id != victim.run_id
                and r.tags.get("dagster/partition") == "openllm.arc"]
        assert [r.status for r in redo] == [dg.DagsterRunStatus.SUCCESS], p.tail()
        others = [r for r in p.runs() if r.run_id not in before and r.status != dg.DagsterRunStatus.SUCCESS]
        assert [r.run_id for r in others] == [victim.run_id]

        # 20 runs queued at once, launched one after another: none is marked orphaned
        queued = queue_runs(p, "ingest_landing", 20)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 400 and any(not p.instance.get_run_by_id(r).is_finished for r in queued):
            time.sleep(1.0)
        statuses = collections.Counter(p.instance.get_run_by_id(r).status for r in queued)
        assert statuses == {dg.DagsterRunStatus.SUCCESS: 20}, (statuses, p.tail())
    finally:
        p.close()
