"""A new model's evaluation as an asset: files in data/incoming/evaluations/<leaderboard>/ become ``model_evaluation``
partitions through run-all's pass and the refresh decision the sensor shares; rows equal ``tinybench estimate
--json``; a changed answers file or a new tiny benchmark of the same leaderboard re-estimates (old rows superseded),
another leaderboard's does not; bad files are quarantined with their reason while the rest land."""

from __future__ import annotations

import json
import math
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from tinybench_assets import paths
from tinybench_assets.cli import main
from tinybench_assets.core import tiny_benchmark as tb
from tinybench_assets.definitions import build_defs
from tinybench_assets.io.drops import landing_files
from tinybench_assets.io.store import Store
from tinybench_assets.orchestration.evaluations import EVALUATION_JOB, refresh_evaluations
from tinybench_assets.orchestration.refresh_plan import decide
from tinybench_assets_tests.test_core.test_tiny_benchmark import answers_of, fitted, texts


@pytest.fixture(scope="module")
def sim_board(tmp_path_factory):
    """A simulated leaderboard's tiny benchmark (saved under a folder of its own) and two held-out models' answers."""
    import numpy as np

    root = tmp_path_factory.mktemp("sim_artifacts")
    rm, test, pred = fitted(learned=False)
    art = tb.export_tiny_benchmark(pred, leaderboard="sim", n=5, item_texts=texts(rm))
    tb.save_artifact(art, pred, root / "sim")
    art = tb.load_artifact(root / "sim")
    rows = [r for r in test if np.isfinite(rm.scores[r]).all()][:2]
    return {"folder": root / "sim", "answers": [answers_of(art, rm, r) for r in rows]}


