"""Re-materializing the leaderboard-level assets with unchanged inputs gives identical results (issue 14): on a small
slice (60 openllm models x arc + truthfulqa; 60 + 30 RouterDC mmlu questions), the joint IRT fit and model split,
the estimation assets (anchor_sets, gpirt_lambdas, model_estimates, estimation_backtest, tiny_benchmark), the MAGI
assets and parallel forms of the leaderboard, and the router assets of a RouterDC scenario, materialized twice, leave
every stored row of those partitions the same (run times aside), and the exported files too. The two
materializations run in two processes with different string-hash seeds, as two `tinybench run-all` would."""

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from tinybench_assets.defs.assets import estimation, irt, responses, router_eval, routing, subsets
from tinybench_assets.defs.resources import EncoderResource
from tinybench_assets.testing import reliability_data as rd
from tinybench_assets_tests.conftest import SHARED, _need_shared
from tinybench_assets_tests.snapshots import differences, explain, is_run_time, stored_rows
from tinybench_assets_tests.test_defs.test_definitions import resources_for

pytestmark = pytest.mark.timeout(600)
BOARD, ROUTED = "openllm", "routerdc.mmlu"
EST = {
    "n_values": [5, 10],
    "clusterings": ["correctness", "irt"],
    "learned": True,
    "dims": [1, 2],
    "joint_dims": [1, 2],
    "min_models": 50,
    "n_jobs": 1,
}
CONFIG = {
    "ops": {
        "irt_joint": {"config": {"dims": [1, 2]}},
        "anchor_sets": {"config": EST},
        "model_estimates": {"config": EST},
        "estimation_backtest": {"config": {**EST, "learned": False, "n_splits": 1, "adaptive_n": [5]}},
        "tiny_benchmark": {"config": {**EST, "export_n": 10}},
        "magi_subset_assets": {
            "config": {
                "n_trials": 6,
                "n_voters": 12,
                "keep_fraction_min": 0.15,
                "keep_fraction_max": 0.3,
                "max_fraction": 0.35,
            }
        },
        "parallel_forms": {"config": {"form_size": 60}},
    }
}
ROUTER_CONFIG = {
    "ops": {"irt_model": {"config": {"dims": [1, 2]}}, "router_accuracy": {"config": {"n_folds": 3, "n_boot": 200}}}
}


@pytest.fixture()
def small_landing(tmp_path):
    _need_shared()
    inc = tmp_path / "incoming"
    (inc / "openllm").mkdir(parents=True)
    (inc / "routerdc").mkdir(parents=True)
    for sc in ("arc", "truthfulqa"):
        resp = pd.read_parquet(SHARED / "openllm" / f"{sc}.responses.parquet")
        models = sorted(resp["model"].unique())[:60]
        resp[resp["model"].isin(models)].to_parquet(inc / "openllm" / f"{sc}.responses.parquet", index=False)
        fs = pd.read_parquet(SHARED / "openllm" / f"{sc}.full_scores.parquet")
        fs[fs["model"].isin(models)].to_parquet(inc / "openllm" / f"{sc}.full_scores.parquet", index=False)
    for name, n in (("mmlu_train.json", 60), ("mmlu_test.json", 30)):
        (inc / "routerdc" / name).write_text(json.dumps(json.loads((SHARED / "routerdc" / name).read_text())[:n]))
    return {"incoming": inc, "quarantine": tmp_path / "q", "db": tmp_path / "tb.duckdb", "root": tmp_path}


def _timeless_json(value):
    if isinstance(value, dict):
        return {k: _timeless_json(v) for k, v in value.items() if not is_run_time(k)}
    return [_timeless_json(v) for v in value] if isinstance(value, list) else value


def exported_files(artifacts: Path) -> dict[str, object]:
    """The exported files of both partitions: JSON parsed without run times, a saved router's arrays and description,
    others as bytes (predictor.pkl, a pickle of Python objects whose bytes may differ with equal contents, and the
    plots are left out)."""
    out = {}
    for path in sorted(artifacts.rglob("*")):
        if path.is_file() and path.suffix != ".pkl" and "plots" not in path.parts:
            rel = str(path.relative_to(artifacts))
            if path.suffix == ".json":
                out[rel] = _timeless_json(json.loads(path.read_text()))
            elif path.suffix == ".npz" and path.name.startswith("router_"):  # np.savez: zip entries carry the time
                with np.load(path, allow_pickle=False) as z:
                    out[rel] = {
                        k: _timeless_json(json.loads(bytes(z[k]).decode())) if k == "__meta__" else z[k].tobytes()
                        for k in sorted(z.files)
                    }
            else:
                out[rel] = path.read_bytes()
    return out


