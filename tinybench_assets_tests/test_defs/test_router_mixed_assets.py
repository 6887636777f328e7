"""Routing where it pays, on real slices: RouteLLM's two-model file as a user drops it (no split, no costs) with a
prices file, and RouterDC's three tasks as mixed traffic through the leaderboard router and ``tinybench route``
without --scenario."""

import json
import os
import subprocess
import sys

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from tinybench_assets.defs.assets import irt, responses, router_board, router_eval, routing
from tinybench_assets.defs.assets.prices import model_prices
from tinybench_assets.io.store import Store
from tinybench_assets_tests.conftest import SHARED, _need_shared
from tinybench_assets_tests.test_defs.test_definitions import ingested_for_router

pytestmark = pytest.mark.timeout(300)  # a minute and a half of materializations: scheduled among the long modules
ROUTER_CFG = {"n_folds": 3, "n_boot": 200}
STRONG, WEAK = "gpt-4-1106-preview", "mistralai/Mixtral-8x7B-Instruct-v0.1"
ROUTERDC = {
    "mmlu": ("mmlu_train.json", "mmlu_test.json"),
    "arc_challenge": ("arc_challenge_train.json", "arc_challenge_test.json"),
    "gsm8k": ("gsm8k-train.json", "gsm8k-test.json"),
}


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory):
    _need_shared()
    root = tmp_path_factory.mktemp("mixed")
    inc = root / "incoming"
    (inc / "routellm").mkdir(parents=True)
    (inc / "routerdc").mkdir(parents=True)
    pd.read_csv(SHARED / "routellm" / "mmlu.csv").head(500).to_csv(inc / "routellm" / "mmlu.csv", index=False)
    (inc / "routellm" / "prices.csv").write_text(f"model,cost_per_question\n{STRONG},1\n{WEAK},0\n")
    for _name, (tr, te) in ROUTERDC.items():
        for f, n in ((tr, 90), (te, 40)):
            (inc / "routerdc" / f).write_text(json.dumps(json.loads((SHARED / "routerdc" / f).read_text())[:n]))
    landing = {"incoming": inc, "quarantine": root / "q", "db": root / "tb.duckdb", "root": root}
    res, instance, mp = ingested_for_router(landing)
    up = [
        responses.raw_responses,
        responses.response_matrix,
        responses.binarized_responses,
        model_prices,
        irt.irt_model,
    ]
    cfg = {"ops": {"irt_model": {"config": {"dims": [1]}}, "router_accuracy": {"config": ROUTER_CFG}}}
    stage = [*routing.scenario_assets, router_eval.router_accuracy]
    results = {}
    for key in ["routellm.mmlu", *(f"routerdc.{t}" for t in ROUTERDC)]:
        results[key] = dg.materialize(up + stage, partition_key=key, instance=instance, resources=res, run_config=cfg)
        assert results[key].success, key
    board_cfg = {
        "ops": {
            "leaderboard_router": {
                "config": {**ROUTER_CFG, "families": ["best_single", "task_prior", "knn_task", "logistic"]}
            }
        }
    }
    results["routerdc"] = dg.materialize(
        [router_board.leaderboard_router],
        partition_key="routerdc",
        instance=instance,
        resources=res,
        run_config=board_cfg,
    )
    assert results["routerdc"].success
    yield {"store": Store(landing["db"]), "root": root, "results": results, "res": res, "instance": instance}
    mp.undo()


def _md(result, node):
    return result.asset_materializations_for_node(node)[0].metadata


def test_routellm_lands_splits_itself_and_reports_routellm_measures_with_prices(mixed_store):
    db, r = mixed_store["store"], mixed_store["results"]["routellm.mmlu"]
    emb = db.query("SELECT item, split FROM question_embeddings WHERE partition_key = 'routellm.mmlu'")
    assert len(emb) == 500 and 90 <= (emb["split"] == "test").sum() <= 110  # tinybench's own 20 % split
    assert "tinybench's own" in _md(r, "question_embeddings")["split"].value
    assert "no IRT fit" in _md(r, "knn_item_params")["skipped"].value  # irt_model: two models are too few
    sat = _md(r, "router_accuracy")["families_sat_out"].value
    assert {"knn_irt", "knn_irt_cal"} <= set(sat) and "three" not in sat["knn_irt"] and "3" in sat["knn_irt"]
    summary = db.query("SELECT router FROM router_summary WHERE partition_key = 'routellm.mmlu'")
    assert {"knn_vote", "logistic", "task_prior"} <= set(summary["router"])  # subjects are the tasks
    gap = db.query("SELECT * FROM router_gap WHERE partition_key = 'routellm.mmlu'").iloc[0]
    assert gap.strong_model == STRONG and gap.weak_model == WEAK
    assert gap.apgr_lo <= gap.apgr <= gap.apgr_hi  # PGR may pass 1 (a router can beat the strong model)
    for name in ("cpt50", "cpt80"):
        assert 0 <= gap[f"{name}_lo"] <= gap[name] <= gap[f"{name}_hi"] <= 1
    assert gap.cpt50 <= gap.cpt80 and int(gap.n_test) == int((emb["split"] == "test").sum())
    md = _md(r, "router_accuracy")
    assert md["gap_recovered"].value.startswith("![") and "random router" in md["routellm_apgr"].value
    # prices: the strong model costs 1, the weak 0, so a question's cost is whether it went to the strong model
    cq = db.query("SELECT * FROM router_cost_quality WHERE partition_key = 'routellm.mmlu'").iloc[0]
    assert cq.best_single_model == STRONG and cq.best_single_cost == pytest.approx(1.0)
    assert 0 <= cq.served_cost <= 1 and np.isfinite(cq.aiq_router) and "cost_curve" in md


