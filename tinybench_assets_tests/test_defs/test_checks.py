"""Asset checks (issue 10): each passes on a store built by the real assets and FAILS on deliberately broken data.

One module store: 40 openllm models (arc + mmlu) through responses, IRT, estimation and MAGI, materialized WITH
their checks (so checks are proven to run inside a materialization, and to pass on real data). Failure cases
run a check on a copy of that store with one bad row written into it.
"""

import shutil
from types import SimpleNamespace

import dagster as dg
import pytest

from tinybench_assets.defs.assets import estimation, irt, responses, subsets
from tinybench_assets.defs.checks import checks as all_checks
from tinybench_assets.defs.resources import StoreResource
from tinybench_assets.io.store import Store
from tinybench_assets_tests.test_defs.test_definitions import resources_for

BOARD, ARC, MMLU = "openllm", "openllm.arc", "openllm.mmlu"
CHECKS = {next(iter(c.check_specs)).name: c for c in all_checks}
SMALL = {
    "n_values": [5, 10],
    "clusterings": ["correctness"],
    "learned": False,
    "dims": [1],
    "joint_dims": [1, 2],
    "min_models": 20,
}
CFG = {
    "ops": {
        "irt_model": {"config": {"dims": [1]}},
        "irt_joint": {"config": {"dims": [1, 2]}},
        "anchor_sets": {"config": SMALL},
        "model_estimates": {"config": SMALL},
        "estimation_backtest": {"config": {**SMALL, "n_splits": 1}},
        "tiny_benchmark": {"config": {**SMALL, "export_n": 10}},
        "magi_subset_assets": {
            "config": {
                "n_trials": 4,
                "n_voters": 12,
                "methods": ["ref_vs_voters", "irt"],
                "export_method": "irt",
                "keep_fraction_min": 0.15,
                "keep_fraction_max": 0.3,
                "max_fraction": 0.6,
            }
        },
    }
}


def _evals(result) -> dict:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


@pytest.fixture(scope="module")
def built(tmp_path_factory, openllm_slice):
    root = tmp_path_factory.mktemp("checks")
    inc = root / "incoming" / "openllm"
    inc.mkdir(parents=True)
    for name, df in openllm_slice.items():
        df.to_parquet(inc / f"{name}.parquet", index=False)
    landing = {"incoming": root / "incoming", "quarantine": root / "q", "db": root / "tb.duckdb", "root": root}
    mp = pytest.MonkeyPatch()
    mp.setenv("TINYBENCH_ARTIFACTS", str(root / "artifacts"))
    instance, res = dg.DagsterInstance.ephemeral(), resources_for(landing)
    assert dg.materialize([responses.landing_ingest], instance=instance, resources=res).success
    evals = {}
    scenario = [responses.raw_responses, responses.response_matrix, responses.binarized_responses, irt.irt_model]
    for key in (ARC, MMLU):
        r = dg.materialize(
            [*scenario, *all_checks],
            selection=dg.AssetSelection.assets(*scenario).without_checks()
            | dg.AssetSelection.checks_for_assets(*scenario),
            partition_key=key,
            instance=instance,
            resources=res,
            run_config={"ops": {"irt_model": CFG["ops"]["irt_model"]}},
        )
        assert r.success
        evals[key] = _evals(r)
    board = [irt.irt_joint, *estimation.leaderboard_assets, *subsets.leaderboard_assets[:1]]
    ops = {k: v for k, v in CFG["ops"].items() if k != "irt_model"}
    r = dg.materialize(
        [*board, *all_checks],
        selection=dg.AssetSelection.assets(*board).without_checks() | dg.AssetSelection.checks_for_assets(*board),
        partition_key=BOARD,
        instance=instance,
        resources=res,
        run_config={"ops": ops},
    )
    assert r.success
    evals[BOARD] = _evals(r)
    yield SimpleNamespace(instance=instance, res=res, db=Store(landing["db"]), root=root, evals=evals)
    mp.undo()


@pytest.fixture()
def artifacts(built, monkeypatch):
    """The module store's artifacts folder (conftest points TINYBENCH_ARTIFACTS at a fresh folder per test)."""
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(built.root / "artifacts"))
    return built.root / "artifacts"


def run_check(ctx, name: str, key: str, db_path=None) -> dg.AssetCheckEvaluation:
    """One run of the check alone for a partition, on the module store or a copy of it."""
    from tinybench_assets.defs.assets import all_assets

    check = CHECKS[name]
    target = next(iter(check.check_specs)).asset_key
    asset = next(a for a in all_assets if target in a.keys)
    res = dict(ctx.res)
    if db_path is not None:
        res["store"] = StoreResource(database=str(db_path))
    # dg.materialize(partition_key=...) refuses a selection of checks only (it looks for a partitioned ASSET in it), so
    # the run carries the partition as the UI's does: the dagster/partition tag
    r = dg.materialize(
        [asset, check],
        selection=dg.AssetSelection.checks(check),
        tags={"dagster/partition": key},
        instance=ctx.instance,
        resources=res,
        raise_on_error=False,
    )
    (ev,) = r.get_asset_check_evaluations()
    return ev


