"""The refresh sensor and the nightly schedules ask run-all's question (refresh_plan.decide), tick by tick, with the
requested runs executed as the daemon would run them (here in-process): ingest first, then only each partition's
stale assets, then the leaderboard; a changed drop refreshes only its partition; nothing while run-all holds the
lock, nothing twice for a partition with a live run, no retry loop on a failing state."""

import os
import time

import dagster as dg
import pytest
from dagster._core.test_utils import create_run_for_test

from tinybench_assets import paths
from tinybench_assets.definitions import build_defs
from tinybench_assets.defs.assets import scenario_assets
from tinybench_assets.defs.resources import LandingResource, StoreResource
from tinybench_assets.defs.schedules import schedules
from tinybench_assets.defs.sensors import refresh_sensor
from tinybench_assets.orchestration.refresh import pending
from tinybench_assets.orchestration.refresh_plan import REASON_TAG, STATE_TAG, run_all_lock_path
from tinybench_assets.testing import reliability_data as rd

pytestmark = pytest.mark.timeout(300)
SCHEDULES = {s.job_name: s for s in schedules}


@pytest.fixture()
def project(tmp_path, monkeypatch):
    incoming = tmp_path / "incoming"
    monkeypatch.setenv("TINYBENCH_INCOMING", str(incoming))
    monkeypatch.setenv("TINYBENCH_DUCKDB", str(tmp_path / "tb.duckdb"))
    monkeypatch.setenv("TINYBENCH_QUARANTINE", str(tmp_path / "quarantine"))
    rd.write_table(rd.long_table(30, 40, scenario="quiz", seed=4), incoming / "lb" / "quiz.csv")
    rd.write_table(rd.long_table(30, 40, scenario="exam", seed=5), incoming / "lb" / "exam.csv")
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        yield {"incoming": incoming, "instance": instance, "defs": build_defs()}


def _resources():
    return {
        "landing": LandingResource(incoming=paths.incoming_dir(), quarantine=paths.quarantine_dir()),
        "store": StoreResource(database=paths.duckdb_path()),
    }


def tick(project):
    with dg.build_sensor_context(
        instance=project["instance"], resources=_resources(), repository_def=project["defs"].get_repository_def()
    ) as ctx:
        out = refresh_sensor(ctx)
    return [] if isinstance(out, dg.SkipReason) else out, out


def scheduled(project, job_name):
    with dg.build_schedule_context(
        instance=project["instance"], resources=_resources(), repository_def=project["defs"].get_repository_def()
    ) as ctx:
        out = SCHEDULES[job_name](ctx)
    return [] if isinstance(out, dg.SkipReason) else out


def execute(project, requests) -> list[str]:
    """Run what was requested, as the daemon's run worker would; returns the assets materialized."""
    done = []
    for r in requests:
        res = (
            project["defs"]
            .resolve_job_def(r.job_name)
            .execute_in_process(
                instance=project["instance"],
                partition_key=r.partition_key,
                asset_selection=r.asset_selection,
                tags=r.tags,
            )
        )
        assert res.success, r
        done += [f"{e.asset_key.to_user_string()}[{e.partition or ''}]" for e in res.get_asset_materialization_events()]
    return done


def summary(requests):
    return sorted((r.job_name, r.partition_key) for r in requests)


