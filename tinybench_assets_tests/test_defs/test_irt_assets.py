"""IRT assets materialize on a small real slice and store what later assets read."""

import dagster as dg
import numpy as np

from tinybench_assets.defs.assets import irt as irt_assets
from tinybench_assets.io.store import Store
from tinybench_assets_tests.test_defs.test_definitions import materialize_foundation, resources_for

FAST = {
    "ops": {
        "irt_model": {"config": {"dims": [1, 2], "test_fraction": 0.25}},
        "irt_joint": {"config": {"dims": [1, 2], "test_fraction": 0.25}},
    }
}


def test_irt_assets_on_slice(landing):
    instance = dg.DagsterInstance.ephemeral()
    materialize_foundation(landing, instance)
    res = resources_for(landing)
    for key in ("openllm.arc", "routerdc.mmlu"):
        cfg = {"ops": {"irt_model": FAST["ops"]["irt_model"]}}
        assert dg.materialize(
            [irt_assets.irt_model], partition_key=key, instance=instance, resources=res, run_config=cfg
        ).success
    cfg = {"ops": {"irt_joint": FAST["ops"]["irt_joint"]}}
    assert dg.materialize(
        [irt_assets.irt_joint], partition_key="openllm", instance=instance, resources=res, run_config=cfg
    ).success
    store = Store(landing["db"])
    fits = store.query("SELECT * FROM irt_fits ORDER BY partition_key").set_index("partition_key")
    assert list(fits.index) == ["openllm", "openllm.arc", "routerdc.mmlu"]
    assert fits.loc["openllm", "scope"] == "joint" and fits.loc["openllm", "n_items"] == 202
    assert fits.loc["openllm.arc", "dim"] in (1, 2)
    # RouterDC: 7 models, too few to hold models out; every model trains
    assert fits.loc["routerdc.mmlu", "n_models"] == 7 and fits.loc["routerdc.mmlu", "n_heldout_models"] == 0
    # the split is recorded and agrees across scenarios of a leaderboard
    splits = store.query("SELECT partition_key, model, split FROM model_splits WHERE partition_key LIKE 'openllm%'")
    per_model = splits.groupby("model")["split"].nunique()
    assert (per_model == 1).all() and set(splits["split"]) == {"train", "test"}
    # held-out log-loss beats a constant predictor's on test models
    assert fits.loc["openllm.arc", "heldout_logloss"] < 0.69
    items = store.query("SELECT a, b FROM irt_items WHERE partition_key = 'openllm.arc'")
    a = np.stack(items["a"].to_numpy())
    assert a.shape == (100, fits.loc["openllm.arc", "dim"]) and np.isfinite(items["b"]).all()
    dims = store.query("SELECT dim, chosen FROM irt_dims WHERE partition_key = 'openllm.arc' ORDER BY dim")
    assert dims["dim"].tolist() == [1, 2] and dims["chosen"].sum() == 1
    split_md = instance.get_latest_materialization_event(dg.AssetKey("model_split")).asset_materialization.metadata
    board = splits[splits.partition_key == "openllm"]
    assert (
        split_md["models"].value == len(board) and split_md["test_models"].value == (board["split"] == "test").sum() > 0
    )
    assert split_md["train_models"].value + split_md["test_models"].value == len(board)
    ev = instance.get_latest_materialization_event(dg.AssetKey("irt_model"))
    md = ev.asset_materialization.metadata
    assert {
        "dim",
        "validation_error_by_dim",
        "heldout_logloss",
        "fit_seconds",
        "device",
        "difficulty_vs_discrimination",
    } <= set(md)