def materialize_all(db: str, home: str) -> None:
    """The leaderboard's assets and the RouterDC scenario's router assets, one run each (what a child process runs)."""
    instance = dg.DagsterInstance.from_config(home)
    res = {
        **resources_for({"db": db, "incoming": "", "quarantine": ""}),
        "encoder": EncoderResource(device="cpu", num_threads=1),
    }
    board_assets = [irt.irt_joint, *estimation.leaderboard_assets, *subsets.leaderboard_assets]
    router_assets = [irt.irt_model, *routing.scenario_assets, router_eval.router_accuracy]
    assert dg.materialize(
        board_assets, partition_key=BOARD, instance=instance, resources=res, run_config=CONFIG
    ).success
    assert dg.materialize(
        router_assets, partition_key=ROUTED, instance=instance, resources=res, run_config=ROUTER_CONFIG
    ).success


CHILD = (
    "import sys; from tinybench_assets_tests.test_defs.test_rematerialize_leaderboard import materialize_all; "
    "materialize_all(sys.argv[1], sys.argv[2])"
)


def test_rematerializing_leaderboard_assets_with_unchanged_inputs_gives_identical_tables(small_landing, monkeypatch):
    """Each materialization in its own process with its own string-hash seed, as two `tinybench run-all` would be; in
    between, a scenario's ingest-side assets are re-materialized too, which moves its rows in the store's tables."""
    artifacts = small_landing["root"] / "artifacts"
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(artifacts))
    home = small_landing["root"] / "home"
    home.mkdir()
    instance = dg.DagsterInstance.local_temp(str(home))
    res = resources_for(small_landing)
    assert dg.materialize([responses.landing_ingest], instance=instance, resources=res).success
    foundation = [responses.raw_responses, responses.response_matrix, responses.binarized_responses]
    for key in ("openllm.arc", "openllm.truthfulqa", ROUTED):
        assert dg.materialize(foundation, partition_key=key, instance=instance, resources=res).success

    runs = []
    for hash_seed in ("1", "2"):
        if (
            runs
        ):  # re-materialize arc's ingest side too: same rows, stored after truthfulqa's now (row order must not matter)
            assert dg.materialize(foundation, partition_key="openllm.arc", instance=instance, resources=res).success
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(small_landing["db"]), str(home)],
            cwd=rd.ROOT,
            env=rd.child_env({"PYTHONHASHSEED": hash_seed}),
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-5000:]
        runs.append(
            (
                stored_rows(small_landing["db"], BOARD),
                stored_rows(small_landing["db"], ROUTED),
                exported_files(artifacts),
            )
        )

    (board1, routed1, files1), (board2, routed2, files2) = runs
    expected_board = {
        "model_splits",
        "irt_items",
        "irt_fits",
        "anchors",
        "gpirt_lambdas",
        "estimates",
        "backtest_summary",
        "tiny_benchmark",
        "magi_rankings",
        "magi_subset",
        "magi_scores",
        "parallel_forms",
    }
    assert expected_board <= {t for t, df in board1.items() if len(df)}, sorted(
        t for t, df in board1.items() if len(df)
    )
    assert {
        "question_embeddings",
        "knn_item_params",
        "pirt_predictions",
        "router_summary",
        "router_routes",
        "router_cv",
    } <= {t for t, df in routed1.items() if len(df)}, sorted(routed1)
    for first, second in ((board1, board2), (routed1, routed2)):
        diff = differences(first, second)
        assert not diff, [explain(first, second, t) for t in diff]
    assert files1.keys() == files2.keys() and {"openllm/tiny_benchmark.json", "openllm/magi_subset.json"} <= set(files1)
    assert [f for f in files1 if files1[f] != files2[f]] == []
