"""Estimation assets materialize on a real slice (160 models of arc + truthfulqa) and store their tables."""

import json

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from tinybench_assets.defs.assets import estimation, irt, responses
from tinybench_assets.io.store import Store
from tinybench_assets_tests.conftest import SHARED, _need_shared
from tinybench_assets_tests.test_defs.test_definitions import resources_for

SMALL = {
    "n_values": [5, 10],
    "clusterings": ["correctness", "irt"],
    "learned": False,
    "dims": [1, 2],
    "joint_dims": [1, 2],
    "min_models": 50,
}


@pytest.fixture()
def estimation_landing(tmp_path):
    _need_shared()
    incoming = tmp_path / "incoming" / "openllm"
    incoming.mkdir(parents=True)
    for sc in ("arc", "truthfulqa"):
        resp = pd.read_parquet(SHARED / "openllm" / f"{sc}.responses.parquet")
        models = sorted(resp["model"].unique())[:160]
        resp[resp["model"].isin(models)].to_parquet(incoming / f"{sc}.responses.parquet", index=False)
        fs = pd.read_parquet(SHARED / "openllm" / f"{sc}.full_scores.parquet")
        fs[fs["model"].isin(models)].to_parquet(incoming / f"{sc}.full_scores.parquet", index=False)
    return {
        "incoming": tmp_path / "incoming",
        "quarantine": tmp_path / "q",
        "db": tmp_path / "tb.duckdb",
        "root": tmp_path,
    }


def land_and_binarize(landing: dict):
    """An ephemeral instance and the resources, with the landing folder ingested and both openllm scenarios binarized."""
    instance = dg.DagsterInstance.ephemeral()
    res = resources_for(landing)
    assert dg.materialize([responses.landing_ingest], instance=instance, resources=res).success
    for key in ("openllm.arc", "openllm.truthfulqa"):
        assert dg.materialize(
            [responses.raw_responses, responses.response_matrix, responses.binarized_responses],
            partition_key=key,
            instance=instance,
            resources=res,
        ).success
    return instance, res


