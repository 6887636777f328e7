"""Each reader on a real slice, and each bad-input case with its error text."""

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from tinybench_assets.io.drops import DropError, read_drop
from tinybench_assets.io.pickle_drops import tinybenchmarks_scenario
from tinybench_assets_tests.conftest import write_tinybenchmarks_pickle


def test_long_parquet_responses(landing, openllm_slice):
    drop = read_drop(landing["incoming"] / "openllm" / "mmlu.responses.parquet", "openllm")
    src = openllm_slice["mmlu.responses"]
    assert drop.format == "long_parquet" and drop.kind == "responses"
    assert len(drop.responses) == len(src)
    assert drop.responses["score"].mean() == pytest.approx(src["score"].mean())
    assert drop.responses["subscenario"].nunique() == src["subscenario"].nunique()
    assert drop.partition_keys() == ["openllm.mmlu"]


def test_long_items_and_full_scores(landing):
    items = read_drop(landing["incoming"] / "openllm" / "arc.items.parquet", "openllm")
    assert items.kind == "items" and items.items["text"].str.contains("Question").all()
    fs = read_drop(landing["incoming"] / "openllm" / "arc.full_scores.parquet", "openllm")
    assert fs.kind == "full_scores" and fs.full_scores["full_score"].between(0, 1).all()


def test_long_csv_with_text_column(tmp_path, openllm_slice):
    df = openllm_slice["arc.responses"].head(200).assign(prompt="q?")
    path = tmp_path / "arc.csv"
    df.to_csv(path, index=False)
    drop = read_drop(path, "lb")
    assert drop.format == "long_csv" and len(drop.responses) == 200 and len(drop.items) == df["item"].nunique()


def test_routerdc_json(landing, routerdc_records):
    drop = read_drop(landing["incoming"] / "routerdc" / "mmlu_train.json", "routerdc")
    assert drop.format == "routerdc_json"
    assert drop.partition_keys() == ["routerdc.mmlu"]
    assert len(drop.items) == 60 and set(drop.items["split"]) == {"train"}
    assert drop.items["text"].iloc[0] == routerdc_records["mmlu_train.json"][0]["question"]
    assert len(drop.responses) == 60 * 7
    assert drop.binarize_rules == {"mmlu": "positive"}  # probabilities of the gold choice
    gsm = read_drop(landing["incoming"] / "routerdc" / "gsm8k-train.json", "routerdc")
    assert gsm.binarize_rules == {"gsm8k": "auto"}  # fractions of sampled answers


def test_tinybenchmarks_pickle(tmp_path, openllm_slice, monkeypatch):
    monkeypatch.setenv("TINYBENCH_TRUST_PICKLE_DROPS", "1")  # pickle drops are read only when trusted (issue 14)
    path = tmp_path / "lb.pickle"
    src = openllm_slice["mmlu.responses"]
    write_tinybenchmarks_pickle(path, src)
    drop = read_drop(path, "tiny")
    assert drop.format == "tinybenchmarks_pickle"
    assert drop.partition_keys() == ["tiny.mmlu"]
    assert len(drop.responses) == len(src)
    assert drop.responses["score"].sum() == src["score"].sum()
    assert tinybenchmarks_scenario("harness_arc_challenge_25") == "arc"
    assert tinybenchmarks_scenario("harness_truthfulqa_mc_0") == "truthfulqa"
    assert tinybenchmarks_scenario("harness_gsm8k_5") == "gsm8k"


# ---------------------------------------------------------------------- bad input
def _long(n=4):
    return pd.DataFrame(
        {
            "model": ["m"] * n,
            "scenario": "s",
            "subscenario": "s",
            "item": [f"i{j}" for j in range(n)],
            "score": [1, 0, 1, 0][:n],
        }
    )


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d.drop(columns=["score"]), "missing column(s) ['score']"),
        (lambda d: d.assign(score=[1, 0, 1.5, 0]), "row 3, column 'score': score 1.5 outside [0, 1]"),
        (lambda d: d.assign(score=[1, -0.1, 1, 0]), "row 2, column 'score': score -0.1 outside [0, 1]"),
        (lambda d: d.assign(score=[1, np.nan, 1, 0]), "row 2, column 'score': score is NaN"),
        (lambda d: d.assign(model=["m", None, "m", "m"]), "row 2, column 'model': missing value"),
        (
            lambda d: d.assign(item=["i0", "i0", "i1", "i2"]),
            "conflicting duplicate rows for model 'm', item 'i0' (rows 1, 2",
        ),
        (lambda d: d.assign(score=[1, "x", 1, 0]), "row 2, column 'score': score 'x' is not a number"),
    ],
)
def test_long_table_errors_name_file_row_and_problem(tmp_path, mutate, expected):
    path = tmp_path / "bad.csv"
    mutate(_long()).to_csv(path, index=False)
    with pytest.raises(DropError) as err:
        read_drop(path, "lb")
    assert str(err.value).startswith(f"file {path}")
    assert expected in str(err.value)


def test_exact_duplicates_are_merged(tmp_path):
    path = tmp_path / "dup.csv"
    pd.concat([_long(), _long().head(1)]).to_csv(path, index=False)
    assert len(read_drop(path, "lb").responses) == 4


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("empty.csv", b"", "empty file (0 bytes)"),
        ("header.csv", b"model,scenario,subscenario,item,score\n", "empty file: header but no data rows"),
        ("broken.parquet", b"this is not parquet", "unreadable file"),
        ("drop.xlsx", b"PK\x03\x04", "unknown format: suffix '.xlsx'"),
        ("mmlu_train.json", b"{not json", "unreadable JSON"),
        ("mmlu_test.json", b"[]", "empty file: the JSON list has no records"),
        ("mmlu_x.json", json.dumps({"a": 1}).encode(), "unknown format: expected a JSON list"),
        (
            "arc_train.json",
            json.dumps([{"question": "q", "scores": {"m": 0.5}}, {"question": "q2", "scores": {"m": 2}}]).encode(),
            "row 2, column 'scores': score 2 for model 'm' outside [0, 1]",
        ),
        (
            "arc_test.json",
            json.dumps([{"question": "q", "scores": {"m": None}}]).encode(),
            "row 1, column 'scores': score for model 'm' is None",
        ),
        ("gsm_train.json", json.dumps([{"scores": {"m": 1}}]).encode(), "row 1, column 'question': record lacks"),
        ("x.pkl", b"garbage", "unreadable pickle"),
        ("y.pkl", pickle.dumps({"foo": 1}), "unknown format: expected a dict with 'models' and 'data'"),
        (
            "z.pkl",
            pickle.dumps(
                {"models": ["a", "b"], "data": {"harness_gsm8k_5": {"correctness": np.array([[0, 1], [1, 3]])}}}
            ),
            "row 2, column 'harness_gsm8k_5': subscenario 'harness_gsm8k_5': score 3.0 for model 'b' outside [0, 1]",
        ),
    ],
)
def test_bad_files(tmp_path, name, content, expected, monkeypatch):
    monkeypatch.setenv("TINYBENCH_TRUST_PICKLE_DROPS", "1")  # the pickle cases test the reader's checks
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DropError) as err:
        read_drop(path, "lb")
    assert str(err.value).startswith(f"file {path}") and expected in str(err.value), str(err.value)