def write_csv(path, answers: dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("item,score\n" + "".join(f"{k},{v:g}\n" for k, v in answers.items()))
    return path


def cli_json(capsys, answers_path) -> list[dict]:
    assert main(["estimate", "--leaderboard", "sim", "--answers", str(answers_path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["scenarios"]


def same(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return abs(float(a) - float(b)) <= 1e-9


def work(defs, instance, store, incoming) -> dict:
    return {w.partition: w.reason for w in decide(defs, instance, store, incoming).work if w.job == EVALUATION_JOB}


def test_evaluations_land_refresh_and_quarantine(sim_board, capsys):
    import shutil

    shutil.copytree(sim_board["folder"], Path(paths.artifacts_dir()) / "sim")
    incoming = Path(paths.incoming_dir())
    good = write_csv(incoming / "evaluations" / "sim" / "new-model.csv", sim_board["answers"][0])
    write_csv(incoming / "evaluations" / "sim" / "scores.csv", {k: 7 for k in sim_board["answers"][0]})
    write_csv(incoming / "evaluations" / "sim" / "foreign.csv", {"openllm.arc.q1": 1, "openllm.arc.q2": 0})
    write_csv(incoming / "evaluations" / "sim" / "nothing.csv", {next(iter(sim_board["answers"][0])): 1}).write_text(
        "item,score\n"
    )
    # never a leaderboard's drop: the landing folder's listing skips the evaluations folder
    assert landing_files(incoming) == []
    defs, instance, store = build_defs(), dg.DagsterInstance.ephemeral(), Store(paths.store_target())

    def new_tiny_benchmark(board: str, version: str) -> None:
        tags = {"dagster/data_version": version}  # as a run of tiny_benchmark records its (logical) data version
        instance.report_runless_asset_event(dg.AssetMaterialization("tiny_benchmark", partition=board, tags=tags))

    instance.add_dynamic_partitions("leaderboards", ["other", "sim"])
    new_tiny_benchmark("sim", "v0")
    kw = {"run_config": {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}}
    decision = decide(defs, instance, store, incoming)
    assert sorted(decision.new_evaluations) == ["sim/foreign", "sim/new-model", "sim/nothing", "sim/scores"]
    assert all(w.job == EVALUATION_JOB for w in decision.work) and len(decision.work) == 4

    # run-all's pass: every file evaluated once; the bad ones quarantined with their reason, the good one lands
    done, failed = refresh_evaluations(defs, instance, incoming, **kw)
    assert (done, failed) == (4, [])
    rows = store.evaluations("sim")
    assert set(rows["model"]) == {"new-model"} and not rows["superseded"].any()
    want = cli_json(capsys, good)
    assert [r["scenario"] for r in want] == rows["scenario"].tolist()
    for w, (_, r) in zip(want, rows.iterrows()):
        for k in ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2"):
            assert same(w[k], r[k]), (k, w[k], r[k])
        assert (w["estimator"], w["answered"], w["n_anchors"]) == (r["estimator"], r["n_answers"], r["n_anchors"])
    assert rows["anchors_missing"].eq(0).all() and rows["tiny_benchmark_version"].nunique() == 1
    bad = store.quarantined_evaluations().set_index("path")["error"]
    assert set(bad.index) == {f"evaluations/sim/{n}.csv" for n in ("scores", "foreign", "nothing")}
    assert "outside [0, 1]" in bad["evaluations/sim/scores.csv"]
    assert "not items of this leaderboard" in bad["evaluations/sim/foreign.csv"]
    assert "no answers" in bad["evaluations/sim/nothing.csv"] or "no anchor" in bad["evaluations/sim/nothing.csv"]
    assert (Path(paths.quarantine_dir()) / "evaluations" / "sim" / "scores.csv.error.txt").exists()
    assert [p.name for p in (incoming / "evaluations" / "sim").iterdir()] == ["new-model.csv"]
    flt = dg.AssetRecordsFilter(asset_key=dg.AssetKey("model_evaluation"), asset_partitions=["sim/new-model"])
    meta = instance.fetch_materializations(flt, limit=1).records[0].asset_materialization.metadata
    assert "data:image/png;base64," in meta["evaluation"].value and "rank_on_board" in meta["estimates_pct"].value

    # nothing new: nothing to do, a second pass materializes nothing
    assert work(defs, instance, store, incoming) == {}
    assert refresh_evaluations(defs, instance, incoming, **kw) == (0, [])

    # a changed answers file: re-estimated, the old rows kept, superseded
    write_csv(good, sim_board["answers"][1])
    assert "answers file changed" in work(defs, instance, store, incoming)["sim/new-model"]
    assert refresh_evaluations(defs, instance, incoming, **kw) == (1, [])
    hist = store.evaluations("sim", "new-model", latest=False)
    assert len(hist) == 2 * len(rows) and hist["superseded"].sum() == len(rows)
    assert hist.loc[~hist["superseded"], "answers_sha256"].nunique() == 1

    # another leaderboard's new tiny benchmark leaves it alone; its own leaderboard's re-estimates it, once
    new_tiny_benchmark("other", "v1")
    assert work(defs, instance, store, incoming) == {}
    new_tiny_benchmark("sim", "v1")  # the same artifact: re-estimated to the version stored, so no new rows
    assert "tiny_benchmark[sim]" in work(defs, instance, store, incoming)["sim/new-model"]
    assert refresh_evaluations(defs, instance, incoming, **kw) == (1, [])
    assert len(store.evaluations("sim", "new-model", latest=False)) == 2 * len(rows)
    artifact = Path(paths.artifacts_dir()) / "sim" / "tiny_benchmark.json"
    artifact.write_text(artifact.read_text() + "\n")  # a re-exported artifact: another hash
    new_tiny_benchmark("sim", "v2")
    assert refresh_evaluations(defs, instance, incoming, **kw) == (1, [])
    assert work(defs, instance, store, incoming) == {}
    hist = store.evaluations("sim", "new-model", latest=False)
    assert len(hist) == 3 * len(rows) and (~hist["superseded"]).sum() == len(rows)
    assert hist["tiny_benchmark_version"].nunique() == 2  # two tiny benchmarks; the first one answered twice

    # tinybench summary: the latest evaluation per model, and the quarantined evaluation files with their reason
    assert main(["summary"]) == 0
    out = capsys.readouterr().out
    assert "new-model" in out and "evaluations/sim/scores.csv" in out and "outside [0, 1]" in out
    assert isinstance(pd.Timestamp(hist["evaluated_at"].max()), pd.Timestamp)