def test_estimation_assets_on_slice(estimation_landing, monkeypatch):
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(estimation_landing["root"] / "artifacts"))
    instance, res = land_and_binarize(estimation_landing)
    cfg = {
        "ops": {
            "irt_joint": {"config": {"dims": [1, 2]}},
            "anchor_sets": {"config": SMALL},
            "model_estimates": {"config": SMALL},
            "estimation_backtest": {"config": {**SMALL, "n_splits": 1}},
            "tiny_benchmark": {"config": {**SMALL, "export_n": 10}},
        }
    }
    result = dg.materialize(
        [irt.irt_joint, *estimation.leaderboard_assets],
        partition_key="openllm",
        instance=instance,
        resources=res,
        run_config=cfg,
    )
    assert result.success
    # the backtest (worker processes, one per core) runs last in a leaderboard run: after every one-process step
    starts = [e.step_key for e in result.all_events if e.event_type_value == "STEP_START"]
    assert starts[-1] == "estimation_backtest" and len(starts) >= 5, starts
    store = Store(estimation_landing["db"])
    anchors = store.query(
        "SELECT scenario, clustering, n, count(*) AS k, sum(weight) AS w FROM anchors GROUP BY ALL ORDER BY ALL"
    )
    assert len(anchors) == 2 * 2 * 2 and (anchors["k"] == anchors["n"]).all() and np.allclose(anchors["w"], 1.0)
    lam = store.query("SELECT * FROM gpirt_lambdas")
    assert lam["lambda_tutorial"].between(0, 1).all() and lam["lambda_validation"].between(0, 1).all()
    # estimates only for test models of the split recorded by irt_joint
    test_models = set(
        store.query("SELECT model FROM model_splits WHERE partition_key = 'openllm' AND split = 'test'")["model"]
    )
    est = store.query("SELECT * FROM estimates WHERE n = 10")
    assert set(est["model"]) == test_models and len(test_models) > 10
    assert {"random", "anchor", "irt", "pirt", "gpirt", "gpirt_val", "irt_joint", "tinybench"} <= set(est["estimator"])
    tb = est[est.estimator == "tinybench"]
    assert ((tb.lower <= tb.estimate) & (tb.estimate <= tb.upper)).all()
    mae = lambda e: (est[est.estimator == e].eval("abs(estimate - truth_t1)")).mean()  # noqa: E731
    assert mae("tinybench") < mae("random")
    summary = store.query("SELECT * FROM backtest_summary")
    static = summary[summary.clustering != "adaptive"]
    assert set(static["n"]) == {5, 10} and summary["coverage_t1"].between(0, 1).all()
    # the adaptive column: tests of 10, 20, 30 items chosen by information, beside the static anchors
    adaptive = summary[summary.estimator == "adaptive"]
    assert set(adaptive["n"]) == {10, 20, 30} and adaptive["mae_t1"].notna().all()
    # both split kinds, family-grouped (the headline) and frontier (the strongest 5 % held out), with bootstrap
    # intervals of every MAE
    assert {"grouped", "frontier"} <= set(summary["split_kind"])  # and each read on its twin-free test models
    assert set(summary["split_kind"]) <= {"grouped", "frontier", "grouped/twin_free", "frontier/twin_free"}
    ok = summary.dropna(subset=["mae_t1_lo"])
    assert len(ok) > 0.9 * len(summary) and ((ok.mae_t1_lo <= ok.mae_t1) & (ok.mae_t1 <= ok.mae_t1_hi)).all()
    # the UI's lambda table lists every scenario x n of the per-scenario fit (correctness anchors)
    lam_md = instance.get_latest_materialization_event(dg.AssetKey("gpirt_lambdas")).asset_materialization.metadata
    lam_rows = [r for r in lam_md["lambdas"].value.splitlines()[2:] if r.strip()]
    assert len(lam_rows) == 2 * 2, lam_md["lambdas"].value
    ev = instance.get_latest_materialization_event(dg.AssetKey("estimation_backtest"))
    md = ev.asset_materialization.metadata
    assert "error_vs_n_arc" in md and "mae_t1_points_at_n10" in md
    assert md["headline_split_kind"].value == "grouped" and md["model_groups"].data["n_groups"] > 10
    assert {"tinybench_t1_mae_mean_n10_grouped", "tinybench_t1_mae_mean_n10_frontier"} <= set(md)
    assert {"frontier_t1_points_at_n10", "frontier_ratio_vs_random_items", "frontier_error_vs_n"} <= set(md)
    # the console summary quotes the same budget as the UI (30 was not run here: the largest, 10)
    from tinybench_assets.io import reports

    lines = reports.render(store, "backtest_summary").splitlines()
    assert lines[0].split()[:5] == ["leaderboard", "split", "scenario", "estimator", "n"] and len(lines) > 1
    kinds = {ln.split()[1] for ln in lines[1:]}  # beside all test models, the twin-free ones (core/estimation/twins)
    assert {ln.split()[4] for ln in lines[1:]} == {"10"} and {"grouped", "frontier"} <= kinds
    assert kinds <= {"grouped", "frontier", "grouped/twin_free", "frontier/twin_free"}
    assert "twin_share" in md and "tinybench_t1_points_at_n10_all_and_twin_free" in md

    # the exported tiny benchmark reproduces the asset's estimates for a held-out model, from its anchor answers only
    from tinybench_assets.core.tiny_benchmark import estimate_from_artifact, load_artifact

    folder = estimation_landing["root"] / "artifacts" / "openllm"
    art = load_artifact(folder)
    anchors = store.query("SELECT scenario, item FROM tiny_benchmark_anchors WHERE leaderboard = 'openllm'")
    assert len(anchors) == 20 and (folder / "predictor.pkl").exists()
    model = sorted(test_models)[0]
    answers = store.query("SELECT item, CAST(y AS DOUBLE) AS y FROM binarized WHERE model = ?", [model])
    answers = {i: y for i, y in zip(answers["item"], answers["y"]) if i in set(anchors["item"])}
    out = estimate_from_artifact(art, answers).set_index("scenario")
    for scenario, row in out.iterrows():
        ref = est[
            (est.model == model)
            & (est.scenario == scenario)
            & (est.estimator == row["estimator"])
            & (est.clustering == art["clustering"])
        ]
        assert len(ref) == 1, (scenario, row["estimator"], art["clustering"])
        assert abs(ref["estimate"].iloc[0] - row["estimate"]) < 1e-6