def test_ticks_follow_the_one_refresh_decision(project):
    reqs, _ = tick(project)
    assert summary(reqs) == [("ingest_landing", None)]
    assert "lb/exam.csv" in reqs[0].tags[REASON_TAG] and "new or changed" in reqs[0].tags[REASON_TAG]
    assert tick(project)[0][0].run_key == reqs[0].run_key  # the same state, the same run key: never launched twice
    execute(project, reqs)

    reqs, _ = tick(project)  # every scenario partition, in full; the leaderboard waits for them
    assert summary(reqs) == [("refresh_scenario", "lb.exam"), ("refresh_scenario", "lb.quiz")]
    assert all(r.asset_selection and len(r.asset_selection) == len(scenario_assets) for r in reqs)
    assert set(project["instance"].get_dynamic_partitions("scenarios")) == {"lb.exam", "lb.quiz"}
    assert summary(scheduled(project, "refresh_scenario")) == summary(reqs)  # the nightly schedule: the same answer
    assert scheduled(project, "refresh_leaderboard") == []
    execute(project, reqs)

    reqs, _ = tick(project)
    assert summary(reqs) == [("refresh_leaderboard", "lb")]
    execute(project, reqs)
    reqs, skip = tick(project)
    assert reqs == [] and "nothing stale or missing" in skip.skip_message
    for key in ("lb.exam", "lb.quiz"):  # run-all's own question agrees
        assert pending(project["defs"], project["instance"], "refresh_scenario", key) == set()

    # one changed drop: ingest, then only its partition from raw_responses on, then its leaderboard
    rd.write_table(rd.long_table(30, 40, scenario="quiz", seed=6), project["incoming"] / "lb" / "quiz.csv")
    reqs, _ = tick(project)
    assert summary(reqs) == [("ingest_landing", None)] and "lb/quiz.csv" in reqs[0].tags[REASON_TAG]
    execute(project, reqs)
    reqs, _ = tick(project)
    assert summary(reqs) == [("refresh_scenario", "lb.quiz")]
    assert "raw_responses: its drops changed" in reqs[0].tags[REASON_TAG]
    done = execute(project, reqs)
    assert "raw_responses[lb.quiz]" in done and not any("lb.exam" in d for d in done)
    reqs, _ = tick(project)
    assert summary(reqs) == [("refresh_leaderboard", "lb")]
    execute(project, reqs)
    assert tick(project)[0] == []

    # a prices file: ingest, then in every scenario partition of its leaderboard only the prices and what reads them
    (project["incoming"] / "lb" / "prices.csv").write_text("model,cost_per_question\nm0,1\n")
    reqs, _ = tick(project)
    assert summary(reqs) == [("ingest_landing", None)]
    execute(project, reqs)
    reqs, _ = tick(project)
    assert summary(reqs) == [("refresh_scenario", "lb.exam"), ("refresh_scenario", "lb.quiz")]
    fits = {"raw_responses", "response_matrix", "binarized_responses", "irt_model", "anchor_sets", "irt_joint"}
    for _ in range(3):  # the scenario partitions, then the leaderboard where a leaderboard asset reads the prices
        if not reqs:
            break
        assert all(
            "model_prices" in {k.to_user_string() for k in r.asset_selection}
            for r in reqs
            if r.job_name == "refresh_scenario"
        ), reqs
        assert not fits & {k.to_user_string() for r in reqs for k in r.asset_selection}, reqs
        assert "its leaderboard's prices changed" in reqs[0].tags[REASON_TAG] or reqs[0].job_name != "refresh_scenario"
        execute(project, reqs)
        reqs, _ = tick(project)
    assert reqs == []


def test_run_all_live_runs_and_failures_hold_requests_back(project):
    execute(project, tick(project)[0])  # ingest
    instance = project["instance"]

    lock = run_all_lock_path()
    lock.write_text(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}")
    reqs, skip = tick(project)
    assert reqs == [] and "tinybench run-all is refreshing" in skip.skip_message
    assert scheduled(project, "refresh_scenario") == []
    lock.write_text("")  # released

    live = create_run_for_test(
        instance, job_name="refresh_scenario", status=dg.DagsterRunStatus.STARTED, tags={"dagster/partition": "lb.quiz"}
    )
    reqs, _ = tick(project)
    assert summary(reqs) == [("refresh_scenario", "lb.exam")]  # lb.quiz has a live run: not a second one
    instance.report_run_canceled(live)

    reqs, _ = tick(project)
    quiz = next(r for r in reqs if r.partition_key == "lb.quiz")
    for attempt in range(2):  # its runs fail twice on the same state: retried once, then left alone
        assert quiz.run_key.endswith(f":{attempt}")
        create_run_for_test(
            instance,
            job_name="refresh_scenario",
            status=dg.DagsterRunStatus.FAILURE,
            tags={"dagster/partition": "lb.quiz", STATE_TAG: quiz.tags[STATE_TAG]},
        )
        reqs, skip = tick(project)
        quiz = next((r for r in reqs if r.partition_key == "lb.quiz"), None)
    assert quiz is None and summary(reqs) == [("refresh_scenario", "lb.exam")]
    # lb.exam refreshed: lb.quiz, left alone after its failures, still holds its leaderboard back
    execute(project, reqs)
    reqs, skip = tick(project)
    assert reqs == [] and "lb.quiz: its runs failed 2 times" in skip.skip_message, skip