def test_leaderboard_router_routes_mixed_traffic_without_the_label(mixed_store):
    db, r = mixed_store["store"], mixed_store["results"]["routerdc"]
    m = db.query("SELECT * FROM board_router_metrics WHERE partition_key = 'routerdc'")
    assert list(m["scenario"]) == [*sorted(ROUTERDC), "macro"]
    assert (m["n"].iloc[:3] == 40).all() and m["n"].iloc[3] == 120
    for c in ("router", "best_overall", "per_task_best"):
        assert (m[c] <= m["oracle"] + 1e-12).all()
    macro = m.iloc[3]
    assert macro.router == pytest.approx(m["router"].iloc[:3].mean())
    md = _md(r, "leaderboard_router")
    assert md["scenarios"].value == sorted(ROUTERDC) and md["train_questions"].value == 270
    assert (mixed_store["root"] / "artifacts" / "routerdc" / "router.npz").exists()
    cv = db.query("SELECT family FROM board_router_cv WHERE partition_key = 'routerdc'")
    assert {"task_prior", "knn_task"} <= set(cv["family"])


def test_one_scenario_board_gets_no_leaderboard_router(mixed_store):
    res = dg.materialize(
        [router_board.leaderboard_router],
        partition_key="routellm",
        resources=mixed_store["res"],
        instance=mixed_store["instance"],
    )
    assert "1 routable scenario" in _md(res, "leaderboard_router")["skipped"].value


def test_route_without_scenario_uses_the_leaderboard_router_and_flags_strangers(mixed_store):
    from tinybench_assets.core.routing.saved import load_router

    root = mixed_store["root"]
    known = json.loads((SHARED / "routerdc" / "gsm8k-test.json").read_text())[0]["question"]
    stranger = "Bonjour, comment allez-vous aujourd'hui ?"  # no math, science or exam question
    env = {**os.environ, "TINYBENCH_ARTIFACTS": str(root / "artifacts"), "HF_HUB_OFFLINE": "1"}
    route = [sys.executable, "-m", "tinybench_assets.cli", "route", "--threads", "1", "--leaderboard"]
    out = subprocess.run(
        [*route, "routerdc", "--json", known, stranger], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["out_of_distribution"] for r in rows] == [False, True]
    _, meta = load_router(root / "artifacts" / "routerdc" / "router.npz")
    assert meta["surface"]["n_features"] == 1024  # trained on embedding | surface features: route joins them too
    best = meta["models"][int(np.argmax(meta["prior"]))]
    assert rows[1]["chosen_model"] == best  # a stranger goes to the model the router trusts most overall
    text = subprocess.run([*route, "routerdc", stranger], capture_output=True, text=True, env=env, timeout=300)
    assert text.returncode == 0 and "OUT OF DISTRIBUTION" in text.stdout
    missing = subprocess.run([*route, "routellm", known], capture_output=True, text=True, env=env, timeout=300)
    assert missing.returncode == 2 and "leaderboard_router for leaderboard routellm" in missing.stderr


def test_leaderboard_router_never_reads_test_answers(mixed_store, monkeypatch):
    """Every test question's answers flipped: the cross-validation table, the served router and its picks on the test
    questions do not move (only the test figures do)."""
    db = mixed_store["store"]
    cv0 = db.query(
        "SELECT family, config, cv_acc, served FROM board_router_cv WHERE partition_key = 'routerdc' "
        "ORDER BY family, config"
    )
    m0 = db.query("SELECT * FROM board_router_metrics WHERE partition_key = 'routerdc'")
    from tinybench_assets.core.routing.saved import load_router

    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(mixed_store["root"] / "artifacts"))  # where the fixture wrote it
    saved = mixed_store["root"] / "artifacts" / "routerdc" / "router.npz"
    _, meta0 = load_router(saved)
    mtime = saved.stat().st_mtime_ns
    real = router_board.board_routing_data
    seen = {}

    def flipped(store, board):
        E, Y, models, task, test, *rest = real(store, board)
        Y = Y.copy()
        Y[test] = np.where(np.isnan(Y[test]), np.nan, 1 - Y[test])
        seen["Y"], seen["test"] = Y, test
        return (E, Y, models, task, test, *rest)

    monkeypatch.setattr(router_board, "board_routing_data", flipped)
    board_cfg = {
        "ops": {
            "leaderboard_router": {
                "config": {**ROUTER_CFG, "families": ["best_single", "task_prior", "knn_task", "logistic"]}
            }
        }
    }
    res = dg.materialize(
        [router_board.leaderboard_router],
        partition_key="routerdc",
        instance=mixed_store["instance"],
        resources=mixed_store["res"],
        run_config=board_cfg,
    )
    assert res.success and seen["test"].any()
    cv1 = db.query(
        "SELECT family, config, cv_acc, served FROM board_router_cv WHERE partition_key = 'routerdc' "
        "ORDER BY family, config"
    )
    pd.testing.assert_frame_equal(cv0, cv1)
    m1 = db.query("SELECT * FROM board_router_metrics WHERE partition_key = 'routerdc'")
    assert list(m1["served_router"]) == list(m0["served_router"])
    assert list(m1["router_config"]) == list(m0["router_config"])
    assert saved.stat().st_mtime_ns != mtime  # rewritten by this materialization
    _, meta1 = load_router(saved)  # the served file's prior (ties, the margin's default, strangers) too
    np.testing.assert_array_equal(meta1["prior"], meta0["prior"])
    # the figures on the flipped test answers are the complements of the real ones: the same picks
    np.testing.assert_allclose(m1["router"].iloc[:3], 1 - m0["router"].iloc[:3], atol=1e-12)