def broken(ctx, tmp_path, *sql: str):
    """A copy of the module store with ``sql`` applied."""
    path = tmp_path / "broken.duckdb"
    shutil.copy(ctx.db.path, path)
    for s in sql:
        Store(path).execute(s)
    return path


def failed(evals: dict) -> dict:
    return {n: {k: v.value for k, v in e.metadata.items()} for n, e in evals.items() if not e.passed}


def md(ev, key):
    return ev.metadata[key].value


def test_checks_ran_in_the_materializations_and_passed(built):
    assert len(all_checks) >= 8
    for key in (ARC, MMLU):
        ev = built.evals[key]
        assert {
            "responses_valid",
            "matrix_complete",
            "balance_weights_normalized",
            "binarization_keeps_accuracy",
            "irt_model_fit_sound",
        } <= set(ev)
        assert not failed(ev), failed(ev)
        assert all(e.partition == key for e in ev.values())
    ev = built.evals[BOARD]
    assert {
        "irt_joint_fit_sound",
        "anchor_weights_sum_to_one",
        "estimates_in_range",
        "backtest_sane",
        "tiny_benchmark_round_trip",
        "magi_subset_within_bound",
        "magi_not_fair_flagged",
    } <= set(ev)
    assert not failed(ev), failed(ev)


def test_checks_are_partitioned_like_their_assets():
    from tinybench_assets.definitions import defs
    from tinybench_assets.defs.partitions import leaderboard_partitions, scenario_partitions

    repo = defs.get_repository_def()
    for check in all_checks:
        (spec,) = check.check_specs
        asset = repo.assets_defs_by_key[spec.asset_key]
        assert spec.partitions_def is asset.partitions_def, spec.name
        assert spec.partitions_def in (scenario_partitions, leaderboard_partitions), spec.name
        assert spec.description and len(spec.description) > 40, spec.name
    blocking = {next(iter(c.check_specs)).name for c in all_checks if next(iter(c.check_specs)).blocking}
    assert blocking == {
        "responses_valid",
        "irt_model_fit_sound",
        "irt_joint_fit_sound",
        "anchor_weights_sum_to_one",
        "knn_params_cover_test_questions",
    }


ONE_CELL = (
    "partition_key = 'openllm.arc' AND model = (SELECT min(model) FROM responses WHERE partition_key = 'openllm.arc') "
    "AND item = (SELECT min(item) FROM responses WHERE partition_key = 'openllm.arc')"
)


def test_responses_valid_fails_on_out_of_range_and_duplicates(built, tmp_path):
    assert run_check(built, "responses_valid", ARC).passed
    ev = run_check(
        built, "responses_valid", ARC, broken(built, tmp_path, f"UPDATE responses SET score = 1.5 WHERE {ONE_CELL}")
    )
    assert not ev.passed and ev.severity == dg.AssetCheckSeverity.ERROR and md(ev, "scores_out_of_range") == 1
    assert md(ev, "max_score") == 1.5 and md(ev, "duplicate_model_item_pairs") == 0
    ev = run_check(
        built,
        "responses_valid",
        ARC,
        broken(built, tmp_path, f"INSERT INTO responses SELECT * FROM responses WHERE {ONE_CELL}"),
    )
    assert not ev.passed and md(ev, "duplicate_model_item_pairs") == 1 and md(ev, "scores_out_of_range") == 0


def test_blocking_check_stops_downstream_in_the_same_run(built, tmp_path):
    """A raw_responses whose table has a duplicate: the blocking check fails and response_matrix never runs."""
    from tinybench_assets.defs.partitions import scenario_partitions

    path = broken(built, tmp_path)

    @dg.asset(name="raw_responses", partitions_def=scenario_partitions)
    def bad_raw_responses(context, store: StoreResource):
        store.get().execute(f"INSERT INTO responses SELECT * FROM responses WHERE {ONE_CELL}")

    r = dg.materialize(
        [bad_raw_responses, responses.response_matrix, CHECKS["responses_valid"]],
        partition_key=ARC,
        instance=built.instance,
        resources={**built.res, "store": StoreResource(database=str(path))},
        raise_on_error=False,
    )
    (ev,) = r.get_asset_check_evaluations()
    assert not ev.passed and ev.blocking and md(ev, "duplicate_model_item_pairs") == 1
    assert [m.asset_key for m in r.get_asset_materialization_events()] == [dg.AssetKey("raw_responses")]
    assert not r.success


def test_matrix_complete_reports_gaps(built, tmp_path):
    ev = run_check(built, "matrix_complete", ARC)
    assert ev.passed and md(ev, "missing_cells") == 0 and md(ev, "models") == 40
    sql = "UPDATE matrix_models SET n_items = n_items - 3 WHERE partition_key = 'openllm.arc' AND \"row\" = 0"
    ev = run_check(built, "matrix_complete", ARC, broken(built, tmp_path, sql))
    assert not ev.passed and ev.severity == dg.AssetCheckSeverity.WARN
    assert (
        md(ev, "missing_cells") == 3
        and md(ev, "models_with_gaps") == 1
        and list(md(ev, "worst_models").values()) == [3]
    )


