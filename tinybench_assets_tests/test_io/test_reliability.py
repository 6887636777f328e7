"""Faults and load on the landing folder and the store (issue 14).

* SIGKILL mid-write: an ingest of a 300,000-row drop killed while DuckDB inserts it, after the INSERT with the
  transaction open, and around the commit leaves a store that opens cleanly and holds all of the drop or none of it;
  the re-run gives tables identical to a clean run.
* A 50-file drop (good, duplicate, changed, malformed files and a 1,000,000-row table): good files land, bad ones
  are quarantined with reports, rows stored = rows expected, the ingest's peak memory stays under 3 GB and the
  landing sensor's tick well under Dagster's 60 s (it samples the big file instead of reading it).
* The partitions a sampled drop holds beyond its sample are requested once its ingest run succeeds.
"""
from __future__ import annotations

import time

import dagster as dg
import duckdb
import pandas as pd
import pytest

from tinybench_assets.defs import sensors as sensors_mod
from tinybench_assets.defs.resources import LandingResource
from tinybench_assets.io import landing as landing_mod
from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.store import Store
from tinybench_assets_tests import reliability_data as rd

pytestmark = pytest.mark.timeout(600)

def assert_same_tables(a: dict, b: dict) -> None:
    for t in rd.INGEST_TABLES:
        pd.testing.assert_frame_equal(a[t].reset_index(drop=True), b[t].reset_index(drop=True), obj=t)


def _folders(root):
    return root / "tb.duckdb", root / "incoming", root / "quarantine"


def test_sigkill_mid_ingest_leaves_all_or_nothing_and_a_rerun_matches_a_clean_run(tmp_path):
    db, incoming, quarantine = _folders(tmp_path / "killed")
    rd.write_table(rd.long_table(20, 50, scenario="small", seed=2), incoming / "lb" / "small.csv")
    ingest_landing(Store(db), incoming, quarantine)  # an earlier drop, stored before the kills
    before = rd.snapshot(db)
    big = rd.long_table(300, 1000, scenario="big", seed=1)
    rd.write_table(big, incoming / "lb" / "big.parquet")

    outcomes = []
    for when, delay in (("WRITE", 0.02), ("WRITE", 0.08), ("WRITTEN", 0.0), ("COMMIT", 0.0)):
        res = rd.kill_during_ingest(db, incoming, quarantine, when=when, delay=delay)
        assert res["killed"], res  # killed before it could finish
        after = rd.snapshot(db)  # opens cleanly (read-only), and read-write too:
        duckdb.connect(str(db)).close()
        n_big = int((after["landed_responses"]["scenario"] == "big").sum())
        outcomes.append((when, delay, n_big))
        assert n_big in (0, len(big)), outcomes  # all of the drop or none of it
        if n_big == 0:
            assert_same_tables(after, before)  # nothing of the killed transaction: no drop row, no scenario, no rows
        else:
            break  # the commit won the race: the drop is whole, the rest follows below
    assert outcomes[0][2] == 0 and outcomes[2][2] == 0, outcomes  # killed inside the transaction: nothing stored

    report = ingest_landing(Store(db), incoming, quarantine)  # the re-run completes
    assert report.ingested in (["lb/big.parquet"], []) and not report.quarantined

    cdb, cinc, cq = _folders(tmp_path / "clean")
    rd.write_table(rd.long_table(20, 50, scenario="small", seed=2), cinc / "lb" / "small.csv")
    ingest_landing(Store(cdb), cinc, cq)
    rd.write_table(big, cinc / "lb" / "big.parquet")
    ingest_landing(Store(cdb), cinc, cq)
    assert_same_tables(rd.snapshot(db), rd.snapshot(cdb))  # identical to a clean run, drop order (seq) included
    assert Store(db).consolidate_responses("lb.big") == len(big)


