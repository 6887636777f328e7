"""The Definitions object loads, and the foundation assets materialize on a small real slice."""

import dagster as dg
import numpy as np

from tinybench_assets.definitions import defs
from tinybench_assets.defs.assets import responses as resp_assets
from tinybench_assets.defs.resources import EncoderResource, LandingResource, ModelStore, StoreResource, TorchDevice
from tinybench_assets.io.store import Store


def test_definitions_load():
    repo = defs.get_repository_def()
    keys = {k.to_user_string() for k in repo.assets_defs_by_key}
    assert {"landing_ingest", "raw_responses", "response_matrix", "binarized_responses"} <= keys
    assert {"ingest_landing", "refresh_scenario"} <= {j.name for j in repo.get_all_jobs()}
    # on by default: `tinybench ui` refreshes when data arrives without a click
    for name in ("refresh_sensor", "orphaned_runs_sensor"):
        assert repo.get_sensor_def(name).default_status == dg.DefaultSensorStatus.RUNNING
    for job in ("ingest_landing", "refresh_scenario", "refresh_leaderboard"):
        schedule = repo.get_schedule_def(f"stale_{job}_schedule")
        assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING and schedule.job_name == job
    assert dg.Definitions.validate_loadable(defs) is None


def test_lineage_says_what_flows():
    """The estimation assets hang off model_split (the split irt_joint records), not off the joint fit they never read."""
    graph = defs.resolve_asset_graph()
    parents = lambda name: {k.to_user_string() for k in graph.get(dg.AssetKey(name)).parent_keys}  # noqa: E731
    assert parents("model_split") == parents("irt_joint") == {"binarized_responses"}
    assert parents("anchor_sets") == {"model_split", "binarized_responses"}
    assert parents("model_estimates") == {"gpirt_lambdas", "model_split", "binarized_responses"}
    assert parents("tiny_benchmark") == {"gpirt_lambdas", "model_split", "binarized_responses"}
    assert parents("estimation_backtest") == {"binarized_responses"}  # its own seeded splits
    assert not any(
        "irt_joint" in parents(a) for a in ("anchor_sets", "gpirt_lambdas", "model_estimates", "tiny_benchmark")
    )
    irt_joint_op = defs.get_assets_def(dg.AssetKey("irt_joint"))
    assert irt_joint_op.keys == {dg.AssetKey("irt_joint"), dg.AssetKey("model_split")} and not irt_joint_op.can_subset


def test_torch_device_resource():
    assert TorchDevice(device="cpu").resolve() == "cpu"
    assert TorchDevice(device="auto").resolve() in ("cpu", "cuda")


def resources_for(landing):
    return {
        "store": StoreResource(database=str(landing["db"])),
        "landing": LandingResource(incoming=str(landing["incoming"]), quarantine=str(landing["quarantine"])),
        "torch_device": TorchDevice(device="cpu", num_threads=1),
        "model_store": ModelStore(),  # root "": TINYBENCH_ARTIFACTS when a model is saved or loaded
    }


def ingested_for_router(landing):
    """(resources with a one-thread encoder, an ephemeral instance, a MonkeyPatch setting TINYBENCH_ARTIFACTS under
    landing["root"] that the caller undoes) after ingesting the landing folder: the router tests' common start."""
    import pytest

    res = {**resources_for(landing), "encoder": EncoderResource(device="cpu", num_threads=1)}
    instance = dg.DagsterInstance.ephemeral()
    mp = pytest.MonkeyPatch()
    mp.setenv("TINYBENCH_ARTIFACTS", str(landing["root"] / "artifacts"))
    assert dg.materialize([resp_assets.landing_ingest], instance=instance, resources=res).success
    return res, instance, mp


def materialize_foundation(landing, instance):
    res = resources_for(landing)
    assert dg.materialize([resp_assets.landing_ingest], instance=instance, resources=res).success
    keys = instance.get_dynamic_partitions("scenarios")
    for key in keys:
        result = dg.materialize(
            [resp_assets.raw_responses, resp_assets.response_matrix, resp_assets.binarized_responses],
            partition_key=key,
            instance=instance,
            resources=res,
        )
        assert result.success
    return keys


def test_materialize_foundation_on_slice(landing):
    instance = dg.DagsterInstance.ephemeral()
    keys = materialize_foundation(landing, instance)
    assert sorted(keys) == ["openllm.arc", "openllm.mmlu", "routerdc.gsm8k", "routerdc.mmlu"]
    assert sorted(instance.get_dynamic_partitions("leaderboards")) == ["openllm", "routerdc"]
    store = Store(landing["db"])
    items = store.query(
        "SELECT partition_key, count(*) AS n, avg(balance_weight) AS w FROM matrix_items GROUP BY 1 ORDER BY 1"
    )
    assert items["n"].tolist() == [100, 102, 60, 60]
    assert np.allclose(items["w"], 1.0)
    models = store.query("SELECT partition_key, count(*) AS n FROM matrix_models GROUP BY 1 ORDER BY 1")["n"].tolist()
    assert models == [40, 40, 7, 7]
    b = store.query("SELECT partition_key, rule, threshold FROM binarization ORDER BY 1")
    assert b["rule"].tolist() == ["identity", "identity", "tutorial_threshold", "positive"]
    # RouterDC multiple choice: correct iff score > 0
    n_pos = store.query("SELECT count(*) AS n FROM responses WHERE partition_key = 'routerdc.mmlu' AND score > 0")[
        "n"
    ].iloc[0]
    n_one = store.query("SELECT sum(y) AS n FROM binarized WHERE partition_key = 'routerdc.mmlu'")["n"].iloc[0]
    assert n_pos == n_one
    ev = instance.get_latest_materialization_event(dg.AssetKey("binarized_responses"))
    assert {"models", "items", "threshold", "mean_accuracy_binarized"} <= set(ev.asset_materialization.metadata)


def test_landing_ingest_metadata_carries_each_drops_notes(tmp_path):
    """What a drop's reader repaired or ignored (here: pandas' unnamed index column) is in landing_ingest's metadata,
    where the UI shows it, as well as in the run's log."""
    import pandas as pd

    rng = np.random.default_rng(0)
    inc = tmp_path / "incoming"
    (inc / "lb").mkdir(parents=True)
    pd.DataFrame(
        {
            "sample_id": [f"q{i}" for i in range(12)],
            "prompt": [f"question {i}" for i in range(12)],
            **{f"org/model-{k}": rng.integers(0, 2, 12).astype(float) for k in range(4)},
        }
    ).to_csv(inc / "lb" / "quiz.csv")
    landing = {"incoming": inc, "quarantine": tmp_path / "q", "db": tmp_path / "tb.duckdb"}
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize([resp_assets.landing_ingest], instance=instance, resources=resources_for(landing)).success
    md = instance.get_latest_materialization_event(dg.AssetKey("landing_ingest")).asset_materialization.metadata
    notes = md["notes"].value
    assert list(notes) == ["lb/quiz.csv"] and any("unnamed index column" in n for n in notes["lb/quiz.csv"]), notes
