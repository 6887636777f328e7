"""Router assets on a small RouterDC slice with train and test questions: tables, figures, the saved router,
the embedding cache, skipped partitions, and a leakage check (test answers never change any choice)."""

import json

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from tinybench_assets.defs.assets import irt, responses, router_eval, routing
from tinybench_assets.defs.resources import EncoderResource
from tinybench_assets.io.store import Store
from tinybench_assets_tests.conftest import SHARED, _need_shared
from tinybench_assets_tests.test_defs.test_definitions import ingested_for_router, resources_for

KEY = "routerdc.mmlu"
ROUTER_CFG = {"n_folds": 3, "n_boot": 300}


@pytest.fixture(scope="module")
def router_store(tmp_path_factory):
    _need_shared()
    root = tmp_path_factory.mktemp("router")
    inc = root / "incoming"
    (inc / "routerdc").mkdir(parents=True)
    (inc / "openllm").mkdir(parents=True)
    train = json.loads((SHARED / "routerdc" / "mmlu_train.json").read_text())[:160]
    test = json.loads((SHARED / "routerdc" / "mmlu_test.json").read_text())[:80]
    (inc / "routerdc" / "mmlu_train.json").write_text(json.dumps(train))
    (inc / "routerdc" / "mmlu_test.json").write_text(json.dumps(test))
    arc = pd.read_parquet(SHARED / "openllm" / "arc.responses.parquet")
    arc[arc["model"].isin(sorted(arc["model"].unique())[:25])].to_parquet(
        inc / "openllm" / "arc.responses.parquet", index=False
    )
    pd.read_parquet(SHARED / "openllm" / "arc.items.parquet").to_parquet(
        inc / "openllm" / "arc.items.parquet", index=False
    )
    landing = {"incoming": inc, "quarantine": root / "q", "db": root / "tb.duckdb", "root": root}
    res, instance, mp = ingested_for_router(landing)
    up = [responses.raw_responses, responses.response_matrix, responses.binarized_responses, irt.irt_model]
    cfg = {"ops": {"irt_model": {"config": {"dims": [1, 2]}}, "router_accuracy": {"config": ROUTER_CFG}}}
    stage = [*routing.scenario_assets, router_eval.router_accuracy]
    results = {}
    for key in ("openllm.arc", KEY):  # a partition without a split first: on a fresh store no router table exists yet
        results[key] = dg.materialize(up + stage, partition_key=key, instance=instance, resources=res, run_config=cfg)
        assert results[key].success
    yield {
        "store": Store(landing["db"]),
        "res": res,
        "instance": instance,
        "root": root,
        "results": results,
        "cfg": cfg,
    }
    mp.undo()


def _md(result, node):
    return result.asset_materializations_for_node(node)[0].metadata


