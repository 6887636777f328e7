"""Exported tiny benchmarks: the JSON + tree-file round trip reproduces the predictor's estimates exactly (the
JSON-evaluable and the learned estimators, no pickle); answer errors. Hostile files: test_artifact_safety.py."""

from __future__ import annotations

import copy
import functools
import hashlib
import json

import numpy as np
import pandas as pd
import pytest
import torch

from tinybench_assets.core import tiny_benchmark as tb
from tinybench_assets.core.estimation.predictor import AnchorPredictor, split_models
from tinybench_assets.core.tiny_benchmark import AnswerError, ArtifactError
from tinybench_assets_tests.test_core.test_backtest import _world

torch.set_num_threads(1)

FAST = dict(
    dim_candidates=(1, 2),
    joint_dim_candidates=(1, 2),
    n_init=2,
    clusterings=("correctness", "irt"),
    gbm_params={"max_iter": 30},
)
COLS = ["estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2"]


@functools.lru_cache(maxsize=None)
def fitted(learned: bool = True):
    """(matrix, held-out row indices, predictor): two simulated scenarios, 10% of the models never ran "b"."""
    rm, full = _world(n_models=300, items=(20, 20), seed=5, missing_frac=0.1)
    train, test = split_models(rm.shape[0], 0.1, seed=0)
    pred = AnchorPredictor(n_values=(5, 10), learned=learned, **FAST).fit(rm, full, train)
    return rm, test, pred


def texts(rm):
    return {it: f"Question {it}?" for it in rm.items}


def saved(tmp_path, learned=True, n=5, clustering=None):
    rm, test, pred = fitted(learned)
    art = tb.export_tiny_benchmark(pred, leaderboard="sim", n=n, clustering=clustering, item_texts=texts(rm))
    tb.save_artifact(art, pred, tmp_path)
    return tb.load_artifact(tmp_path)


def answers_of(art, rm, row) -> dict:
    """A model's answers to the artifact's anchors (NaN answers, i.e. a scenario it never ran, left out)."""
    out = {}
    for s in art["scenario_order"]:
        for it in art["scenarios"][s]["anchors"]["items"]:
            y = rm.scores[row, rm.items.index(it)]
            if np.isfinite(y):
                out[it] = float(y)
    return out


def anchor_block(art, rm, rows) -> dict:
    return {
        s: rm.scores[np.ix_(rows, [rm.items.index(i) for i in art["scenarios"][s]["anchors"]["items"]])]
        for s in art["scenario_order"]
    }


def reference(pred, rm, rows, n):
    return pred.estimate(rm.scores[rows], np.asarray(rm.models, dtype=object)[rows], n_values=[n]).set_index(
        ["model", "scenario", "clustering", "estimator"]
    )


