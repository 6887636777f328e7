"""Faults and load on the landing folder and the store (issue 14).

* SIGKILL mid-write: an ingest of a 300,000-row drop killed while DuckDB inserts it, after the INSERT with the
  transaction open, and around the commit leaves a store that opens cleanly and holds all of the drop or none of it;
  the re-run gives tables identical to a clean run.
* A 50-file drop (good, duplicate, changed, malformed files and a 1,000,000-row table): good files land, bad ones
  are quarantined with reports, rows stored = rows expected, the ingest's peak memory stays under 3 GB and the
  refresh sensor's tick well under Dagster's 60 s (it hashes the files; it parses none).
* The partitions of a drop are requested once its ingest run has found them, every one of them.
"""

from __future__ import annotations

import time

import dagster as dg
import duckdb
import pandas as pd
import pytest

from tinybench_assets.defs import sensors as sensors_mod
from tinybench_assets.defs.resources import LandingResource
from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.store import Store
from tinybench_assets.testing import reliability_data as rd

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

    # the refresh sensor: one tick over the 50 files, well inside Dagster's 60 s: one ingest run for the new files
    instance = dg.DagsterInstance.ephemeral()
    t0 = time.perf_counter()
    tick = _tick(instance, db, incoming, quarantine)
    tick_s = time.perf_counter() - t0
    assert tick_s < 20, tick_s
    assert [r.job_name for r in tick] == ["ingest_landing"] and "new or changed file(s)" in tick[0].tags[
        "tinybench/reason"
    ]

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
    assert (
        landed
        == sum(n for rel, n in exp.good.items() if rel not in ("bench/s0.items.csv", "bench/s0.full_scores.csv")) - 25
    )
    for key, n in exp.partition_rows.items():  # rows stored = rows expected, after consolidation (latest drop wins)
        assert store.consolidate_responses(key) == n, key
    assert store.n_quarantined() == len(exp.bad)

    # a second tick: nothing left to ingest; the partitions the ingest found are next
    again = _tick(instance, db, incoming, quarantine)
    assert "ingest_landing" not in {r.job_name for r in again} and "bench.huge" in {r.partition_key for r in again}


def _tick(instance, db, incoming, quarantine) -> list:
    from tinybench_assets.definitions import build_defs
    from tinybench_assets.defs.resources import StoreResource

    with dg.build_sensor_context(
        instance=instance,
        repository_def=build_defs().get_repository_def(),
        resources={
            "landing": LandingResource(incoming=str(incoming), quarantine=str(quarantine)),
            "store": StoreResource(database=str(db)),
        },
    ) as ctx:
        out = sensors_mod.refresh_sensor(ctx)
    return [] if isinstance(out, dg.SkipReason) else out


def test_every_partition_of_a_drop_is_requested_once_its_ingest_found_it(tmp_path, monkeypatch):
    db, incoming, quarantine = _folders(tmp_path)
    for var, value in (
        ("TINYBENCH_DUCKDB", db),
        ("TINYBENCH_INCOMING", incoming),
        ("TINYBENCH_QUARANTINE", quarantine),
    ):
        monkeypatch.setenv(var, str(value))
    two = pd.concat([rd.long_table(10, 20, scenario="first"), rd.long_table(10, 20, scenario="second", seed=1)])
    rd.write_table(two, incoming / "lb" / "two.csv")

    instance = dg.DagsterInstance.ephemeral()
    tick = _tick(instance, db, incoming, quarantine)
    assert [(r.job_name, r.partition_key) for r in tick] == [("ingest_landing", None)]  # nothing decided before it

    from tinybench_assets.definitions import build_defs

    assert (
        build_defs().resolve_job_def("ingest_landing").execute_in_process(instance=instance, tags=tick[0].tags).success
    )
    after = _tick(instance, db, incoming, quarantine)
    assert sorted((r.job_name, r.partition_key) for r in after) == [
        ("refresh_scenario", "lb.first"),
        ("refresh_scenario", "lb.second"),
    ]