def test_fifty_file_drop_lands_good_files_quarantines_bad_ones_and_loses_no_row(tmp_path, monkeypatch):
    monkeypatch.delenv("TINYBENCH_TRUST_PICKLE_DROPS", raising=False)
    db, incoming, quarantine = _folders(tmp_path)
    marker = tmp_path / "PICKLE_RAN"
    first = rd.write_first_versions(incoming)
    assert ingest_landing(Store(db), incoming, quarantine).ingested == first
    exp = rd.write_fifty_file_drop(incoming, marker=marker)

    # the landing sensor: one tick over the 50 files, well inside Dagster's 60 s, the big table only sampled
    instance = dg.DagsterInstance.ephemeral()
    ctx = dg.build_sensor_context(instance=instance, resources={
        "landing": LandingResource(incoming=str(incoming), quarantine=str(quarantine))})
    t0 = time.perf_counter()
    tick = sensors_mod.landing_sensor(ctx)
    tick_s = time.perf_counter() - t0
    assert tick_s < 20, tick_s
    ingest_req = next(r for r in tick.run_requests if r.job_name == "ingest_landing")
    assert ingest_req.tags[sensors_mod.SAMPLED_TAG] == exp.big
    assert "bench.huge" in {r.partition_key for r in tick.run_requests}  # its sample's partition

    report, rss_gb = rd.ingest_in_child(db, incoming, quarantine)
    assert rss_gb < 3.0, rss_gb
    assert not marker.exists()
    assert sorted(report["ingested"]) == sorted(exp.good), set(report["ingested"]) ^ set(exp.good)
    assert sorted(report["skipped"]) == sorted(exp.duplicates)
    assert set(report["quarantined"]) == set(exp.bad)
    for rel, expected in exp.bad.items():
        err = report["quarantined"][rel]
        assert err.startswith("file ") and rel.split("/")[-1] in err and expected in err, (rel, err)
        moved = quarantine / rel
        assert moved.exists() and expected in moved.with_name(moved.name + ".error.txt").read_text()
        assert not (incoming / rel).exists()

    store = Store(db)
    drops = store.query("SELECT path, n_rows, status FROM drops")
    active = drops[drops.status == "active"].set_index("path")["n_rows"]
    assert active.to_dict() == exp.good  # every good file, with every row it holds
    assert sorted(drops[drops.status == "superseded"]["path"]) == sorted(exp.changed)
    landed = store.query("SELECT count(*) AS n FROM landed_responses")["n"].iloc[0]
    assert landed == sum(n for rel, n in exp.good.items() if rel not in ("bench/s0.items.csv", "bench/s0.full_scores.csv")) - 25
    for key, n in exp.partition_rows.items():  # rows stored = rows expected, after consolidation (latest drop wins)
        assert store.consolidate_responses(key) == n, key
    assert store.n_quarantined() == len(exp.bad)

    # a second tick sees nothing new
    again = sensors_mod.landing_sensor(dg.build_sensor_context(instance=instance, cursor=tick.cursor, resources={
        "landing": LandingResource(incoming=str(incoming), quarantine=str(quarantine))}))
    assert isinstance(again, dg.SkipReason)


def test_partitions_beyond_a_sampled_drops_sample_are_requested_after_its_ingest(tmp_path, monkeypatch):
    db, incoming, quarantine = _folders(tmp_path)
    for var, value in (("TINYBENCH_DUCKDB", db), ("TINYBENCH_INCOMING", incoming), ("TINYBENCH_QUARANTINE", quarantine)):
        monkeypatch.setenv(var, str(value))
    monkeypatch.setattr(sensors_mod, "FULL_READ_MAX_BYTES", 1000)  # every file here counts as big
    monkeypatch.setattr(landing_mod, "SAMPLE_ROWS", 50)
    two = pd.concat([rd.long_table(10, 20, scenario="first"), rd.long_table(10, 20, scenario="second", seed=1)])
    rd.write_table(two, incoming / "lb" / "two.csv")

    instance = dg.DagsterInstance.ephemeral()
    tick = sensors_mod.landing_sensor(dg.build_sensor_context(instance=instance, resources={
        "landing": LandingResource(incoming=str(incoming), quarantine=str(quarantine))}))
    ingest_req = next(r for r in tick.run_requests if r.job_name == "ingest_landing")
    assert {r.partition_key for r in tick.run_requests if r.job_name == "refresh_scenario"} == {"lb.first"}  # the sample's
    assert ingest_req.tags[sensors_mod.REQUESTED_TAG] == "lb.first"

    from tinybench_assets.definitions import build_defs

    result = build_defs().resolve_job_def("ingest_landing").execute_in_process(instance=instance, tags=ingest_req.tags)
    assert result.success
    ctx = dg.build_run_status_sensor_context(sensor_name=sensors_mod.sampled_drop_partitions_sensor.name,
                                             dagster_instance=instance, dagster_run=result.dagster_run,
                                             dagster_event=result.get_run_success_event())
    follow = sensors_mod.sampled_drop_partitions_sensor(ctx)
    assert [(r.partition_key, r.run_key) for r in follow] == [("lb.second", f"lb.second:{result.run_id}")]

    # an ingest run without sampled drops asks for nothing more
    plain = build_defs().resolve_job_def("ingest_landing").execute_in_process(instance=instance)
    ctx = dg.build_run_status_sensor_context(sensor_name=sensors_mod.sampled_drop_partitions_sensor.name,
                                             dagster_instance=instance, dagster_run=plain.dagster_run,
                                             dagster_event=plain.get_run_success_event())
    assert isinstance(sensors_mod.sampled_drop_partitions_sensor(ctx), dg.SkipReason)