# ---------------------------------------------------------------------------------------------- export
def test_export_is_strict_json_and_round_trips(tmp_path):
    rm, test, pred = fitted()
    art = tb.export_tiny_benchmark(pred, leaderboard="sim", n=5, item_texts=texts(rm))
    path = tb.save_artifact(art, pred, tmp_path)
    assert path == tmp_path / "tiny_benchmark.json"
    raw = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert raw["format"] == tb.FORMAT == "tinybench.tiny_benchmark/2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["learned_models.npz", "tiny_benchmark.json"]  # no pickle
    assert raw["learned"]["sha256"] == hashlib.sha256((tmp_path / "learned_models.npz").read_bytes()).hexdigest()
    assert raw["learned"]["file"] == "learned_models.npz" and raw["learned"]["fit_learned"] is True
    # every regressor of the exported (clustering, n) and no other
    keys = {(m["scenario"], m["kind"], m["target"]) for m in raw["learned"]["models"]}
    st = pred.named_steps
    assert keys == {k[2:] for k in st["learned"].models_ if k[:2] == (raw["clustering"], 5)} and len(keys) == 8
    assert {"gbm", "gbm_joint", "bank_joint", "stack"} <= set(raw["learned_estimators"]) and "gbm" not in raw[
        "json_estimators"
    ]
    assert raw["learned"]["bank"]["models"] == st["split"].n_fit_
    assert set(raw["learned"]["bank"]["eps"]) == set(pred.layout.scenarios)
    c = st["selector"].selection_[(5, "a", "tinybench")]["t1"][0]
    assert raw["clustering"] == c and raw["clustering_source"] == "selected"
    assert raw["scenario_order"] == ["a", "b"]
    for s in ("a", "b"):
        d = raw["scenarios"][s]
        assert d["anchors"]["items"] == pred.anchor_items(c, 5)[s]
        assert d["anchors"]["texts"] == [f"Question {i}?" for i in d["anchors"]["items"]]
        np.testing.assert_allclose(sum(d["anchors"]["weights"]), 1.0)
        assert d["n_items"] == 20 == len(d["items"]) == len(d["irt"]["sep"]["a"]) == len(d["irt"]["joint"]["b"])
        assert set(d["estimators"]) == set(pred.validation.query("clustering == @c and n == 5").estimator)
        assert set(d["stacks"]) == {"stack", "stack_own"}
        assert d["recommended"]["t1"] in d["estimators"] and d["recommended"]["t2"] in d["estimators"]
        sel = st["selector"].selection_[(5, s, "tinybench")]
        rl = d["recommended_learned"]
        assert {k: rl[k] for k in ("t1", "t2")} == {"t1": sel["t1"][1], "t2": sel["t2"][1]}
        served = st["served"].intervals_[(5, s, "tinybench")]  # its selection-aware interval travels with it
        assert (rl["interval_t1"]["q_lo"], rl["interval_t1"]["q_hi"]) == (served.q_lo_, served.q_hi_)
        lam = st["lambdas"].lambdas_[(c, 5, s, "joint")]
        assert d["lambdas"]["joint"] == {"tutorial": lam["tutorial"], "validation": lam["validation"]}
    loaded = tb.load_artifact(path)
    assert {k: v for k, v in loaded.items() if k != "_folder"} == raw
    # the flat tables for the store
    tables = tb.artifact_tables(loaded)
    assert len(tables["tiny_benchmark_anchors"]) == 10 and len(tables["tiny_benchmark"]) == 2
    assert tables["tiny_benchmark_estimators"].groupby("scenario").recommended_t1.sum().tolist() == [1, 1]
    assert tables["tiny_benchmark"].learned_sha256.tolist() == [raw["learned"]["sha256"]] * 2


@pytest.mark.parametrize("n,clustering", [(5, None), (10, None), (10, "irt"), (5, "correctness")])
def test_json_estimators_reproduce_the_predictor(tmp_path, n, clustering):
    rm, test, pred = fitted()
    art = saved(tmp_path, n=n, clustering=clustering)
    c = art["clustering"]
    ref = reference(pred, rm, test, n)
    got = tb.evaluate_json(art, anchor_block(art, rm, test))
    assert {e for (_, e) in got} == set(tb.JSON_BASE)  # stacks hold gbm members here: learned, not JSON
    models = np.asarray(rm.models, dtype=object)[test]
    checked = 0
    for (s, e), cols in got.items():
        for i, m in enumerate(models):
            if (m, s, c, e) not in ref.index:  # a model that never ran the scenario
                assert np.isnan(cols["estimate"][i])
                continue
            row = ref.loc[(m, s, c, e)]
            np.testing.assert_allclose(
                [cols[k][i] for k in COLS], row[COLS].to_numpy(float), rtol=0, atol=1e-9, err_msg=f"{s}/{e}/{m}"
            )
            checked += 1
    assert checked >= 2 * 9 * 25
    # every estimator, the learned ones from the tree file: the same numbers as the predictor, bit for bit
    got = tb.evaluate_artifact(art, anchor_block(art, rm, test))
    assert {e for (_, e) in got} == set(tb.JSON_BASE) | {"gbm", "gbm_joint", "bank_joint", "fill", "stack", "stack_own"}
    checked = 0
    for (s, e), cols in got.items():
        for i, m in enumerate(models):
            if (m, s, c, e) in ref.index:
                np.testing.assert_array_equal(
                    [cols[k][i] for k in COLS], ref.loc[(m, s, c, e)][COLS].to_numpy(float), err_msg=f"{s}/{e}/{m}"
                )
                checked += 1
    assert checked >= 2 * 13 * 25
    # one model at a time through the public function, every JSON estimator
    for row in test[:3]:
        m = rm.models[row]
        for e in tb.JSON_BASE:
            df = tb.estimate_from_artifact(art, answers_of(art, rm, row), estimator=e, use_learned=False)
            for r in df.itertuples(index=False):
                assert r.source == "json" and r.estimator == e == r.estimator_t2
                np.testing.assert_allclose(
                    [getattr(r, k) for k in COLS],
                    ref.loc[(m, r.scenario, c, e)][COLS].to_numpy(float),
                    rtol=0,
                    atol=1e-9,
                )