def test_leaderboards_with_too_few_models_are_skipped(landing):
    """RouterDC's 7 models are too few to cross-validate: the estimation assets materialize with a 'skipped' note."""
    from tinybench_assets_tests.test_defs.test_definitions import materialize_foundation

    instance = dg.DagsterInstance.ephemeral()
    materialize_foundation(landing, instance)
    assets = [
        estimation.anchor_sets,
        estimation.model_estimates,
        estimation.estimation_backtest,
        estimation.tiny_benchmark,
    ]
    assert dg.materialize(assets, partition_key="routerdc", instance=instance, resources=resources_for(landing)).success
    for name in ("anchor_sets", "gpirt_lambdas", "model_estimates", "estimation_backtest", "tiny_benchmark"):
        md = instance.get_latest_materialization_event(dg.AssetKey(name)).asset_materialization.metadata
        assert "fewer than min_small_models=10" in md["skipped"].value, name


def test_a_small_leaderboard_gets_anchors_estimates_a_backtest_and_a_tiny_benchmark(tmp_path, monkeypatch):
    """A 24-model leaderboard (10-49 models: none to hold out) gets every estimation asset from one SmallBoardPredictor
    cross-validated by family; the exported tiny benchmark scores a model as the estimates table says."""
    _need_shared()
    incoming = tmp_path / "incoming" / "openllm"
    incoming.mkdir(parents=True)
    frames = {sc: pd.read_parquet(SHARED / "openllm" / f"{sc}.responses.parquet") for sc in ("arc", "truthfulqa")}
    both = sorted(set(frames["arc"]["model"]) & set(frames["truthfulqa"]["model"]))
    models = both[:: len(both) // 24][:24]
    for sc, resp in frames.items():
        resp[resp["model"].isin(models)].to_parquet(incoming / f"{sc}.responses.parquet", index=False)
        fs = pd.read_parquet(SHARED / "openllm" / f"{sc}.full_scores.parquet")
        fs[fs["model"].isin(models)].to_parquet(incoming / f"{sc}.full_scores.parquet", index=False)
    landing = {"incoming": tmp_path / "incoming", "quarantine": tmp_path / "q", "db": tmp_path / "tb.duckdb"}
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(tmp_path / "artifacts"))
    instance, res = land_and_binarize(landing)
    cfg = {"n_values": [5, 10], "small_n_values": [5, 10]}
    run_config = {
        "ops": {
            "irt_joint": {"config": {"dims": [1]}},
            "anchor_sets": {"config": cfg},
            "model_estimates": {"config": cfg},
            "estimation_backtest": {"config": cfg},
            "tiny_benchmark": {"config": {**cfg, "export_n": 10}},
        }
    }
    assert dg.materialize(
        [irt.irt_joint, *estimation.leaderboard_assets],
        partition_key="openllm",
        instance=instance,
        resources=res,
        run_config=run_config,
    ).success
    store = Store(landing["db"])
    anchors = store.query("SELECT scenario, n, count(*) AS k, sum(weight) AS w FROM anchors GROUP BY ALL ORDER BY ALL")
    assert len(anchors) == 4 and (anchors["k"] == anchors["n"]).all() and np.allclose(anchors["w"], 1.0)
    sel = store.query("SELECT * FROM estimator_selection")
    assert (sel.selector == "small_board_cv").all() and len(sel) == 4
    est = store.query("SELECT * FROM estimates WHERE n = 10")
    assert est["model"].nunique() == 24 and {"anchor", "pirt", "gpirt", "tinybench"} <= set(est["estimator"])
    tb = est[est.estimator == "tinybench"]
    assert ((tb.lower <= tb.estimate) & (tb.estimate <= tb.upper)).all() and tb.truth_t1.notna().all()
    summary = store.query("SELECT * FROM backtest_summary")
    assert set(summary.split_kind) == {"leave_family_out"} and set(summary.scenario) == {"arc", "truthfulqa"}
    served = summary[summary.estimator == "tinybench"]
    assert len(served) == 4 and served.coverage_t1.between(0.5, 1).all() and (served.n_models == 24).all()
    # the baseline beside it: stratified random items at each budget, fewer items a larger error
    rnd = summary[summary.estimator == "random"].set_index(["scenario", "n"]).mae_t1
    assert len(rnd) == 4 and (summary[summary.estimator == "random"].clustering == "random").all()
    assert all(rnd[(s, 5)] > rnd[(s, 10)] > 0 for s in ("arc", "truthfulqa"))
    md = instance.get_latest_materialization_event(dg.AssetKey("anchor_sets")).asset_materialization.metadata
    assert "leave-family-out" in md["small_board"].value
    md = instance.get_latest_materialization_event(dg.AssetKey("estimation_backtest")).asset_materialization.metadata
    assert md["reused_anchor_sets_fit"].value is True  # the same inputs: anchor_sets' fit, not a second one
    assert (
        "error and half-width vs n" in md["error_and_width_vs_n"].value and "widest_half_width" in md["budgets"].value
    )
    # every prepared budget is exported beside the main artifact, from one nested order per scenario
    budgets = json.loads((tmp_path / "artifacts" / "openllm" / "budgets.json").read_text())
    assert [b["n"] for b in budgets["budgets"]] == [5, 10]
    for b in budgets["budgets"]:
        sub = json.loads((tmp_path / "artifacts" / "openllm" / b["folder"] / "tiny_benchmark.json").read_text())
        for s, d in sub["scenarios"].items():
            assert d["anchors"]["items"] == budgets["order"][s][: b["n"]]
    from tinybench_assets.io import reports

    text = reports.render(Store(landing["db"]), "budgets")
    assert "openllm" in text and "half_width90_pts" in text

    from tinybench_assets.core.tiny_benchmark import estimate_from_artifact, load_artifact

    art = load_artifact(tmp_path / "artifacts" / "openllm")
    assert art["n"] == 10 and art["learned_estimators"] == ["bank_joint", "fill"]
    model = sorted(est["model"].unique())[3]
    items = set(store.query("SELECT item FROM tiny_benchmark_anchors WHERE leaderboard = 'openllm'")["item"])
    answers = store.query("SELECT item, CAST(y AS DOUBLE) AS y FROM binarized WHERE model = ?", [model])
    answers = {i: y for i, y in zip(answers["item"], answers["y"]) if i in items}
    out = estimate_from_artifact(art, answers).set_index("scenario")
    for scenario, row in out.iterrows():
        ref = est[(est.model == model) & (est.scenario == scenario) & (est.estimator == row["estimator"])]
        assert len(ref) == 1 and abs(ref["estimate"].iloc[0] - row["estimate"]) < 1e-9, (scenario, row["estimator"])