def test_router_tables_and_figures(router_store):
    db, r = router_store["store"], router_store["results"][KEY]
    emb = db.query("SELECT * FROM question_embeddings WHERE partition_key = ?", [KEY])
    assert len(emb) == 240 and (emb["split"] == "test").sum() == 80
    assert _md(r, "question_embeddings")["embedded_now"].value == 240
    knn = db.query("SELECT * FROM knn_item_params WHERE partition_key = ?", [KEY])
    train_items = set(emb.loc[emb["split"] != "test", "item"])
    assert len(knn) == 80 and all(len(n) == 20 and set(n) <= train_items for n in knn["neighbours"])
    assert all(np.all(np.diff(s) <= 1e-6) for s in knn["similarities"])
    # the imputed b is the mean of the neighbours' fitted b (uniform weighting)
    fitted = db.query("SELECT item, b FROM irt_items WHERE partition_key = ?", [KEY]).set_index("item")["b"]
    row = knn.iloc[0]
    assert np.isclose(row["b"], fitted.loc[list(row["neighbours"])].mean())
    p = db.query("SELECT * FROM pirt_predictions WHERE partition_key = ?", [KEY])
    assert len(p) == 80 * 7 and p["p"].between(0, 1).all()
    m = db.query("SELECT * FROM router_metrics WHERE partition_key = ?", [KEY]).iloc[0]
    for c in ("router_acc", "best_single_acc", "oracle_acc", "random_acc", "tutorial_knn_irt_acc"):
        assert 0 <= m[c] <= 1
    assert m.oracle_acc >= max(m.router_acc, m.best_single_acc) and m.delta_lo <= m.delta <= m.delta_hi
    routes = db.query("SELECT * FROM router_routes WHERE partition_key = ?", [KEY])
    assert len(routes) == 80 and np.isclose(routes["correct"].mean(), m.router_acc)
    picks = db.query("SELECT * FROM router_picks WHERE partition_key = ?", [KEY])
    assert np.isclose(picks["pick_share"].sum(), 1.0) and len(picks) == 7
    summary = db.query("SELECT * FROM router_summary WHERE partition_key = ?", [KEY])
    assert summary["served"].sum() == 1 and {"best_single", "knn_vote", "knn_irt", "logistic", "ensemble"} <= set(
        summary["router"]
    )
    md = _md(r, "router_accuracy")
    assert md["router_vs_baselines"].value.startswith("![") and len(md["router_vs_baselines"].value) < 270_000
    assert (router_store["root"] / "artifacts" / "routerdc" / "router_mmlu.npz").exists()
    from tinybench_assets.io import reports

    text = reports.render(db, "router_metrics")  # the console summary's router table
    assert KEY in text and m.served_router in text and str(round(100 * m.router_acc, 2)) in text


def test_partition_without_split_is_skipped(router_store):
    r = router_store["results"]["openllm.arc"]
    for node in ("question_embeddings", "knn_item_params", "pirt_predictions", "router_accuracy"):
        assert "skipped" in _md(r, node)
    assert (
        router_store["store"]
        .query("SELECT count(*) AS n FROM question_embeddings WHERE partition_key = 'openllm.arc'")["n"]
        .iloc[0]
        == 0
    )


def test_second_run_embeds_nothing(router_store):
    r = dg.materialize(
        [routing.question_embeddings],
        partition_key=KEY,
        instance=router_store["instance"],
        resources=router_store["res"],
    )
    md = _md(r, "question_embeddings")
    assert md["embedded_now"].value == 0 and md["from_cache"].value == 240


def test_test_answers_never_change_a_choice(router_store):
    """Flip every test answer in the store: the CV table and the served router must not move; test figures must."""
    db = router_store["store"]
    before_cv = db.query(
        "SELECT family, config, cv_acc, served FROM router_cv WHERE partition_key = ? ORDER BY ALL", [KEY]
    )
    before = db.query("SELECT * FROM router_metrics WHERE partition_key = ?", [KEY]).iloc[0]
    test_items = db.query("SELECT item FROM matrix_items WHERE partition_key = ? AND split = 'test'", [KEY])[
        "item"
    ].tolist()
    db.execute(
        f"UPDATE binarized SET y = 1 - y WHERE partition_key = ? AND item IN ({','.join('?' * len(test_items))})",
        [KEY, *test_items],
    )
    r = dg.materialize(
        [router_eval.router_accuracy],
        partition_key=KEY,
        instance=router_store["instance"],
        resources=router_store["res"],
        run_config={"ops": {"router_accuracy": {"config": ROUTER_CFG}}},
    )
    assert r.success
    after_cv = db.query(
        "SELECT family, config, cv_acc, served FROM router_cv WHERE partition_key = ? ORDER BY ALL", [KEY]
    )
    after = db.query("SELECT * FROM router_metrics WHERE partition_key = ?", [KEY]).iloc[0]
    pd.testing.assert_frame_equal(before_cv, after_cv)
    assert after.served_router == before.served_router and after.router_config == before.router_config
    assert not np.isclose(after.oracle_acc, before.oracle_acc)
    assert np.isclose(after.best_single_acc, 1 - before.best_single_acc)