def test_learned_path_matches_the_predictors_selection(tmp_path):
    # the reference is predictor.estimate on the same single model: the gbm features include abilities whose last
    # bits depend on the batch, and a tree split can sit exactly on such a value
    rm, test, pred = fitted()
    art = saved(tmp_path)  # the selected clustering: tinybench rows
    sources = set()
    for row in test[:8]:
        ref = reference(pred, rm, [row], 5)
        m = rm.models[row]
        df = tb.estimate_from_artifact(art, answers_of(art, rm, row))  # learned_models.npz read, no pickle
        assert len(df) == sum((m, s, "selected", "tinybench") in ref.index for s in ("a", "b"))
        for r in df.itertuples(index=False):
            want = ref.loc[(m, r.scenario, "selected", "tinybench")]
            np.testing.assert_allclose([getattr(r, k) for k in COLS], want[COLS].to_numpy(float), rtol=0, atol=1e-12)
            assert want.source == f"{art['clustering']}/{r.estimator}|{art['clustering']}/{r.estimator_t2}"
            sources.add(r.source)
    # a learned estimator forced
    row = test[0]
    ref = reference(pred, rm, [row], 5)
    for e in ("gbm", "gbm_joint", "bank_joint", "stack"):
        df = tb.estimate_from_artifact(art, answers_of(art, rm, row), estimator=e)
        assert (df.source == "learned_models.npz").all()
        for r in df.itertuples(index=False):
            want = ref.loc[(rm.models[row], r.scenario, art["clustering"], e)]
            np.testing.assert_allclose([getattr(r, k) for k in COLS], want[COLS].to_numpy(float), rtol=0, atol=1e-12)
    # JSON only: the JSON recommendation
    df = tb.estimate_from_artifact(art, answers_of(art, rm, row), use_learned=False)
    assert (df.source == "json").all()
    assert df.estimator.tolist() == [art["scenarios"][s]["recommended"]["t1"] for s in df.scenario]
    # the freshly exported dict (tree arrays in memory) gives the same as the saved folder
    fresh = tb.export_tiny_benchmark(pred, leaderboard="sim", n=5, item_texts=texts(rm))
    pd.testing.assert_frame_equal(
        tb.estimate_from_artifact(fresh, answers_of(art, rm, row), estimator="stack"),
        tb.estimate_from_artifact(art, answers_of(art, rm, row), estimator="stack"),
    )


