"""The daily schedule requests only stale partitions."""
import dagster as dg

from tinybench_assets.defs.resources import StoreResource
from tinybench_assets.defs.schedules import stale_refresh_schedule
from tinybench_assets_tests.test_defs.test_definitions import materialize_foundation


def _requests(instance, landing):
    # as a context manager: a schedule context built without one leaves the instance's state storage set for later tests
    with dg.build_schedule_context(instance=instance, resources={"store": StoreResource(database=str(landing["db"]))}) as ctx:
        out = stale_refresh_schedule(ctx)
    return {} if isinstance(out, dg.SkipReason) else {r.partition_key: r.tags["tinybench/stale"] for r in out}


def test_schedule_requests_stale_partitions(landing, monkeypatch, tmp_path):
    # schedules need a persistent instance; its folder lives in tmp_path (kept after the test), because a later
    # test's materialize once reached a stale reference to a deleted instance folder ("unable to open database file")
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        _stale_partitions(instance, landing, monkeypatch)


def _stale_partitions(instance, landing, monkeypatch):
    from tinybench_assets.defs import schedules

    materialize_foundation(landing, instance)
    # the response assets are fresh, but irt_model never ran: every partition is stale
    reqs = _requests(instance, landing)
    assert set(reqs) == {"openllm.arc", "openllm.mmlu", "routerdc.gsm8k", "routerdc.mmlu"}
    assert all("irt_model never materialized" in why for why in reqs.values())
    # restricted to the response assets, nothing is stale
    monkeypatch.setattr(schedules, "scenario_assets", schedules.scenario_assets[:3])
    assert _requests(instance, landing) == {}


def test_new_drop_makes_partition_stale(landing, monkeypatch, tmp_path):
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        _new_drop(instance, landing, monkeypatch)


def _new_drop(instance, landing, monkeypatch):
    import pandas as pd

    from tinybench_assets.defs import schedules
    from tinybench_assets.io.landing import ingest_landing
    from tinybench_assets.io.store import Store

    materialize_foundation(landing, instance)
    monkeypatch.setattr(schedules, "scenario_assets", schedules.scenario_assets[:3])
    pd.DataFrame({"model": ["late"], "scenario": "arc", "item": ["arc.660"], "score": [1]}).to_csv(
        landing["incoming"] / "openllm" / "late.csv", index=False)
    ingest_landing(Store(landing["db"]), landing["incoming"], landing["quarantine"])
    reqs = _requests(instance, landing)
    assert list(reqs) == ["openllm.arc"] and "raw_responses older than its input" in reqs["openllm.arc"]