@pytest.mark.parametrize(
    "name,key,sql",
    [
        (
            "balance_weights_normalized",
            ARC,
            "UPDATE matrix_items SET balance_weight = 3 WHERE partition_key = 'openllm.arc' AND col = 0",
        ),
        (
            "binarization_keeps_accuracy",
            MMLU,
            "UPDATE binarization SET mean_abs_shift = 0.2 WHERE partition_key = 'openllm.mmlu'",
        ),
        ("irt_model_fit_sound", ARC, "UPDATE irt_fits SET heldout_logloss = 0.9 WHERE partition_key = 'openllm.arc'"),
        (
            "irt_model_fit_sound",
            MMLU,
            "UPDATE irt_items SET b = 'nan'::DOUBLE WHERE partition_key = 'openllm.mmlu' AND item = "
            "(SELECT min(item) FROM irt_items WHERE partition_key = 'openllm.mmlu')",
        ),
        ("irt_joint_fit_sound", BOARD, "UPDATE irt_fits SET heldout_logloss = 0.9 WHERE partition_key = 'openllm'"),
        (
            "anchor_weights_sum_to_one",
            BOARD,
            "UPDATE anchors SET weight = weight * 1.1 WHERE leaderboard = 'openllm' AND scenario = 'arc' AND n = 5",
        ),
        (
            "estimates_in_range",
            BOARD,
            "UPDATE estimates SET lower = estimate + 0.05 WHERE leaderboard = 'openllm' AND "
            "estimator = 'anchor' AND n = 5",
        ),
        (
            "estimates_in_range",
            BOARD,
            "UPDATE estimates SET estimate_t2 = 0.5, lower_t2 = 0.6, upper_t2 = 0.7 WHERE "
            "leaderboard = 'openllm' AND estimator = 'gpirt' AND n = 10",
        ),
        (
            "backtest_sane",
            BOARD,
            "UPDATE backtest_summary SET coverage_t1 = 1.5 WHERE leaderboard = 'openllm' AND estimator = 'irt'",
        ),
        (
            "tiny_benchmark_round_trip",
            BOARD,
            "UPDATE estimates SET estimate = estimate + 0.01 WHERE leaderboard = 'openllm' AND "
            "estimator = 'pirt' AND n = 10",
        ),
        (
            "magi_subset_within_bound",
            BOARD,
            "UPDATE magi_subset SET in_subset = true WHERE leaderboard = 'openllm' AND method = 'irt'",
        ),
        (
            "magi_not_fair_flagged",
            BOARD,
            "UPDATE magi_scores SET not_fair = false WHERE leaderboard = 'openllm' AND role = 'reference'",
        ),
    ],
)
def test_check_passes_then_fails_on_broken_row(built, artifacts, tmp_path, name, key, sql):
    good = run_check(built, name, key)
    assert good.passed, {k: v.value for k, v in good.metadata.items()}
    bad = run_check(built, name, key, broken(built, tmp_path, sql))
    assert not bad.passed and bad.partition == key, {k: v.value for k, v in bad.metadata.items()}
    spec = next(iter(CHECKS[name].check_specs))
    assert bad.severity == (
        dg.AssetCheckSeverity.WARN if name == "magi_subset_within_bound" else dg.AssetCheckSeverity.ERROR
    )
    assert bad.blocking == spec.blocking


def test_irt_check_compares_with_the_item_mean_predictor(built):
    ev = run_check(built, "irt_model_fit_sound", ARC)
    assert md(ev, "converged") and md(ev, "heldout_models") > 0
    assert md(ev, "heldout_logloss") < md(ev, "item_mean_logloss") < 0.7 and md(ev, "heldout_cells") > 100


def test_round_trip_fails_when_the_json_is_edited(built, artifacts, tmp_path, monkeypatch):
    import json

    ev = run_check(built, "tiny_benchmark_round_trip", BOARD)
    assert ev.passed and md(ev, "values_compared") > 100 and md(ev, "max_abs_difference") < 1e-6
    shutil.copytree(artifacts, tmp_path / "artifacts")
    path = tmp_path / "artifacts" / BOARD / "tiny_benchmark.json"
    art = json.loads(path.read_text())
    w = art["scenarios"]["arc"]["anchors"]["weights"]
    art["scenarios"]["arc"]["anchors"]["weights"] = [w[-1], *w[:-1]]  # weights shifted by one anchor
    path.write_text(json.dumps(art))
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(tmp_path / "artifacts"))
    ev = run_check(built, "tiny_benchmark_round_trip", BOARD)
    assert not ev.passed and md(ev, "values_differing") > 0
    assert {m["scenario"] for m in md(ev, "mismatches")} == {"arc"}
