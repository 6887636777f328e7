"""``tinybench route`` end to end: a router materialized on a small RouterDC slice (train and test questions),
then questions routed offline from the saved .npz; the same choices as the asset; error cases exit 2."""

from __future__ import annotations

import json
import time

import dagster as dg
import numpy as np
import pandas as pd
import pytest
import torch

from tinybench_assets.cli import main
from tinybench_assets.cli.questions import read_questions
from tinybench_assets.cli.route import default_router_path
from tinybench_assets.core.routing.metrics import route
from tinybench_assets.core.routing.saved import load_router
from tinybench_assets.defs.assets import irt, responses, router_eval, routing
from tinybench_assets.defs.resources import ModelStore
from tinybench_assets.io.embeddings import Encoder
from tinybench_assets.io.routing_reads import partition_questions
from tinybench_assets.io.store import Store
from tinybench_assets_tests.conftest import SHARED, _need_shared
from tinybench_assets_tests.test_defs.test_definitions import ingested_for_router

torch.set_num_threads(1)
KEY = "routerdc.mmlu"
BOARD = ["--leaderboard", "routerdc", "--scenario", "mmlu", "--threads", "1"]
QUESTION = "Which planet in the solar system has the largest mass? A. Earth B. Jupiter C. Mars D. Venus"


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    """A store with the routerdc.mmlu router materialized (120 train + 60 test questions), artifacts under tmp."""
    _need_shared()
    t0 = time.perf_counter()
    root = tmp_path_factory.mktemp("route_cli")
    inc = root / "incoming"
    (inc / "routerdc").mkdir(parents=True)
    for name, n in (("mmlu_train.json", 120), ("mmlu_test.json", 60)):
        recs = json.loads((SHARED / "routerdc" / name).read_text())[:n]
        (inc / "routerdc" / name).write_text(json.dumps(recs))
    landing = {"incoming": inc, "quarantine": root / "q", "db": root / "tb.duckdb", "root": root}
    res, instance, mp = ingested_for_router(landing)
    assets = [
        responses.raw_responses,
        responses.response_matrix,
        responses.binarized_responses,
        irt.irt_model,
        routing.question_embeddings,
        routing.knn_item_params,
        routing.pirt_predictions,
        router_eval.router_accuracy,
    ]
    cfg = {
        "ops": {
            "irt_model": {"config": {"dims": [1, 2]}},
            "router_accuracy": {"config": {"n_folds": 3, "n_boot": 200, "families": ["knn_vote"], "margins": [0.0]}},
        }
    }
    assert dg.materialize(assets, partition_key=KEY, instance=instance, resources=res, run_config=cfg).success
    db = Store(landing["db"])
    qs = partition_questions(db, KEY)
    path = ModelStore().router_path(KEY)  # the resource's root: TINYBENCH_ARTIFACTS when a model is saved or loaded
    assert path.is_file() and default_router_path("routerdc", "mmlu") == path
    router, meta = load_router(path)
    yield {
        "root": root,
        "db": db,
        "questions": qs,
        "path": path,
        "router": router,
        "meta": meta,
        "build_s": time.perf_counter() - t0,
    }
    mp.undo()


@pytest.fixture(autouse=True)
def _artifacts(routed, monkeypatch):
    # conftest points TINYBENCH_ARTIFACTS at a fresh folder per test; the CLI must find the module's router
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(routed["root"] / "artifacts"))


def run(capsys, *argv):
    capsys.readouterr()  # drop what came before (the test's own encoder prints a progress bar)
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def expected(routed, texts):
    """What the saved router says, computed here independently: embed, predict_proba, route with prior and margin."""
    r, meta = routed["router"], routed["meta"]
    E = Encoder(device="cpu", num_threads=1).encode(list(texts))
    P = r.predict_proba(E)
    return P, route(P, np.asarray(meta["prior"]), margin=float(meta["margin"]))


