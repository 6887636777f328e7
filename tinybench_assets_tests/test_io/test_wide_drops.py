"""Wide tables (RouterBench style, with per-(model, question) costs) and plain 0/1 matrices: detection,
validation, quarantine, costs in the store, idempotence and superseding versions. Data generated here."""

import json

import numpy as np
import pandas as pd
import pytest

from tinybench_assets.io.drops import DropError, landing_files, read_drop
from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.matrix_drops import detect_orientation
from tinybench_assets.io.store import Store
from tinybench_assets.io.table_layout import table_layout

MODELS = ["org/model-a", "org/model-b", "small-c"]
TABLES = ("drops", "landed_responses", "landed_costs", "items", "scenarios")


def _wide(n: int = 6, seed: int = 0) -> pd.DataFrame:
    """A RouterBench-like wide table: ids, prompt, eval_name, split, scores, costs, and non-model columns."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "sample_id": [f"q{i}" for i in range(n)],
            "prompt": [f"What is {i} + {i}?" for i in range(n)],
            "eval_name": "mmlu",
            "split": ["train" if i % 2 == 0 else "test" for i in range(n)],
        }
    )
    for j, m in enumerate(MODELS):
        df[m] = rng.integers(0, 2, n).astype(float)
        df[f"{m}|total_cost"] = np.round(rng.uniform(0, 0.01, n) * (j + 1), 6)
        df[f"{m}|model_response"] = [f"answer {i}" for i in range(n)]
    df["oracle_model_to_route_to"] = [MODELS[i % 3] for i in range(n)]
    return df


def _write(df: pd.DataFrame, path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)


def _land(tmp_path):
    return {"incoming": tmp_path / "incoming", "quarantine": tmp_path / "quarantine", "db": tmp_path / "tb.duckdb"}


def _ingest(store, land, **kw):
    return ingest_landing(store, land["incoming"], land["quarantine"], **kw)


def _snapshot(store):
    return {t: store.query(f"SELECT * FROM {t} ORDER BY ALL") for t in TABLES}


# ---------------------------------------------------------------------- wide tables
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_wide_table_with_costs_and_split_through_ingest(tmp_path, suffix):
    land = _land(tmp_path)
    df = _wide()
    df.loc[2, "org/model-b"] = np.nan  # model b did not answer q2: left out, and its cost with it
    df.loc[2, "org/model-b|total_cost"] = np.nan
    _write(df, land["incoming"] / "router" / f"bench{suffix}")
    store = Store(land["db"])
    report = _ingest(store, land)
    rel = f"router/bench{suffix}"
    assert report.ingested == [rel] and not report.quarantined
    assert report.partitions == {"router.mmlu"}
    assert any("3 model column(s)" in n for n in report.notes[rel])
    drop = store.query("SELECT format, kind, status, notes FROM drops").iloc[0]
    assert drop["format"] == f"wide_{suffix[1:]}" and drop["kind"] == "responses" and drop["status"] == "active"
    assert "oracle_model_to_route_to" in drop["notes"]  # ignored, and said so

    store.consolidate_responses("router.mmlu")
    resp = store.responses("router.mmlu")
    assert len(resp) == 6 * 3 - 1
    assert set(resp["model"]) == set(MODELS)
    expected = df.melt(id_vars=["sample_id"], value_vars=MODELS, var_name="model", value_name="score").dropna()
    got = resp.merge(expected, left_on=["item", "model"], right_on=["sample_id", "model"], suffixes=("", "_src"))
    assert len(got) == len(expected) and (got["score"] == got["score_src"]).all()

    items = store.query("SELECT item, text, split, subscenario FROM items WHERE leaderboard = 'router' ORDER BY item")
    assert items["item"].tolist() == [f"q{i}" for i in range(6)]
    assert items["text"].tolist() == df["prompt"].tolist() and items["split"].tolist() == df["split"].tolist()
    assert set(items["subscenario"]) == {"mmlu"}

    costs = store.costs("router.mmlu")
    assert list(costs.columns) == ["model", "item", "cost"]
    assert len(costs) == 6 * 3 - 1 and not ((costs["model"] == "org/model-b") & (costs["item"] == "q2")).any()
    for m in MODELS:
        src = df.set_index("sample_id")[f"{m}|total_cost"].dropna()
        mine = costs[costs["model"] == m].set_index("item")["cost"]
        pd.testing.assert_series_equal(mine.sort_index(), src.sort_index(), check_names=False)
    assert store.query("SELECT binarize_rule FROM scenarios WHERE partition_key = 'router.mmlu'")[
        "binarize_rule"
    ].tolist() == ["auto"]
    assert store.costs("router.other").empty and list(store.costs("router.other").columns) == ["model", "item", "cost"]


def test_routerbench_like_file_name_rule_and_ignored_columns(tmp_path):
    """No id/scenario/split columns: scenario and split from the file name, ids scenario.split.row;
    string, response and token-count columns are not models; '<model>|cost' is accepted."""
    df = _wide(5).drop(columns=["sample_id", "eval_name", "split"]).rename(columns={"prompt": "question"})
    df = df.rename(columns={"small-c|total_cost": "small-c|cost"})
    df["prompt_tokens"] = [120, 80, 333, 42, 97]  # numeric, outside [0, 1], no cost column: not a model
    df["judge_notes"] = ["ok", "ok", "bad", "ok", "meh"]
    path = tmp_path / "gsm8k-test.csv"
    df.to_csv(path, index=False)
    drop = read_drop(path, "router")
    assert drop.format == "wide_csv" and drop.partition_keys() == ["router.gsm8k"]
    assert sorted(drop.responses["model"].unique()) == sorted(MODELS)
    assert drop.items["item"].tolist() == [f"gsm8k.test.{i}" for i in range(5)]
    assert set(drop.items["split"]) == {"test"} and drop.items["text"].tolist() == df["question"].tolist()
    assert sorted(drop.costs["model"].unique()) == sorted(MODELS)
    small = drop.costs[drop.costs["model"] == "small-c"]["cost"].to_numpy()
    np.testing.assert_allclose(small, df["small-c|cost"].to_numpy())
    notes = " ".join(drop.notes)
    for col in ("oracle_model_to_route_to", "prompt_tokens", "judge_notes", "org/model-a|model_response"):
        assert repr(col) in notes, notes
    assert drop.binarize_rules == {"gsm8k": "auto"}


def test_wide_table_several_scenarios_and_no_costs(tmp_path):
    df = pd.DataFrame(
        {
            "id": [1, 2, 1, 2],
            "text": ["a", "b", "c", "d"],
            "scenario": ["ARC", "ARC", "gsm8k", "gsm8k"],
            "subscenario": ["easy", "hard", "gsm8k", "gsm8k"],
            "m1": [1, 0, 0.5, 1],
            "m2": [0, 0, 1, 1],
        }
    )
    path = tmp_path / "x.parquet"
    df.to_parquet(path, index=False)
    drop = read_drop(path, "lb")
    assert drop.format == "wide_parquet" and drop.partition_keys() == ["lb.arc", "lb.gsm8k"]
    assert drop.costs.empty and len(drop.responses) == 8  # ids repeat across scenarios, not within one
    assert drop.items.set_index(["scenario", "item"])["subscenario"].to_dict() == {
        ("arc", "1"): "easy",
        ("arc", "2"): "hard",
        ("gsm8k", "1"): "gsm8k",
        ("gsm8k", "2"): "gsm8k",
    }


def test_layout_detection_keeps_long_tables(tmp_path):
    items = pd.DataFrame({"item": ["a", "b"], "scenario": "s", "subscenario": "s", "prompt": ["p", "q"]})
    assert table_layout(tmp_path / "i.csv", items) == "long"  # an items table stays an items table
    wide = items.assign(m1=[1, 0], m2=[0, 1])
    assert table_layout(tmp_path / "w.csv", wide) == "wide"  # same columns + 2 model columns: wide
    long = pd.DataFrame({"model": ["m"], "scenario": "s", "item": ["a"], "score": [1]})
    assert table_layout(tmp_path / "l.csv", long) == "long"
    assert table_layout(tmp_path / "m.csv", pd.DataFrame({"row": ["x", "y"], "i1": [0, 1], "i2": [1, 1]})) == "matrix"
    with pytest.raises(DropError, match=r"unknown layout: columns found \['foo', 'bar'\]"):
        table_layout(tmp_path / "u.csv", pd.DataFrame({"foo": ["x"], "bar": ["y"]}))


# ---------------------------------------------------------------------- matrices
def _matrix(n_models: int, n_items: int, seed: int = 1, model_fmt: str = "model{}", item_fmt: str = "item{}"):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, (n_models, n_items)).astype(float)
    y[0, 1] = np.nan  # a missing cell
    return pd.DataFrame(
        y, index=[model_fmt.format(i) for i in range(n_models)], columns=[item_fmt.format(j) for j in range(n_items)]
    )


def _write_matrix(y: pd.DataFrame, path, rows: str, id_header: str = "id") -> None:
    frame = y if rows == "models" else y.T
    frame = frame.rename_axis(id_header).reset_index()
    _write(frame, path)


@pytest.mark.parametrize(
    "case, rows, sidecar, model_fmt, id_header, n_models, n_items, reason",
    [
        # sidecar says so, against what detection would say (more rows than columns, no '/')
        ("sidecar-file", "models", "{name}.meta.json", "model{}", "id", 8, 5, "sidecar bench.csv.meta.json"),
        ("sidecar-stem", "items", "{stem}.meta.json", "model{}", "id", 8, 5, "sidecar bench.meta.json"),
        ("slash-rows", "models", None, "org/model{}", "id", 8, 5, "row ids look like model ids"),
        ("slash-cols", "items", None, "org/model{}", "id", 8, 5, "column ids look like model ids"),
        ("shape-models", "models", None, "model{}", "id", 4, 9, "fewer rows (4) than columns (9)"),
        ("shape-items", "items", None, "model{}", "id", 4, 9, "more rows (9) than columns (4)"),
        ("header", "models", None, "model{}", "model", 9, 4, "the id column is named 'model'"),
    ],
)
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_matrix_both_orientations_through_ingest(
    tmp_path, suffix, case, rows, sidecar, model_fmt, id_header, n_models, n_items, reason
):
    land = _land(tmp_path)
    y = _matrix(n_models, n_items, model_fmt=model_fmt)
    path = land["incoming"] / "mat" / f"bench{suffix}"
    _write_matrix(y, path, rows, id_header)
    if sidecar:
        reason = reason.replace(".csv", suffix)
        (path.parent / sidecar.format(name=path.name, stem=path.stem)).write_text(
            json.dumps({"rows": rows, "scenario": "ARC"})
        )
    assert landing_files(land["incoming"]) == [path]  # the sidecar is no drop of its own
    store = Store(land["db"])
    report = _ingest(store, land)
    assert report.ingested == [f"mat/bench{suffix}"] and not report.quarantined
    scen = "arc" if sidecar else "bench"
    assert report.partitions == {f"mat.{scen}"}
    note = " ".join(report.notes[f"mat/bench{suffix}"])
    assert f"rows are {rows}" in note and reason in note and ("detected" in note) == (sidecar is None), note
    assert store.query("SELECT format FROM drops")["format"].tolist() == [f"matrix_{suffix[1:]}"]
    store.consolidate_responses(f"mat.{scen}")
    resp = store.responses(f"mat.{scen}")
    assert len(resp) == n_models * n_items - 1  # the NaN cell is left out
    got = resp.pivot(index="model", columns="item", values="score").reindex(index=y.index, columns=y.columns)
    pd.testing.assert_frame_equal(got, y, check_names=False)
    assert store.costs(f"mat.{scen}").empty


def test_matrix_sidecar_split_values_and_rerun(tmp_path):
    land = _land(tmp_path)
    y = _matrix(3, 4)
    y.iloc[1, 2] = 0.25
    path = land["incoming"] / "mat" / "probs.csv"
    _write_matrix(y, path, "models")
    side = path.with_name("probs.csv.meta.json")
    side.write_text(json.dumps({"rows": "models", "split": "Test", "subscenario": "algebra", "values": "scores"}))
    store = Store(land["db"])
    assert _ingest(store, land).ingested == ["mat/probs.csv"]
    items = store.query("SELECT item, text, split, subscenario FROM items ORDER BY item")
    assert items["item"].tolist() == list(y.columns) and set(items["split"]) == {"test"} and items["text"].isna().all()
    assert store.query("SELECT DISTINCT subscenario FROM landed_responses")["subscenario"].tolist() == ["algebra"]
    before = _snapshot(store)
    again = _ingest(store, land)
    assert again.skipped == ["mat/probs.csv"] and not again.ingested
    for t, df in _snapshot(store).items():
        pd.testing.assert_frame_equal(df, before[t])
    # a changed sidecar alone is a new version of the drop: it supersedes the old one
    side.write_text(json.dumps({"rows": "items", "values": "scores"}))
    assert _ingest(store, land).ingested == ["mat/probs.csv"]
    assert store.query("SELECT status FROM drops ORDER BY seq")["status"].tolist() == ["superseded", "active"]
    assert set(store.query("SELECT model FROM landed_responses")["model"]) == set(y.columns)


def test_matrix_items_keep_text_from_an_earlier_wide_drop(tmp_path):
    land = _land(tmp_path)
    _write(_wide(4).drop(columns=["split"]), land["incoming"] / "r" / "a_wide.csv")
    y = pd.DataFrame([[1.0, 0.0, 1.0, 1.0]], index=["new/model"], columns=[f"q{i}" for i in range(4)])
    mpath = land["incoming"] / "r" / "b_matrix.csv"
    _write_matrix(y, mpath, "models")
    mpath.with_name("b_matrix.meta.json").write_text(json.dumps({"scenario": "mmlu", "split": "train"}))
    store = Store(land["db"])
    assert _ingest(store, land).ingested == ["r/a_wide.csv", "r/b_matrix.csv"]
    items = store.query("SELECT item, text, split FROM items ORDER BY item")
    assert items["text"].tolist() == [f"What is {i} + {i}?" for i in range(4)]  # not erased by the matrix
    assert set(items["split"]) == {"train"}  # the matrix added the split


def test_detect_orientation_rules():
    assert detect_orientation("model", ["a"], ["x", "y"])[0] == "models"
    assert detect_orientation("item", ["a", "b", "c"], ["x"])[0] == "items"
    assert detect_orientation("", ["a/b", "c/d"], ["1", "2", "3"])[0] == "models"
    assert detect_orientation("", ["1", "2"], ["a/b", "c/d", "e/f"])[0] == "items"
    assert detect_orientation("", ["1", "2"], ["x", "y"])[0] is None


# ---------------------------------------------------------------------- bad files
def _wide_csv(mutate=None, drop_cols=()) -> bytes:
    df = _wide(4)
    if mutate:
        mutate(df)
    return df.drop(columns=list(drop_cols)).to_csv(index=False).encode()


def _set(col, row, value):
    def f(df):
        df[col] = df[col].astype(object)
        df.loc[row, col] = value

    return f


def _same_question(df, a: int, b: int, differ: str | None = None) -> None:
    """Row ``b`` made a copy of row ``a`` (the same question listed twice); ``differ``: a model scored 1 and 0."""
    df.loc[b] = df.loc[a]
    if differ:
        df.loc[a, differ], df.loc[b, differ] = 1.0, 0.0


def _matrix_csv(junk=None, square=False) -> bytes:
    rows = ["m1", "m2", "m3"] if square else ["m1", "m2"]
    df = pd.DataFrame(
        {"id": rows, "i1": [1, 0, 1][: len(rows)], "i2": [0, 0, 1][: len(rows)], "i3": [1, 1, 0][: len(rows)]}
    )
    if junk is not None:
        df["i3"] = df["i3"].astype(object)
        df.loc[1, "i3"] = junk
    return df.to_csv(index=False).encode()


BAD = [
    (
        "range.csv",
        _wide_csv(_set("org/model-b", 2, 1.5)),
        None,
        "row 3, column 'org/model-b': score 1.5 outside [0, 1]",
    ),
    ("text.csv", _wide_csv(_set("small-c", 1, "abc")), None, "row 2, column 'small-c': score 'abc' is not a number"),
    (
        "negcost.csv",
        _wide_csv(_set("small-c|total_cost", 1, -0.5)),
        None,
        "row 2, column 'small-c|total_cost': cost -0.5 is negative",
    ),
    (
        "nancost.csv",
        _wide_csv(_set("org/model-a|total_cost", 3, np.nan)),
        None,
        "row 4, column 'org/model-a|total_cost': cost is missing (NaN/empty) for a scored cell",
    ),
    (
        "infcost.csv",
        _wide_csv(_set("org/model-a|total_cost", 0, np.inf)),
        None,
        "row 1, column 'org/model-a|total_cost': cost inf is not finite",
    ),
    (
        "junkcost.csv",
        _wide_csv(_set("org/model-a|total_cost", 0, "free")),
        None,
        "row 1, column 'org/model-a|total_cost': cost 'free' is not a number",
    ),
    (
        "dupid.csv",
        _wide_csv(_set("sample_id", 2, "q0")),
        None,
        "row 3, column 'sample_id': question id 'q0' (rows 1, 3) listed twice with different 'prompt'",
    ),
    (
        "twice.csv",
        _wide_csv(lambda df: _same_question(df, 0, 2, differ="small-c")),
        None,
        "row 3, column 'small-c': question id 'q0' (rows 1, 3): 'small-c' scored twice with different values (1.0, 0.0)",
    ),
    ("notext.csv", _wide_csv(_set("prompt", 1, None)), None, "row 2, column 'prompt': missing question text"),
    (
        "nomodels.csv",
        _wide_csv(drop_cols=MODELS + [f"{m}|total_cost" for m in MODELS]),
        None,
        "no model score columns: a model column is numeric",
    ),
    (
        "orphancost.csv",
        _wide_csv(drop_cols=["small-c"]),
        None,
        "column 'small-c|total_cost': cost column without a model: its score column 'small-c' is missing",
    ),
    ("dupcol.csv", b"prompt,m1,m2,m1\nq,1,0,1\n", None, "column 'm1': column listed twice in the header"),
    ("junk.csv", _matrix_csv("x"), None, "row 2, column 'i3': value 'x' is not a number"),
    ("two.csv", _matrix_csv(2), None, "row 2, column 'i3': value 2.0 is not 0 or 1"),
    ("half.csv", _matrix_csv(0.5), '{"rows": "models"}', "row 2, column 'i3': value 0.5 is not 0 or 1"),
    (
        "half2.csv",
        _matrix_csv(1.5),
        '{"rows": "items", "values": "scores"}',
        "row 2, column 'i3': score 1.5 outside [0, 1]",
    ),
    (
        "square.csv",
        _matrix_csv(square=True),
        None,
        "cannot tell whether rows are models or items: square matrix (3 x 3)",
    ),
    (
        "dupid_m.csv",
        b"id,i1,i2,i3\nm1,1,0,1\nm1,0,0,1\n",
        None,
        "row 2, column 'id': row id 'm1' listed twice (rows 1, 2)",
    ),
    ("badkey.csv", _matrix_csv(), '{"row": "models"}', "sidecar badkey.csv.meta.json: unknown key(s) ['row']"),
    ("badrows.csv", _matrix_csv(), '{"rows": "columns"}', "'rows' is 'columns', expected 'models' or 'items'"),
    ("badjson.csv", _matrix_csv(), "{rows: models", "sidecar badjson.csv.meta.json is not valid JSON"),
    ("unknown.csv", b"foo,bar\nx,y\n", None, "unknown layout: columns found ['foo', 'bar']"),
]


@pytest.mark.parametrize("name, content, sidecar, expected", BAD, ids=[b[0] for b in BAD])
def test_bad_wide_and_matrix_files_are_quarantined(tmp_path, name, content, sidecar, expected):
    land = _land(tmp_path)
    good = _wide(4, seed=3)
    _write(good, land["incoming"] / "lb" / "mmlu_train.parquet")
    store = Store(land["db"])
    assert _ingest(store, land).ingested == ["lb/mmlu_train.parquet"]
    before = _snapshot(store)
    bad = land["incoming"] / "lb" / name
    bad.write_bytes(content)
    if sidecar is not None:
        bad.with_name(name + ".meta.json").write_text(sidecar)
    other = land["incoming"] / "lb" / "zz_other.csv"
    _write(_wide(3, seed=4).assign(eval_name="arc"), other)
    report = _ingest(store, land)
    rel = f"lb/{name}"
    assert list(report.quarantined) == [rel] and report.ingested == ["lb/zz_other.csv"]
    err = report.quarantined[rel]
    assert err.startswith(f"file {bad}") and expected in err, err  # names file, row/column and problem
    assert not bad.exists()
    moved = land["quarantine"] / "lb" / name
    assert moved.read_bytes() == content and expected in (moved.parent / f"{name}.error.txt").read_text()
    # what was stored before is unchanged; the only new rows are the other file's
    new_ids = store.query("SELECT drop_id FROM drops WHERE path = 'lb/zz_other.csv'")["drop_id"].tolist()
    assert len(new_ids) == 1
    for t, df in _snapshot(store).items():
        if t == "scenarios":
            df = df[df["partition_key"] != "lb.arc"]
        elif "drop_id" in df:
            df = df[~df["drop_id"].isin(new_ids)]
        pd.testing.assert_frame_equal(df.reset_index(drop=True), before[t].reset_index(drop=True), check_dtype=False)
    assert len(store.costs("lb.mmlu")) == 4 * 3
    again = _ingest(store, land)
    assert not again.ingested and not again.quarantined


# ---------------------------------------------------------------------- idempotence and versions
def test_redrop_adds_nothing_and_changed_file_supersedes_with_its_costs(tmp_path):
    land = _land(tmp_path)
    path = land["incoming"] / "router" / "mmlu_train.csv"
    v1 = _wide(6)
    _write(v1, path)
    store = Store(land["db"])
    assert _ingest(store, land).ingested == ["router/mmlu_train.csv"]
    before = _snapshot(store)
    assert len(before["landed_costs"]) == 18
    # the same bytes again (rewritten in place): nothing added
    _write(v1, path)
    again = _ingest(store, land)
    assert again.skipped == ["router/mmlu_train.csv"] and not again.ingested
    for t, df in _snapshot(store).items():
        pd.testing.assert_frame_equal(df, before[t])
    # a changed version: model b loses its cost column, the other costs change
    v2 = v1.drop(columns=["org/model-b|total_cost"])
    v2["org/model-a|total_cost"] = 0.5
    v2["small-c|total_cost"] = 0.25
    _write(v2, path)
    assert _ingest(store, land).ingested == ["router/mmlu_train.csv"]
    status = store.query("SELECT drop_id, status FROM drops ORDER BY seq")
    assert status["status"].tolist() == ["superseded", "active"]
    old_id = status["drop_id"].iloc[0]
    for t in ("landed_costs", "landed_responses"):
        assert store.query(f"SELECT count(*) AS n FROM {t} WHERE drop_id = ?", [old_id])["n"].iloc[0] == 0
    costs = store.costs("router.mmlu")
    assert sorted(costs["model"].unique()) == ["org/model-a", "small-c"]  # model b's old costs are gone
    assert costs.groupby("model")["cost"].unique().apply(list).to_dict() == {"org/model-a": [0.5], "small-c": [0.25]}


def test_latest_drop_wins_per_cost_cell(tmp_path):
    land = _land(tmp_path)
    first = _wide(4)
    _write(first, land["incoming"] / "r" / "a.csv")
    store = Store(land["db"])
    _ingest(store, land)
    fix = first.head(1)[["sample_id", "prompt", "eval_name", "split", "small-c", "small-c|total_cost", "org/model-a"]]
    fix = fix.assign(**{"small-c|total_cost": 0.125})
    _write(fix, land["incoming"] / "r" / "b_fix.csv")
    assert _ingest(store, land).ingested == ["r/b_fix.csv"]
    costs = store.costs("r.mmlu").set_index(["model", "item"])["cost"]
    assert costs[("small-c", "q0")] == 0.125
    assert costs[("small-c", "q1")] == first.loc[1, "small-c|total_cost"]
    assert len(costs) == 12


def test_one_question_split_over_rows_merges_identical_rows_collapse_unscored_rows_skip(tmp_path):
    """RouterBench's shape of a messy file: one question in two rows, one holding a model's score (and cost), the other
    every other model's; an exact duplicate row; a row with no score. All land, each noted; nothing quarantined."""
    land = _land(tmp_path)
    df = _wide(6, seed=5)
    split = df.loc[[3]].copy()  # q3 again: model-a's score and cost only; the original row loses them
    for m in MODELS[1:]:
        split[m] = np.nan
        split[f"{m}|total_cost"] = np.nan
    df.loc[3, "org/model-a"], df.loc[3, "org/model-a|total_cost"] = np.nan, np.nan
    empty = df.loc[[5]].copy()
    empty["sample_id"], empty["prompt"] = "q9", "Nobody answered this"
    for m in MODELS:
        empty[m] = np.nan
        empty[f"{m}|total_cost"] = np.nan
    messy = pd.concat([df, split, df.loc[[1]], empty], ignore_index=True)
    _write(messy, land["incoming"] / "lb" / "mmlu_train.csv")
    store = Store(land["db"])
    report = _ingest(store, land)
    assert report.quarantined == {} and report.ingested == ["lb/mmlu_train.csv"]
    notes = " ".join(report.notes["lb/mmlu_train.csv"])
    assert "split over rows scoring different models, merged" in notes and "q3" in notes
    assert "identical rows, collapsed to one: q1" in notes and "no score at all skipped: rows 9" in notes
    resp = store.query("SELECT item, model, score FROM landed_responses")
    assert len(resp) == 6 * len(MODELS) and not resp.duplicated(["item", "model"]).any()
    q3 = resp[resp["item"] == "q3"].set_index("model")["score"]
    assert q3.to_dict() == {m: float(_wide(6, seed=5).loc[3, m]) for m in MODELS}  # every model's score, once
    costs = store.query("SELECT item, model, cost FROM landed_costs WHERE item = 'q3'").set_index("model")["cost"]
    assert costs["org/model-a"] == pytest.approx(float(_wide(6, seed=5).loc[3, "org/model-a|total_cost"]))
    assert sorted(store.query("SELECT item FROM items")["item"]) == [f"q{i}" for i in range(6)]