def test_twin_free_summary_rows_leave_the_twins_out():
    """backtest_summary's ``<kind>/twin_free`` rows are read on the test models without a twin only."""
    from tinybench_assets.defs.estimation_big import TWIN_FREE, summaries

    truth = np.linspace(0.3, 0.7, 6)
    est = truth + 0.01
    est[0] += 0.29  # the twin: 30 points off
    nan = np.full(6, np.nan)
    df = pd.DataFrame(
        {
            "split_kind": "grouped",
            "split": 0,
            "model": [f"m{i}" for i in range(6)],
            "scenario": "arc",
            "clustering": "selected",
            "estimator": "tinybench",
            "n": 30,
            "estimate": est,
            "truth_t1": truth,
            "lower": est - 0.05,
            "upper": est + 0.05,
            "estimate_t2": nan,
            "truth_t2": nan,
            "lower_t2": nan,
            "upper_t2": nan,
            "twin": [True, False, False, False, False, False],
        }
    )
    out = summaries(df).set_index("split_kind")
    assert out.loc["grouped", "n_models"] == 6 and out.loc["grouped" + TWIN_FREE, "n_models"] == 5
    assert out.loc["grouped" + TWIN_FREE, "mae_t1"] == pytest.approx(1.0)
    assert out.loc["grouped", "mae_t1"] == pytest.approx(100 * (0.3 + 5 * 0.01) / 6)
