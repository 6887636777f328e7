"""The daemon path, for real: ``dagster-daemon run`` on the project's workspace.yaml and instance template, on a
throwaway project home holding small slices of ../shared/data (openllm arc + mmlu, RouterDC mmlu + gsm8k), beside
``tinybench run-all`` as a user runs it (a subprocess).

* drop files -> the daemon alone brings every partition up to date; run-all afterwards materializes nothing, and a
  run-all of everything (--force) on the same files stores the same rows; the daemon restarted after run-all, with
  nothing new, launches no run;
* * a changed drop refreshes only its scenario partition, its leaderboard and that leaderboard's evaluations (files in
  incoming/evaluations/<leaderboard>/, re-estimated once, their old rows kept as superseded); a bad file dropped with
  it is quarantined with its report while the changed file lands, and so is a bad evaluation file;
* run-all started while the daemon refreshes the same drop: every asset partition is computed once;
* a run worker SIGKILLed mid-step is marked FAILED once, with the reason, and its partition is redone; 8 runs queued
  and launched as the "duckdb" pool frees up (most wait in the queue for many seconds) are never taken for orphans
  (benchmarks/daemon.py queues 20).

One project for the whole sequence: each step starts from the state the previous one left (a second project would
cost another cold refresh in a suite that must stay short).
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from tinybench_assets.core import tiny_benchmark as tb
from tinybench_assets.io.store import Store
from tinybench_assets.testing.daemon_harness import (
    VENV_BIN,
    DaemonProject,
    assert_same_tables,
    orphan_failures,
    queue_runs,
    stop_schedules,
    store_tables,
    write_slice,
)

pytestmark = pytest.mark.timeout(900)


def runs_since(p: DaemonProject, before: set[str]) -> list[tuple[str, str | None]]:
    return sorted((r.job_name, r.tags.get("dagster/partition")) for r in p.runs() if r.run_id not in before)


def computed_twice(p: DaemonProject, after_storage_id: int) -> list:
    counts = collections.Counter((a, k) for a, k, _ in p.materializations(after_storage_id))
    return sorted(k for k, n in counts.items() if n > 1)


def change(path: Path) -> None:
    """A new version of a landed file: a RouterDC JSON loses its last 5 questions, a long table flips every score."""
    if path.suffix == ".json":
        path.write_text(json.dumps(json.loads(path.read_text())[:-5]))
    else:
        df = pd.read_parquet(path)
        df.assign(score=1 - df["score"]).to_parquet(path, index=False)


def wait_for(predicate, timeout_s: float, what: str, p: DaemonProject, poll_s: float = 0.2):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        got = predicate()
        if got:
            return got
        time.sleep(poll_s)
    raise AssertionError(f"timed out waiting for {what}; daemon log:\n{p.tail()}")


def plant_tiny_benchmarks(p: DaemonProject) -> dict[str, Path]:
    """The 9-model slice exports no tiny benchmark (its tiny_benchmark asset skips, leaving its folder alone): a
    simulated one (test_core's, 2 scenarios) is put in openllm's and routerdc's folders, and a held-out model's answers
    to it land in each board's evaluations folder. Returns {board: answers file}."""
    import numpy as np

    from tinybench_assets_tests.test_core.test_tiny_benchmark import answers_of, fitted, texts

    rm, test, pred = fitted(learned=False)
    art = tb.export_tiny_benchmark(pred, leaderboard="sim", n=5, item_texts=texts(rm))
    row = next(r for r in test if np.isfinite(rm.scores[r]).all())
    out = {}
    for board, model in (("openllm", "held-out"), ("routerdc", "other-model")):
        tb.save_artifact(art, pred, p.artifacts / board)
        answers = answers_of(tb.load_artifact(p.artifacts / board), rm, row)
        out[board] = p.incoming / "evaluations" / board / f"{model}.csv"
        out[board].parent.mkdir(parents=True, exist_ok=True)
        out[board].write_text("item,score\n" + "".join(f"{k},{v:g}\n" for k, v in answers.items()))
    return out


def cli_estimate(p: DaemonProject, board: str, answers: Path) -> list[dict]:
    res = subprocess.run(
        [str(VENV_BIN / "tinybench"), "estimate", "--leaderboard", board, "--answers", str(answers), "--json"],
        env=p.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["scenarios"]


def evaluation_versions(p: DaemonProject) -> dict[str, int]:
    """{leaderboard/model: how many versions the evaluations table holds}."""
    df = Store(str(p.db)).evaluations(latest=False)
    return {f"{b}/{m}": g["tiny_benchmark_version"].nunique() for (b, m), g in df.groupby(["leaderboard", "model"])}


def test_the_daemon_path_alone_beside_run_all_and_through_faults(tmp_path):
    p = DaemonProject(tmp_path / "project")
    # 9 models (the same in both scenarios) < 10: the estimation assets skip with a note (benchmarks/daemon.py runs them)
    write_slice(p.incoming, n_models=9, routerdc_records=30, common_models=True)
    answers = plant_tiny_benchmarks(p)
    # every run below is the refresh sensor's: the nightly schedules would add their own when the suite runs at 03:00,
    # 03:15, 04:00 or 04:30 (a suite started at 03:14 failed so); test_sensor.py evaluates them
    assert len(stop_schedules(p)) == 4
    try:
        # drop files: the daemon alone brings everything up to date
        p.start()
        p.wait_converged(timeout_s=400)
        ran = runs_since(p, set())
        assert ran == [
            ("ingest_landing", None),
            ("refresh_evaluation", "openllm/held-out"),
            ("refresh_evaluation", "routerdc/other-model"),
            ("refresh_leaderboard", "openllm"),
            ("refresh_leaderboard", "routerdc"),
            ("refresh_scenario", "openllm.arc"),
            ("refresh_scenario", "openllm.mmlu"),
            ("refresh_scenario", "routerdc.gsm8k"),
            ("refresh_scenario", "routerdc.mmlu"),
        ], ran
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in p.runs()), [
            (r.job_name, r.status) for r in p.runs()
        ]
        assert all(
            r.tags.get("tinybench/reason") and r.tags.get("tinybench/trigger") == "refresh_sensor" for r in p.runs()
        )
        p.stop()
        daemon_rows = store_tables(p.db)
        # the evaluations: the rows `tinybench estimate --json` gives on the same file
        rows = Store(str(p.db)).evaluations("openllm")
        want = cli_estimate(p, "openllm", answers["openllm"])
        assert rows["model"].tolist() == ["held-out"] * len(want) and rows["scenario"].tolist() == [
            w["scenario"] for w in want
        ]
        for w, (_, r) in zip(want, rows.iterrows()):
            for k in ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2"):
                assert abs(w[k] - r[k]) <= 1e-9, (k, w[k], r[k])
            assert (w["estimator"], w["answered"]) == (r["estimator"], r["n_answers"])
        assert evaluation_versions(p) == {"openllm/held-out": 1, "routerdc/other-model": 1}

        # run-all after the daemon caught up: nothing to materialize; a run-all of everything stores the same rows
        mark = p.last_storage_id()
        res = p.run_all()
        assert res.returncode == 0 and "0 asset materialization" in res.stdout, res.stdout + res.stderr
        assert p.materializations(mark) == []
        res = p.run_all("--force")
        assert res.returncode == 0, res.stdout + res.stderr
        assert_same_tables(daemon_rows, store_tables(p.db))

        # the daemon started after that run-all, nothing new: no run over several ticks
        before = {r.run_id for r in p.runs()}
        p.start()
        ticks = p.wait_sensor_ticks("refresh_sensor", 2)
        assert runs_since(p, before) == [] and all(t.status.value == "SKIPPED" for t in ticks), p.tail()

        # a changed drop and bad files beside it: only that partition, its leaderboard and its evaluations; the bad files
        # quarantined (a leaderboard drop, an evaluation file), the rest land
        before, mark = {r.run_id for r in p.runs()}, p.last_storage_id()
        change(p.incoming / "routerdc" / "gsm8k-train.json")
        (p.incoming / "routerdc" / "broken.csv").write_text("model,scenario,item,score\na,gsm8k,q1,7\n")
        (p.incoming / "evaluations" / "routerdc" / "foreign.csv").write_text("item,score\nopenllm.arc.q1,1\n")
        p.wait_converged(timeout_s=300)
        assert runs_since(p, before) == [
            ("ingest_landing", None),
            ("refresh_evaluation", "routerdc/foreign"),
            ("refresh_evaluation", "routerdc/other-model"),
            ("refresh_leaderboard", "routerdc"),
            ("refresh_scenario", "routerdc.gsm8k"),
        ], p.tail()
        assert {k for _, k, _ in p.materializations(mark)} == {
            None,
            "routerdc.gsm8k",
            "routerdc",
            "routerdc/other-model",
            "routerdc/foreign",
        }
        assert evaluation_versions(p) == {"openllm/held-out": 1, "routerdc/other-model": 2}
        assert (
            "not items of this leaderboard"
            in (p.quarantine / "evaluations" / "routerdc" / "foreign.csv.error.txt").read_text()
        )
        assert "score" in (p.quarantine / "routerdc" / "broken.csv.error.txt").read_text()
        assert (p.quarantine / "routerdc" / "broken.csv").exists() and not (
            p.incoming / "routerdc" / "broken.csv"
        ).exists()

        # run-all started while the daemon refreshes a drop: each asset partition is computed once
        mark = p.last_storage_id()
        change(p.incoming / "openllm" / "arc.responses.parquet")
        wait_for(
            lambda: any(r.job_name == "refresh_scenario" for r in p.live_runs()), 120, "the daemon's scenario run", p
        )
        res = p.run_all()
        assert res.returncode == 0, res.stdout + res.stderr
        p.wait_converged(timeout_s=300)
        assert computed_twice(p, mark) == [], p.materializations(mark)
        assert {k for _, k, _ in p.materializations(mark)} == {None, "openllm.arc", "openllm", "openllm/held-out"}
        assert evaluation_versions(p) == {"openllm/held-out": 2, "routerdc/other-model": 2}

        # a run worker SIGKILLed mid-step: FAILED once, with the reason; the next tick redoes its partition
        before = {r.run_id for r in p.runs()}
        change(p.incoming / "openllm" / "mmlu.responses.parquet")

        def victim():
            for run in p.live_runs():
                if run.job_name == "refresh_scenario" and run.run_id not in before:
                    pid = p.worker_pid(run.run_id, after_step="raw_responses")
                    if pid:
                        return run, pid
            return None

        run, pid = wait_for(victim, 180, "a scenario run past raw_responses", p)
        os.kill(pid, signal.SIGKILL)
        p.wait_converged(timeout_s=300)
        assert p.instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
        failures = p.instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        assert len(failures) == 1, (
            failures
        )  # once: by Dagster's code server (it saw its child die) or the orphan sensor
        why = " ".join(e.message or "" for e in p.instance.all_logs(run.run_id))
        assert "SIGKILL" in why or ("Orphaned run" in why and f"pid {pid}" in why), why
        new = [r for r in p.runs() if r.run_id not in before]
        assert sorted(
            (r.job_name, r.tags.get("dagster/partition") or "", r.status.value) for r in new if r.run_id != run.run_id
        ) == [
            ("ingest_landing", "", "SUCCESS"),
            ("refresh_evaluation", "openllm/held-out", "SUCCESS"),
            ("refresh_leaderboard", "openllm", "SUCCESS"),
            ("refresh_scenario", "openllm.mmlu", "SUCCESS"),
        ], p.tail()
        # each version kept, all but the latest superseded
        hist = Store(str(p.db)).evaluations("openllm", "held-out", latest=False)
        assert hist.groupby("tiny_benchmark_version")["superseded"].all().sum() == 2
        assert (~hist["superseded"]).sum() == len(want) and evaluation_versions(p)["openllm/held-out"] == 3

        # 8 runs queued at once, launched one after another (each waits for the one before it): none is taken for an
        # orphan. benchmarks/daemon.py queues 20; here 8 keep the check (the last waits for seven runs) and the suite short
        queued = queue_runs(p, "ingest_landing", 8)
        wait_for(lambda: all(p.instance.get_run_by_id(r).is_finished for r in queued), 400, "the queued runs", p, 1.0)
        statuses = collections.Counter(p.instance.get_run_by_id(r).status for r in queued)
        assert statuses == {dg.DagsterRunStatus.SUCCESS: 8} and orphan_failures(p, queued) == [], (statuses, p.tail())
    finally:
        p.close()