def test_route_one_question_table_and_json(routed, capsys, tmp_path):
    meta = routed["meta"]
    assert len(meta["models"]) == 7 and meta["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
    P, picks = expected(routed, [QUESTION])
    want = meta["models"][int(picks[0])]
    rc, out, err = run(capsys, "route", *BOARD, QUESTION)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith(f"{KEY} router: {meta['served']} ") and "1 question(s)" in lines[0]
    assert any(line.startswith(f"  chosen: {want} (expected P(correct) ") for line in lines)
    shown = [ln for ln in lines if ln.split()[-2:-1] == ["P(correct)"] and "chosen:" not in ln]  # one line per model
    assert len(shown) == 7 and {ln.split()[-3] for ln in shown} == set(meta["models"])
    probs = [float(ln.split()[-1]) for ln in shown]
    assert probs == sorted(probs, reverse=True) and all(0 <= p <= 1 for p in probs)
    assert sum(ln.lstrip().startswith("*") for ln in shown) == 1 and f"* {want} " in next(
        ln for ln in shown if "*" in ln
    )

    rc, out, err = run(capsys, "route", *BOARD, "--json", QUESTION, "Compute 17 * 23.")
    data = json.loads(out)
    assert rc == 0 and err == "" and [d["id"] for d in data] == ["1", "2"]
    assert data[0]["question"] == QUESTION and data[0]["chosen_model"] == want
    assert list(data[0]["p"]) == sorted(data[0]["p"], key=lambda m: -data[0]["p"][m])  # sorted by P
    got = np.array([data[0]["p"][m] for m in meta["models"]])
    np.testing.assert_allclose(got, P[0], atol=1e-5)
    for d in data:
        assert d["chosen_model"] in meta["models"] and set(d["p"]) == set(meta["models"])
        assert all(0 <= p <= 1 for p in d["p"].values())


def test_route_questions_csv_matches_the_assets_routes(routed, capsys, tmp_path):
    """The test questions, routed from a CSV: the same choice per item as router_accuracy's router_routes table
    and as the saved router's predict_proba + route; --output writes one p column per model."""
    meta, qs = routed["meta"], routed["questions"]
    test = qs[qs["split"] == "test"].reset_index(drop=True)
    f = tmp_path / "qs.csv"
    test[["item", "text"]].rename(columns={"text": "Question"}).to_csv(f, index=False)
    out_csv = tmp_path / "routes.csv"
    rc, out, err = run(capsys, "route", *BOARD, "--questions", str(f), "--json", "--output", str(out_csv))
    assert rc == 0 and "60 route(s) written to" in err
    data = json.loads(out)
    assert [d["id"] for d in data] == test["item"].tolist()
    assert all(len(d["question"]) <= 200 for d in data) and any(len(t) > 200 for t in test["text"])
    got = {d["id"]: d["chosen_model"] for d in data}
    P, picks = expected(routed, test["text"])
    assert [got[i] for i in test["item"]] == [meta["models"][int(j)] for j in picks]
    asset = routed["db"].query("SELECT item, model FROM router_routes WHERE partition_key = ?", [KEY])
    assert len(asset) > 0
    assert all(got[i] == m for i, m in zip(asset["item"], asset["model"]))
    assert len(set(got.values())) >= 2, "the served router should route these questions to different models"
    df = pd.read_csv(out_csv)
    assert list(df.columns) == [
        "id",
        "question",
        "chosen_model",
        "expected_accuracy",
        *[f"p_{m}" for m in meta["models"]],
    ]
    assert df["question"].tolist() == test["text"].tolist()
    np.testing.assert_allclose(df[[f"p_{m}" for m in meta["models"]]].to_numpy(), P, atol=1e-5)
    # the plain table for a file: no store needed (the DuckDB file is not opened)
    routed["db"].path.rename(routed["db"].path.with_suffix(".moved"))
    try:
        rc, out, _ = run(capsys, "route", "--router", str(routed["path"]), "--threads", "1", "--questions", str(f))
    finally:
        routed["db"].path.with_suffix(".moved").rename(routed["db"].path)
    assert rc == 0 and "60 question(s) from" in out and out.count("  chosen: ") == 60
    # the margin recorded with the router is honoured: a huge one keeps every question on the best prior model
    from tinybench_assets.core.routing.saved import save_router

    save_router(routed["router"], tmp_path / "r.npz", {**meta, "margin": 1.0})
    rc, out, _ = run(
        capsys, "route", "--router", str(tmp_path / "r.npz"), "--threads", "1", "--questions", str(f), "--json"
    )
    default = meta["models"][int(np.argmax(meta["prior"]))]
    assert rc == 0 and {d["chosen_model"] for d in json.loads(out)} == {default}
    assert routed["build_s"] < 45, f"building the router store took {routed['build_s']:.0f} s"


def test_read_questions_formats(tmp_path):
    (tmp_path / "q.txt").write_text("first question\n\n  second question \n")
    assert read_questions(tmp_path / "q.txt") == [("1", "first question"), ("3", "  second question ")]
    (tmp_path / "q.jsonl").write_text('{"id": "a", "prompt": "x?"}\n{"id": "b", "prompt": "y?"}\n')
    assert read_questions(tmp_path / "q.jsonl") == [("a", "x?"), ("b", "y?")]
    (tmp_path / "q.json").write_text('["x?", "y?"]')
    assert read_questions(tmp_path / "q.json") == [("1", "x?"), ("2", "y?")]
    (tmp_path / "q.csv").write_text('ID,Prompt,extra\n007,"NA",1\nb,"a, b?",2\n')
    assert read_questions(tmp_path / "q.csv") == [("007", "NA"), ("b", "a, b?")]
    pd.DataFrame({"item": [10, 11], "text": ["x?", "y?"]}).to_parquet(tmp_path / "q.parquet")
    assert read_questions(tmp_path / "q.parquet") == [("10", "x?"), ("11", "y?")]


@pytest.mark.parametrize(
    "case,match",
    [
        ("norouter", "materialize router_accuracy for partition routerdc.gsm8k"),
        ("unsafename", "scenario '../../etc/x' contains a path separator"),
        ("badrouter", "cannot read router"),
        ("wrongpartition", "is for partition routerdc.mmlu, not routerdc.gsm8k"),
        ("encoder", "only the packaged sentence-transformers/all-MiniLM-L6-v2"),
        ("notext", "no text column (need one of question, prompt, text; found id, answer)"),
        ("emptyrow", "row 2: empty question text"),
        ("emptyarg", "question 2: empty question text"),
        ("nofile", "no such file"),
        ("unreadable", "cannot read"),
        ("suffix", "unsupported file type '.xlsx'"),
        ("both", "not both"),
        ("none", "give one or more question texts"),
    ],
)
def test_route_errors_exit_2_with_one_line(routed, capsys, tmp_path, case, match):
    argv = [*BOARD, QUESTION]
    f = tmp_path / "qs.csv"
    if case == "norouter":
        argv = ["--leaderboard", "routerdc", "--scenario", "gsm8k", QUESTION]
    elif case == "unsafename":
        argv = ["--leaderboard", "routerdc", "--scenario", "../../etc/x", QUESTION]
    elif case == "badrouter":
        (tmp_path / "r.npz").write_bytes(b"not a router")
        argv = ["--router", str(tmp_path / "r.npz"), QUESTION]
    elif case == "wrongpartition":
        argv = ["--leaderboard", "routerdc", "--scenario", "gsm8k", "--router", str(routed["path"]), QUESTION]
    elif case == "encoder":
        from tinybench_assets.core.routing.saved import save_router

        save_router(routed["router"], tmp_path / "r.npz", {**routed["meta"], "encoder": "local:my-encoder"})
        argv = ["--router", str(tmp_path / "r.npz"), QUESTION]
    elif case == "notext":
        f.write_text("id,answer\n1,hello\n")
        argv = [*BOARD, "--questions", str(f)]
    elif case == "emptyrow":
        f.write_text('id,question\n1,"What is 2+2?"\n2,"  "\n')
        argv = [*BOARD, "--questions", str(f)]
    elif case == "emptyarg":
        argv = [*BOARD, QUESTION, ""]
    elif case == "nofile":
        argv = [*BOARD, "--questions", str(tmp_path / "missing.csv")]
    elif case == "unreadable":
        (tmp_path / "q.parquet").write_bytes(b"garbage")
        argv = [*BOARD, "--questions", str(tmp_path / "q.parquet")]
    elif case == "suffix":
        (tmp_path / "q.xlsx").write_bytes(b"x")
        argv = [*BOARD, "--questions", str(tmp_path / "q.xlsx")]
    elif case == "both":
        f.write_text("question\nx?\n")
        argv = [*BOARD, "--questions", str(f), QUESTION]
    elif case == "none":
        argv = list(BOARD)
    rc, out, err = run(capsys, "route", *argv)
    assert rc == 2 and out == ""
    assert err.startswith("tinybench route: error: ") and len(err.strip().splitlines()) == 1
    assert match in err
    if case == "norouter":
        assert str(routed["root"] / "artifacts" / "routerdc" / "router_gsm8k.npz") in err
    if case in ("notext", "emptyrow", "unreadable"):
        assert str(f if case != "unreadable" else tmp_path / "q.parquet") in err


def test_route_on_cuda_without_cuda_is_a_clear_error(routed, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: --device cuda is valid here")
    assert main(["route", *BOARD, "--device", "cuda", QUESTION]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("tinybench route: error: --device cuda:")
        and "Traceback" not in err
        and len(err.splitlines()) == 1
    )


def test_route_with_costs_serves_the_chosen_objective_and_prints_expected_cost(routed, capsys, tmp_path):
    """A router file saved where costs landed: the cost objective and lambda it carries, re-chosen from its training-CV
    sweep for --tolerance / --max-cost / --min-accuracy (no data read), expected accuracy and cost per question."""
    from tinybench_assets.core.routing.saved import save_router

    models = routed["meta"]["models"]
    cheapest = models[0]
    cost = {
        "objective": "quality_at_min_cost",
        "tolerance": 0.01,
        "lambda": 100.0,
        "rule": "as saved",
        "model_cost": [0.001 * (j + 1) for j in range(len(models))],
        "best_single": [0.70, 0.005],
        "sweep": {"lambda": [0.0, 100.0, 1e7], "cv_acc": [0.72, 0.695, 0.40], "cv_cost": [0.004, 0.002, 0.001]},
    }
    path = tmp_path / "cost.npz"
    save_router(routed["router"], path, {**routed["meta"], "cost": cost})

    def run(*flags):
        assert main(["route", "--router", str(path), "--threads", "1", "--json", *flags, QUESTION]) == 0
        return json.loads(capsys.readouterr().out)[0]

    saved = run()
    assert "expected_cost" in saved and 0 <= saved["expected_accuracy"] <= 1
    assert run("--max-cost", "0.0015")["chosen_model"] == cheapest  # only the 1e7 point fits: the cheapest model
    assert run("--max-cost", "0.0015")["expected_cost"] == pytest.approx(0.001)
    assert main(["route", *BOARD, "--json", QUESTION]) == 0  # the same router without costs: plain argmax
    plain = json.loads(capsys.readouterr().out)[0]
    assert run("--objective", "accuracy")["chosen_model"] == plain["chosen_model"] and "expected_cost" not in plain
    assert main(["route", "--router", str(path), "--objective", "min_accuracy", QUESTION]) == 2
    assert "needs --min-accuracy" in capsys.readouterr().err
    # a router without costs refuses a cost objective with a clear message
    assert main(["route", *BOARD, "--objective", "quality_at_min_cost", QUESTION]) == 2
    assert "trained without costs" in capsys.readouterr().err


def test_route_serves_a_saved_cascade_and_rechooses_among_policies(routed, capsys, tmp_path):
    """A router file whose training-CV points include a cascade: served as saved, and --tolerance re-chooses among
    every saved policy (the cascade at P >= 0 sends every question to the cheapest model)."""
    from tinybench_assets.core.routing.saved import save_router

    models = routed["meta"]["models"]
    cost = {
        "objective": "quality_at_min_cost",
        "tolerance": 0.02,
        "policy": "cascade",
        "value": 0.0,
        "rule": "as saved",
        "model_cost": [0.001 * (j + 1) for j in range(len(models))],
        "points": {
            "policy": ["single", "lambda", "cascade"],
            "value": [None, 0.0, 0.0],
            "cv_acc": [0.70, 0.72, 0.69],
            "cv_cost": [0.005, 0.004, 0.001],
        },
    }
    path = tmp_path / "cascade.npz"
    save_router(routed["router"], path, {**routed["meta"], "cost": cost})
    assert main(["route", "--router", str(path), "--threads", "1", QUESTION]) == 0
    out = capsys.readouterr().out
    assert "cascade at P >= 0.00" in out and f"chosen: {models[0]}" in out
    assert main(["route", "--router", str(path), "--threads", "1", "--json", "--tolerance", "0.5", QUESTION]) == 0
    tight = json.loads(capsys.readouterr().out)[0]  # 0.69 < 0.70 - 0.005: the lambda-0 point (argmax of P)
    plain = main(["route", "--router", str(path), "--threads", "1", "--json", "--objective", "accuracy", QUESTION])
    assert plain == 0 and tight["chosen_model"] == json.loads(capsys.readouterr().out)[0]["chosen_model"]