def test_an_unnamed_index_column_is_ignored_and_noted(tmp_path):
    """pandas' to_csv(index=True) writes an unnamed index column ("Unnamed: 0" when read back, or an empty header): it
    is not a model, and the drop's notes say it was ignored."""
    import numpy as np

    from tinybench_assets.io.drops import read_drop

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "sample_id": [f"q{i}" for i in range(12)],
            "prompt": [f"question {i}" for i in range(12)],
            **{f"org/model-{k}": rng.integers(0, 2, 12).astype(float) for k in range(4)},
        }
    )
    df.to_csv(tmp_path / "quiz.csv")
    df.reset_index().rename(columns={"index": ""}).to_csv(tmp_path / "exam.csv", index=False)
    for name in ("quiz.csv", "exam.csv"):
        drop = read_drop(tmp_path / name, "lb")
        assert sorted(drop.responses["model"].unique()) == [f"org/model-{k}" for k in range(4)]
        assert len(drop.responses) == 48 and any("'Unnamed: 0' (an unnamed index column" in n for n in drop.notes), (
            drop.notes
        )


def test_routellm_files_land_as_dropped_booleans_and_repeated_prompts_kept_distinct():
    """RouteLLM's evaluation files as a user drops them: True/False scores, no split, no ids, answer-text columns, and
    in MMLU 105 rows that repeat an earlier row's prompt (kept as distinct questions, and the notes say so)."""
    from tinybench_assets_tests.conftest import SHARED, _need_shared

    _need_shared()
    mmlu = read_drop(SHARED / "routellm" / "mmlu.csv", "routellm")
    assert len(mmlu.items) == 14042 and mmlu.items["item"].is_unique and mmlu.items["split"].isna().all()
    assert set(mmlu.responses["score"]) == {0.0, 1.0} and mmlu.responses["subscenario"].nunique() == 57
    assert any("105 row(s) repeat an earlier row's question text" in n and "kept as distinct" in n for n in mmlu.notes)
    gsm = read_drop(SHARED / "routellm" / "gsm8k.csv", "routellm")
    assert len(gsm.items) == 1319 and set(gsm.responses["model"]) == {
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "gpt-4-1106-preview",
    }
    assert any("'gpt-4-1106-preview_response' (response text of model" in n for n in gsm.notes)  # prices output tokens
    assert len(gsm.response_tokens) == len(gsm.responses)