def test_missing_or_foreign_tree_file(tmp_path):
    rm, test, pred = fitted()
    # force the selection for scenario "b" at n=5 to the stack over gbm members (which estimator wins
    # validation in this simulated world is not the point here): it needs the tree file
    pred = copy.deepcopy(pred)
    selection = pred.named_steps["selector"].selection_
    c = selection[(5, "b", "tinybench")]["t1"][0]
    assert any(m.startswith("gbm") for m in pred.named_steps["stacks"].stacks_[(c, 5, "b", "stack")]["members"])
    selection[(5, "b", "tinybench")] = {"t1": (c, "stack"), "t2": (c, "stack")}
    tb.save_artifact(tb.export_tiny_benchmark(pred, leaderboard="sim", n=5, item_texts=texts(rm)), pred, tmp_path)
    art = tb.load_artifact(tmp_path)
    ans = answers_of(art, rm, next(r for r in test if np.isfinite(rm.scores[r]).all()))
    trees = tmp_path / "learned_models.npz"
    good = trees.read_bytes()
    assert tb.estimate_from_artifact(art, ans).set_index("scenario").source["b"] == "learned_models.npz"
    trees.write_bytes(b"not the trees")
    with pytest.raises(ArtifactError, match=r"learned_models\.npz: sha256 .* differs"):
        tb.estimate_from_artifact(art, ans)
    assert (tb.estimate_from_artifact(art, ans, use_learned=False).source == "json").all()  # the file is never read
    trees.unlink()
    df = tb.estimate_from_artifact(art, ans)  # falls back to the JSON estimators
    assert (df.source == "json").all()
    assert df.estimator.tolist() == [art["scenarios"][s]["recommended"]["t1"] for s in df.scenario]
    assert any("learned_models.npz not available" in x for x in df.attrs["notes"])
    with pytest.raises(AnswerError, match="not evaluable from the JSON"):
        tb.estimate_from_artifact(art, ans, estimator="gbm")
    # the trees of another artifact (n=10: other anchors, other feature widths), even with a JSON claiming their hash
    other = tmp_path / "other"
    tb.save_artifact(tb.export_tiny_benchmark(pred, leaderboard="sim", n=10), None, other)
    trees.write_bytes((other / "learned_models.npz").read_bytes())
    with pytest.raises(ArtifactError, match="differs from the"):
        tb.estimate_from_artifact(art, ans)
    raw = json.loads((tmp_path / "tiny_benchmark.json").read_text())
    raw["learned"]["sha256"] = hashlib.sha256(trees.read_bytes()).hexdigest()
    (tmp_path / "tiny_benchmark.json").write_text(json.dumps(raw))
    with pytest.raises(ArtifactError, match=r"learned_models\.npz: feature: node .* splits on feature"):
        tb.estimate_from_artifact(tmp_path, ans)
    trees.write_bytes(good)
    # a dict read back from the JSON is saved again with the predictor's trees; without them it cannot be
    with pytest.raises(ArtifactError, match="carries no tree arrays; pass the predictor"):
        tb.save_artifact(art, None, tmp_path / "again")
    tb.save_artifact(art, pred, tmp_path / "again")
    assert (tmp_path / "again" / "learned_models.npz").read_bytes()[:2] == b"PK"
    pd.testing.assert_frame_equal(
        tb.estimate_from_artifact(tmp_path / "again", ans), tb.estimate_from_artifact(art, ans)
    )


def test_json_stacks_without_learned_estimators(tmp_path):
    rm, test, pred = fitted(learned=False)
    art = saved(tmp_path, learned=False)
    assert {"stack", "stack_own"} <= set(art["json_estimators"])
    assert not art["learned_estimators"] and art["learned"] == {
        "file": None,
        "sha256": None,
        "fit_learned": False,
        "models": [],
        "bank": None,
    }
    assert not (tmp_path / "learned_models.npz").exists()
    c = art["clustering"]
    ref = reference(pred, rm, test, 5)
    got = tb.evaluate_json(art, anchor_block(art, rm, test), ["stack", "stack_own"])
    for (s, e), cols in got.items():
        for i, m in enumerate(np.asarray(rm.models, dtype=object)[test]):
            if (m, s, c, e) in ref.index:
                np.testing.assert_allclose(
                    [cols[k][i] for k in COLS], ref.loc[(m, s, c, e)][COLS].to_numpy(float), rtol=0, atol=1e-9
                )
    # with no learned estimator, the default answer is the predictor's tinybench selection, from the JSON alone
    row = test[1]
    df = tb.estimate_from_artifact(art, answers_of(art, rm, row))
    assert (df.source == "json").all()
    for r in df.itertuples(index=False):
        want = ref.loc[(rm.models[row], r.scenario, "selected", "tinybench")]
        np.testing.assert_allclose([getattr(r, k) for k in COLS], want[COLS].to_numpy(float), rtol=0, atol=1e-9)


