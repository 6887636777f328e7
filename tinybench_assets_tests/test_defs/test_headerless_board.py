"""A board without families (issue 51): a headerless 0/1 matrix of anonymous models (the report: 12 models x 41,871
items; here 12 x 1,500), dropped as a CSV file, lands as one scenario of one leaderboard whose generated model ids
(``combine.model0`` ... ``combine.model11``) share one name stem. Every asset of the scenario and of the leaderboard,
at its default config, is materialized through Dagster or skipped with a note; none fails: the small-board estimation
runs leave-one-model-out (each generated id is its own family) and every MAGI search trial is scored."""

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from tinybench_assets.defs.assets import leaderboard_assets, scenario_assets, unpartitioned_assets
from tinybench_assets.defs.resources import EncoderResource
from tinybench_assets.io.store import Store
from tinybench_assets_tests.test_defs.test_definitions import resources_for

pytestmark = pytest.mark.timeout(300)
N_MODELS, N_ITEMS = 12, 1_500
# no question text, so no routers: what each skipped asset's note must say
SKIPPED = {
    "question_embeddings": "no question text",
    "knn_item_params": "no test questions embedded",
    "pirt_predictions": "no imputed test parameters",
    "router_accuracy": "no questions embedded",
    "leaderboard_router": "0 routable scenario(s)",
}


def _answers(seed: int = 0) -> np.ndarray:
    """12 models x N_ITEMS 0/1 answers from a 2PL (abilities spread from weak to strong, so the board ranks)."""
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.5, 1.5, N_MODELS)[:, None]
    a, b = rng.uniform(0.5, 2.0, N_ITEMS), rng.normal(0.0, 1.0, N_ITEMS)
    return (rng.random((N_MODELS, N_ITEMS)) < 1 / (1 + np.exp(-a * (ability - b)))).astype(float)


def _materialize(assets, key, instance, res) -> dict:
    """{asset: metadata} of one partition's run of ``assets``, asserting that no step failed."""
    result = dg.materialize(assets, partition_key=key, instance=instance, resources=res, raise_on_error=False)
    failed = [(e.step_key, str(e.event_specific_data.error)[-1500:]) for e in result.get_step_failure_events()]
    assert result.success and not failed, failed
    return {e.asset_key.to_user_string(): e.materialization.metadata for e in result.get_asset_materialization_events()}


def test_a_headerless_board_materializes_or_skips_every_asset(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(tmp_path / "artifacts"))
    landing = {"incoming": tmp_path / "incoming", "quarantine": tmp_path / "q", "db": tmp_path / "tb.duckdb"}
    (landing["incoming"] / "combine").mkdir(parents=True)
    # no header row, no id column: 1.0/0.0 cells as the reported file has them
    pd.DataFrame(_answers()).to_csv(
        landing["incoming"] / "combine" / "combine.csv", header=False, index=False, float_format="%.1f"
    )
    instance = dg.DagsterInstance.ephemeral()
    res = {**resources_for(landing), "encoder": EncoderResource(device="cpu", num_threads=1)}
    assert dg.materialize(unpartitioned_assets, instance=instance, resources=res).success
    assert instance.get_dynamic_partitions("scenarios") == ["combine.combine"]
    assert instance.get_dynamic_partitions("leaderboards") == ["combine"]

    meta = {
        **_materialize(scenario_assets, "combine.combine", instance, res),
        **_materialize(leaderboard_assets, "combine", instance, res),
    }
    expected = {k.to_user_string() for a in [*scenario_assets, *leaderboard_assets] for k in a.keys}
    assert set(meta) == expected  # every asset materialized once (a step that failed would leave its assets out)
    skipped = {k: str(m["skipped"].value) for k, m in meta.items() if "skipped" in m}
    assert skipped.keys() == SKIPPED.keys(), skipped
    assert all(note in skipped[k] for k, note in SKIPPED.items()), skipped

    db = Store(landing["db"])
    models = db.query("SELECT DISTINCT model FROM landed_responses")["model"]
    assert sorted(models) == sorted(f"combine.model{i}" for i in range(N_MODELS))
    # estimation: the small board's leave-family-out folds hold one generated id each
    assert meta["estimation_backtest"]["small_board"].value.startswith(f"{N_MODELS} models: leave-family-out")
    assert db.query("SELECT count(*) AS n FROM backtest_summary WHERE leaderboard = 'combine'")["n"].iloc[0] > 0
    assert (tmp_path / "artifacts" / "combine" / "tiny_benchmark.json").is_file()
    # MAGI: every trial of every method scored (none reached optuna as NaN), and only the reference is not fair
    search = db.query("SELECT method, scored FROM magi_search WHERE leaderboard = 'combine'")
    assert len(search) and search["scored"].all()
    assert "unscored_trials" not in meta["magi_subset"] and meta["magi_subset"]["not_fair_models"].value == 1
    assert (tmp_path / "artifacts" / "combine" / "magi_subset.json").is_file()