def test_critical_path_first(tmp_path, monkeypatch):
    """Work is ordered leaderboards first, then the larger leaderboard's scenarios (dagster/priority: the daemon's
    queue launches a leaderboard whose scenarios are done before scenario runs still queued for another one)."""
    from tinybench_assets.orchestration.refresh_plan import LEADERBOARD_PRIORITY, PRIORITY_TAG

    incoming = tmp_path / "incoming"
    for var, sub in (
        ("TINYBENCH_INCOMING", "incoming"),
        ("TINYBENCH_DUCKDB", "tb.duckdb"),
        ("TINYBENCH_QUARANTINE", "quarantine"),
    ):
        monkeypatch.setenv(var, str(tmp_path / sub))
    rd.write_table(rd.long_table(30, 40, scenario="quiz", seed=4), incoming / "small" / "quiz.csv")
    rd.write_table(rd.long_table(30, 40, scenario="exam", seed=5), incoming / "small" / "exam.csv")
    rd.write_table(rd.long_table(60, 40, scenario="quiz", seed=6), incoming / "wide" / "quiz.csv")
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        project = {"incoming": incoming, "instance": instance, "defs": build_defs()}
        execute(project, tick(project)[0])  # ingest
        reqs, _ = tick(project)  # the larger leaderboard's partition first
        assert [(r.partition_key, int(r.tags[PRIORITY_TAG])) for r in reqs] == [
            ("wide.quiz", 1),
            ("small.exam", 0),
            ("small.quiz", 0),
        ]
        execute(project, [r for r in reqs if r.partition_key == "wide.quiz"])
        reqs, _ = tick(project)  # wide's scenarios are done: its leaderboard jumps ahead of small's scenario runs
        assert [(r.job_name, r.partition_key, int(r.tags[PRIORITY_TAG])) for r in reqs] == [
            ("refresh_leaderboard", "wide", LEADERBOARD_PRIORITY + 1),
            ("refresh_scenario", "small.exam", 0),
            ("refresh_scenario", "small.quiz", 0),
        ]


def test_no_more_requests_than_the_pool_has_free_slots(tmp_path, monkeypatch):
    """With the instance's pool limit (dagster.yaml: concurrency.pools.default_limit, 2), a tick requests at most as
    many runs as the pool has free slots, highest priority first; the rest come when a run ends. (Runs queued beyond
    the slots took them from a leaderboard that became ready a tick later.)"""
    from tinybench_assets.defs.sensors import free_run_slots

    incoming = tmp_path / "incoming"
    for var, sub in (
        ("TINYBENCH_INCOMING", "incoming"),
        ("TINYBENCH_DUCKDB", "tb.duckdb"),
        ("TINYBENCH_QUARANTINE", "quarantine"),
    ):
        monkeypatch.setenv(var, str(tmp_path / sub))
    for _k, (scenario, seed) in enumerate((("quiz", 4), ("exam", 5), ("test", 6))):
        rd.write_table(rd.long_table(30, 40, scenario=scenario, seed=seed), incoming / "lb" / f"{scenario}.csv")
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(
        temp_dir=str(tmp_path / "home"), overrides={"concurrency": {"pools": {"default_limit": 2}}}
    ) as instance:
        project = {"incoming": incoming, "instance": instance, "defs": build_defs()}
        assert free_run_slots(instance, 0) == 2 and free_run_slots(instance, 3) == 0
        execute(project, tick(project)[0])  # ingest
        reqs, _ = tick(project)
        assert [r.partition_key for r in reqs] == ["lb.exam", "lb.quiz"]  # 2 of the 3 stale partitions
        live = [
            create_run_for_test(
                instance,
                job_name="refresh_scenario",
                status=dg.DagsterRunStatus.STARTED,
                tags={"dagster/partition": r.partition_key},
            )
            for r in reqs
        ]
        reqs, skip = tick(project)
        assert reqs == [] and "hold the pool's slots" in skip.skip_message
        instance.report_run_canceled(live[0])  # lb.exam's run ended undone: one slot, one request (lb.quiz is live;
        reqs, _ = tick(project)  # lb.exam and lb.test are stale, in name order)
        assert [r.partition_key for r in reqs] == ["lb.exam"]


def test_sensor_decides_when_a_file_or_a_run_changed(project):
    """Between full decisions (every TINYBENCH_SENSOR_INTERVAL_S) a tick decides only when a landing file changed or a
    run of the project ended since the last decision; the cursor holds when and what it saw."""

    def tick_with(cursor):
        with dg.build_sensor_context(
            instance=project["instance"],
            resources=_resources(),
            cursor=cursor,
            repository_def=project["defs"].get_repository_def(),
        ) as ctx:
            out = refresh_sensor(ctx)
            return out, ctx.cursor

    out, cursor = tick_with(None)
    assert [r.job_name for r in out] == ["ingest_landing"] and cursor
    out, cursor2 = tick_with(cursor)  # nothing changed: no decision
    assert isinstance(out, dg.SkipReason) and "no landing file and no run changed" in out.skip_message
    assert cursor2 == cursor
    execute(project, [tick(project)[0][0]])  # a run of the project ended: the next tick decides
    out, cursor = tick_with(cursor)
    assert sorted(r.partition_key for r in out) == ["lb.exam", "lb.quiz"]
    out, _ = tick_with(cursor)
    assert isinstance(out, dg.SkipReason) and "no landing file and no run changed" in out.skip_message
    rd.write_table(rd.long_table(30, 40, scenario="quiz", seed=9), project["incoming"] / "lb" / "quiz.csv")
    out, _ = tick_with(cursor)  # a file changed: decides (ingest first)
    assert [r.job_name for r in out] == ["ingest_landing"]
