"""Router checks (issue 10) on a small RouterDC slice (80 train + 40 test mmlu questions, 7 models): they run inside
the materialization and pass, FAIL on a broken copy of the store, and pass on a partition the assets skipped."""

import json
from types import SimpleNamespace

import dagster as dg
import pytest

from tinybench_assets.defs.assets import irt, responses, router_eval, routing
from tinybench_assets.defs.checks import checks as all_checks
from tinybench_assets.io.store import Store
from tinybench_assets_tests.conftest import SHARED, _need_shared
from tinybench_assets_tests.test_defs.test_checks import broken, failed, run_check
from tinybench_assets_tests.test_defs.test_definitions import ingested_for_router

KEY, SKIPPED = "routerdc.mmlu", "routerdc.gsm8k"
ROUTER_CHECKS = ("knn_params_cover_test_questions", "router_matches_best_single")


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    _need_shared()
    root = tmp_path_factory.mktemp("router_checks")
    inc = root / "incoming" / "routerdc"
    inc.mkdir(parents=True)
    for name, n in (("mmlu_train.json", 80), ("mmlu_test.json", 40), ("gsm8k-train.json", 30)):
        (inc / name).write_text(json.dumps(json.loads((SHARED / "routerdc" / name).read_text())[:n]))
    landing = {"incoming": root / "incoming", "quarantine": root / "q", "db": root / "tb.duckdb", "root": root}
    res, instance, mp = ingested_for_router(landing)
    stage = [
        responses.raw_responses,
        responses.response_matrix,
        responses.binarized_responses,
        irt.irt_model,
        *routing.scenario_assets,
        router_eval.router_accuracy,
    ]
    cfg = {
        "ops": {
            "irt_model": {"config": {"dims": [1]}},
            "router_accuracy": {
                "config": {"n_folds": 3, "n_boot": 200, "families": ["best_single", "knn_vote", "logistic"]}
            },
        }
    }
    evals = {}
    for key in (KEY, SKIPPED):
        assets = stage if key == KEY else [a for a in stage if a is not irt.irt_model]
        r = dg.materialize(
            [*assets, *all_checks],
            selection=dg.AssetSelection.assets(*assets).without_checks() | dg.AssetSelection.checks_for_assets(*assets),
            partition_key=key,
            instance=instance,
            resources=res,
            run_config=cfg if key == KEY else {"ops": {"router_accuracy": cfg["ops"]["router_accuracy"]}},
        )
        assert r.success
        evals[key] = {e.check_name: e for e in r.get_asset_check_evaluations()}
    yield SimpleNamespace(instance=instance, res=res, db=Store(landing["db"]), root=root, evals=evals)
    mp.undo()


def test_router_checks_ran_in_the_materialization_and_passed(routed):
    ev = routed.evals[KEY]
    assert set(ROUTER_CHECKS) <= set(ev) and not failed(ev), failed(ev)
    assert ev["knn_params_cover_test_questions"].metadata["test_questions"].value == 40
    assert ev["knn_params_cover_test_questions"].metadata["missing"].value == 0
    served = ev["router_matches_best_single"].metadata
    assert served["served_cv_acc"].value >= served["best_single_cv_acc"].value


def test_router_checks_pass_on_a_skipped_partition(routed):
    ev = routed.evals[SKIPPED]
    for name in ROUTER_CHECKS:
        assert ev[name].passed and "skipped" in ev[name].metadata, name


def test_knn_check_fails_on_a_missing_or_malformed_test_question(routed, tmp_path):
    first = f"(SELECT min(item) FROM knn_item_params WHERE partition_key = '{KEY}')"
    ev = run_check(
        routed,
        "knn_params_cover_test_questions",
        KEY,
        broken(routed, tmp_path, f"DELETE FROM knn_item_params WHERE partition_key = '{KEY}' AND item = {first}"),
    )
    assert not ev.passed and ev.blocking and ev.metadata["missing"].value == 1
    ev = run_check(
        routed,
        "knn_params_cover_test_questions",
        KEY,
        broken(
            routed,
            tmp_path,
            f"UPDATE knn_item_params SET a = [1.0, 2.0, 3.0] WHERE partition_key = '{KEY}' AND item = {first}",
        ),
    )
    assert not ev.passed and ev.metadata["wrong_dimension"].value == 1


def test_router_check_fails_when_the_served_router_loses_to_the_best_single_model(routed, tmp_path):
    path = broken(
        routed,
        tmp_path,
        f"UPDATE router_cv SET served = (family = 'knn_vote' AND chosen_in_family) WHERE partition_key = '{KEY}'",
        f"UPDATE router_cv SET cv_acc = 0.0 WHERE partition_key = '{KEY}' AND family = 'knn_vote'",
    )
    ev = run_check(routed, "router_matches_best_single", KEY, path)
    assert not ev.passed and ev.severity == dg.AssetCheckSeverity.ERROR
    assert ev.metadata["served_family"].value == "knn_vote" and ev.metadata["cv_gain_points"].value < 0