def test_cost_aware_routing_from_a_wide_table(tmp_path, monkeypatch):
    """A wide drop (one row per question, a score and a cost column per model) gives the accuracy-cost curve."""
    _need_shared()
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(tmp_path / "artifacts"))
    recs = json.loads((SHARED / "routerdc" / "mmlu_train.json").read_text())[:150]
    models = list(recs[0]["scores"])[:4]
    price = {m: float(i + 1) for i, m in enumerate(models)}  # model i costs i+1 per 1,000 characters
    rows = []
    for j, r in enumerate(recs):
        row = {"sample_id": f"q{j}", "question": r["question"], "split": "test" if j >= 100 else "train"}
        for m in models:
            row[m] = float(r["scores"][m] > 0)
            row[f"{m}|total_cost"] = price[m] * len(r["question"]) / 1000
        rows.append(row)
    inc = tmp_path / "incoming" / "costly"
    inc.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(inc / "mmlu.csv", index=False)
    landing = {
        "incoming": tmp_path / "incoming",
        "quarantine": tmp_path / "q",
        "db": tmp_path / "tb.duckdb",
        "root": tmp_path,
    }
    res = {**resources_for(landing), "encoder": EncoderResource(device="cpu", num_threads=1)}
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize([responses.landing_ingest], instance=instance, resources=res).success
    cfg = {
        "ops": {"irt_model": {"config": {"dims": [1]}}, "router_accuracy": {"config": {"n_folds": 3, "n_boot": 200}}}
    }
    r = dg.materialize(
        [
            responses.raw_responses,
            responses.response_matrix,
            responses.binarized_responses,
            irt.irt_model,
            *routing.scenario_assets,
            router_eval.router_accuracy,
        ],
        partition_key="costly.mmlu",
        instance=instance,
        resources=res,
        run_config=cfg,
    )
    assert r.success
    curve = Store(landing["db"]).query(
        "SELECT * FROM router_cost_curve WHERE partition_key = 'costly.mmlu' ORDER BY cost"
    )
    assert len(curve) > 5 and curve["accuracy"].between(0, 1).all()
    # lambda = 0 routes on accuracy alone; a huge lambda sends everything to the cheapest model
    costs = Store(landing["db"]).costs("costly.mmlu")
    cheapest = costs[costs["item"].isin([f"q{j}" for j in range(100, 150)])].groupby("model")["cost"].mean().min()
    assert np.isclose(curve["cost"].min(), cheapest)
    md = _md(r, "router_accuracy")
    assert 0 < md["cost_auc"].value <= 1 and md["cost_curve"].value.startswith("![")
    # the cost-quality report: AIQ of the router and of the zero router, the served point chosen on training questions
    cq = Store(landing["db"]).query("SELECT * FROM router_cost_quality WHERE partition_key = 'costly.mmlu'").iloc[0]
    assert cq.objective == "quality_at_min_cost" and md["objective"].value == "quality_at_min_cost"
    assert 0 < cq.aiq_zero <= 1 and 0 < cq.aiq_router <= 1 and cq.aiq_delta_lo <= cq.aiq_delta <= cq.aiq_delta_hi
    assert cq.served_acc_lo <= cq.served_acc <= cq.served_acc_hi and cq.cost_ratio > 0
    assert (
        cq.cv_acc
        >= Store(landing["db"])
        .query("SELECT max(train_acc) AS a FROM router_picks WHERE partition_key = 'costly.mmlu'")["a"]
        .iloc[0]
        - 0.01
        - 1e-9
    )
    assert "AIQ" not in md["aiq"].value and "zero router" in md["aiq"].value
    # the router file serves the chosen policy (best single model, a lambda or a cascade) with every policy's CV figures
    from tinybench_assets.core.routing.saved import load_router

    _, meta = load_router(md["router_file"].value)
    assert cq.policy in ("single", "lambda", "cascade") and meta["cost"]["policy"] == cq.policy
    assert {"single", "lambda", "cascade"} == set(meta["cost"]["points"]["policy"])