def test_export_errors():
    rm, test, pred = fitted()
    with pytest.raises(ArtifactError, match="n=7 was not prepared"):
        tb.export_tiny_benchmark(pred, leaderboard="sim", n=7)
    with pytest.raises(ArtifactError, match="clustering 'random'"):
        tb.export_tiny_benchmark(pred, leaderboard="sim", n=5, clustering="random")
    with pytest.raises(ArtifactError, match="not fitted"):
        tb.export_tiny_benchmark(AnchorPredictor(), leaderboard="sim", n=10)


# ---------------------------------------------------------------------------------------------- errors
def test_answer_errors(tmp_path):
    rm, test, pred = fitted()
    art = saved(tmp_path)
    full_row = next(r for r in test if np.isfinite(rm.scores[r]).all())
    ans = answers_of(art, rm, full_row)
    a_items = art["scenarios"]["a"]["anchors"]["items"]
    non_anchor = next(i for i in art["scenarios"]["a"]["items"] if i not in a_items)

    with pytest.raises(AnswerError, match="no answers"):
        tb.estimate_from_artifact(art, {})
    with pytest.raises(AnswerError, match="unknown estimator 'tinybench'"):
        tb.estimate_from_artifact(art, ans, estimator="tinybench")
    with pytest.raises(AnswerError, match=r"not anchors.*'zz\.1'.*not items of this leaderboard"):
        tb.estimate_from_artifact(art, {**ans, "zz.1": 1.0})
    with pytest.raises(AnswerError, match="pool items that are not anchors"):
        tb.estimate_from_artifact(art, {**ans, non_anchor: 1.0})
    ok = tb.estimate_from_artifact(art, {**ans, non_anchor: 1.0}, allow_extra=True)
    pd.testing.assert_frame_equal(ok, tb.estimate_from_artifact(art, ans))
    for bad, msg in (
        (1.5, "outside"),
        (-0.1, "outside"),
        ("x", "not a number"),
        (float("nan"), "not a finite"),
        (None, "not a number"),
    ):
        with pytest.raises(AnswerError, match=msg):
            tb.estimate_from_artifact(art, {**ans, a_items[0]: bad})
    # a partly answered scenario: an error naming it, unless allow_missing
    part = {k: v for k, v in ans.items() if k not in a_items[:2]}
    with pytest.raises(AnswerError, match=r"scenario 'a': 2 of 5 anchors not answered"):
        tb.estimate_from_artifact(art, part)
    df = tb.estimate_from_artifact(art, part, allow_missing=True)
    assert df.set_index("scenario").answered.to_dict() == {"a": 3, "b": 5}
    Y = rm.scores[[full_row]].copy()
    Y[0, [rm.items.index(i) for i in a_items[:2]]] = np.nan
    ref = pred.estimate(Y, n_values=[5]).set_index(["scenario", "clustering", "estimator"])
    e = "anchor"
    got = tb.estimate_from_artifact(art, part, allow_missing=True, estimator=e).set_index("scenario")
    np.testing.assert_allclose(
        got.loc["a", COLS].to_numpy(float), ref.loc[("a", art["clustering"], e), COLS].to_numpy(float), atol=1e-9
    )
    # a scenario with no answer at all is skipped, with a note
    only_a = {k: v for k, v in ans.items() if k in a_items}
    df = tb.estimate_from_artifact(art, only_a)
    assert df.scenario.tolist() == ["a"]
    assert any("'b': no anchor answered, skipped" in x for x in df.attrs["notes"])


def test_read_answers(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("item,score,comment\nx.1,1,ok\nx.2,0.5,\n x.3 , 0 ,\n")
    assert tb.read_answers(p) == {"x.1": 1.0, "x.2": 0.5, "x.3": 0.0}
    p = tmp_path / "a.json"
    p.write_text(json.dumps({"x.1": 1, "x.2": 0.25, "x.3": True}))
    assert tb.read_answers(p) == {"x.1": 1.0, "x.2": 0.25, "x.3": 1.0}
    p.write_text(json.dumps([{"item": "x.1", "score": 0}, {"item": "x.2", "score": 1}]))
    assert tb.read_answers(p) == {"x.1": 0.0, "x.2": 1.0}

    def err(name, text, match):
        f = tmp_path / name
        f.write_text(text)
        with pytest.raises(AnswerError, match=match):
            tb.read_answers(f)

    err("h.csv", "x.1,1\nx.2,0\n", r"h\.csv: the CSV needs a header with 'item' and 'score'")
    err("r.csv", "item,score\nx.1,1\nx.2,yes\n", r"r\.csv, row 3 \(item 'x\.2'\): score 'yes' is not a number")
    err("o.csv", "item,score\nx.1,2\n", r"row 2 .*outside \[0, 1\]")
    err("e.csv", "item,score\nx.1,\n", r"row 2 .*empty score")
    err("d.csv", "item,score\nx.1,1\nx.1,0\n", r"row 3: item 'x\.1' appears twice")
    err("n.csv", "item,score\n", "no answers in the file")
    err("z.csv", "", "the file is empty")
    err("b.json", "{x.1: 1}", r"b\.json: not valid JSON")
    err("k.json", '{"x.1": 1, "x.1": 0}', r"k\.json: item 'x\.1' appears twice")
    err("l.json", '[{"item": "x.1"}]', r"l\.json: entry 0: expected an object with 'item' and 'score'")
    err("s.json", '"x"', "expected a JSON object")
    err("v.json", '{"x.1": "high"}', r"item 'x\.1': score 'high' is not a number")
    with pytest.raises(AnswerError, match=r"nope\.csv: no such file"):
        tb.read_answers(tmp_path / "nope.csv")


def test_artifact_format_errors(tmp_path):
    rm, test, pred = fitted()
    art = saved(tmp_path / "ok")
    ans = answers_of(art, rm, test[0])
    with pytest.raises(ArtifactError, match="holds no tiny_benchmark.json"):
        tb.load_artifact(tmp_path)
    with pytest.raises(ArtifactError, match="no tiny benchmark there"):
        tb.load_artifact(tmp_path / "missing")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ArtifactError, match="not valid JSON"):
        tb.load_artifact(bad)
    raw = {k: v for k, v in art.items() if k != "_folder"}
    for fmt, match in (
        ("something/1", "not a tinybench tiny benchmark"),
        (None, "not a tinybench tiny benchmark"),
        ("tinybench.tiny_benchmark/3", "format version 3 is not supported"),
        ("tinybench.tiny_benchmark/1", "version 1 is not supported: .* pickle.* re-export"),
    ):
        bad.write_text(json.dumps({**raw, "format": fmt}))
        with pytest.raises(ArtifactError, match=match):
            tb.load_artifact(bad)
        with pytest.raises(ArtifactError, match=match):
            tb.estimate_from_artifact({**raw, "format": fmt}, ans)
    bad.write_text(json.dumps({k: v for k, v in raw.items() if k != "scenarios"}))
    with pytest.raises(ArtifactError, match="lacks the key 'scenarios'"):
        tb.load_artifact(bad)
    # a JSON path works as well as the folder; the answers may be a file
    f = tmp_path / "ans.json"
    f.write_text(json.dumps(ans))
    pd.testing.assert_frame_equal(
        tb.estimate_from_artifact(tmp_path / "ok" / "tiny_benchmark.json", f), tb.estimate_from_artifact(art, ans)
    )
