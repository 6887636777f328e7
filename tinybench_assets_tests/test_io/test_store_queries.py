"""The store's named reads (io/queries.py, mixed into Store) on a small store built here, and their empty cases."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tinybench_assets.io.drops import split_partition_key
from tinybench_assets.io.store import Store

KEY = "lb.sc"


@pytest.fixture
def empty(tmp_path) -> Store:
    return Store(tmp_path / "empty.duckdb")


@pytest.fixture
def db(tmp_path) -> Store:
    s = Store(tmp_path / "x.duckdb")
    s.execute(
        "INSERT INTO drops (drop_id, seq, path, leaderboard, format, kind, n_rows, partitions, status, ingested_at) VALUES "
        "('d1', 1, 'lb/a.csv', 'lb', 'long_csv', 'responses', 4, 'lb.sc,lb.other', 'active', TIMESTAMP '2024-01-01 00:00:00'),"
        "('d0', 0, 'lb/old.csv', 'lb', 'long_csv', 'responses', 1, 'lb.sc', 'superseded', TIMESTAMP '2025-01-01 00:00:00'),"
        "('d2', 2, 'lb/b.csv', 'lb', 'long_csv', 'responses', 1, 'lb.sc', 'active', TIMESTAMP '2024-01-02 00:00:00')"
    )
    s.execute(
        "INSERT INTO scenarios VALUES ('lb.sc', 'lb', 'sc', 'threshold', now()), ('lb.other', 'lb', 'other', 'auto', now()),"
        "('lb.idle', 'lb', 'idle', 'auto', now())"
    )
    s.execute(
        "INSERT INTO quarantine VALUES ('lb/bad.csv', NULL, 'bad', NULL, now()), ('lb/worse.csv', NULL, 'bad', NULL, now())"
    )
    s.execute(
        "INSERT INTO items VALUES ('lb', 'sc', 'i1', 's', 'What?', 'test', 'd1'), ('lb', 'sc', 'i2', 's', NULL, 'train', 'd1'),"
        "('lb', 'other', 'o1', 's', 'Other?', NULL, 'd1'), ('zz', 'sc', 'z1', 's', 'Z?', 'test', 'd1')"
    )
    s.execute(
        "INSERT INTO full_scores VALUES ('lb', 'sc', 'm1', 0.5, NULL, 'd1'), ('lb', 'other', 'm1', 0.7, NULL, 'd1'),"
        "('zz', 'sc', 'm9', 0.1, NULL, 'd1')"
    )
    s.replace_partition(
        {
            "responses": pd.DataFrame(
                {
                    "leaderboard": "lb",
                    "scenario": "sc",
                    "subscenario": ["s", "s", "t", "t", "t"],
                    "item": ["i1", "i2", "i1", "i2", "i2"],
                    "model": ["m1", "m1", "m2", "m2", "m2"],
                    "score": [1.0, 0.0, 1.5, 0.25, 0.25],
                    "drop_id": ["d1", "d1", "d1", "d1", "d2"],
                }
            )
        },
        KEY,
    )
    s.replace_partition({"binarized": pd.DataFrame({"model": ["m1", "m2"], "item": ["i1", "i1"], "y": [1, 0]})}, KEY)
    s.execute(
        "INSERT INTO binarization VALUES ('lb.sc', 'threshold', 0.5, 0.6, 0.5, 0.1, now()),"
        "('lb.other', 'auto', NULL, 0.4, 0.4, 0.0, now()), ('lbx.sc', 'auto', NULL, 0, 0, 0, now())"
    )
    s.replace_partition(
        {
            "matrix_items": pd.DataFrame(
                {
                    "col": [1, 0],
                    "item": ["i2", "i1"],
                    "subscenario": "s",
                    "balance_weight": [0.5, 1.5],
                    "split": ["train", "test"],
                    "mean_score": [0.2, 0.8],
                }
            ),
            "matrix_models": pd.DataFrame(
                {"row": [0, 1], "model": ["m2", "m1"], "n_items": [2, 1], "accuracy": [0.5, 1.0]}
            ),
        },
        KEY,
    )
    s.replace_partition(
        {"model_splits": pd.DataFrame({"model": ["m1", "m2", "m3"], "split": ["train", "test", "train"], "seed": 0})},
        "lb",
    )
    s.replace_partition(
        {
            "irt_items": pd.DataFrame(
                {
                    "item": ["i2", "i1"],
                    "scenario": "sc",
                    "subscenario": "s",
                    "b": [0.1, -0.2],
                    "a": [[1.0, 2.0], [0.5, 0.5]],
                }
            ),
            "irt_models": pd.DataFrame({"model": ["m1"], "theta": [[0.3, 0.4]]}),
        },
        KEY,
    )
    s.replace_partition(
        {
            "irt_items": pd.DataFrame(
                {"item": ["o1"], "scenario": "other", "subscenario": "s", "b": [0.0], "a": [[1.0]]}
            )
        },
        "lb.other",
    )
    s.replace_partition(
        {"irt_items": pd.DataFrame({"item": ["i1"], "scenario": "sc", "subscenario": "s", "b": [0.0], "a": [[1.0]]})},
        "lb",
    )  # the joint fit
    s.replace_partition(
        {"irt_items": pd.DataFrame({"item": ["x"], "scenario": "sc", "subscenario": "s", "b": [0.0], "a": [[1.0]]})},
        "lbxother.sc",
    )
    s.execute(
        "INSERT INTO irt_fits (partition_key, scope, dim, n_models, n_items, loss, seed) VALUES ('lb.sc', 'scenario', 2, 1, 2, 0.5, 7)"
    )
    return s


def test_split_partition_key():
    assert split_partition_key("openllm.mmlu") == ("openllm", "mmlu")
    assert split_partition_key("lb.a.b") == ("lb", "a.b")  # everything after the first dot, as split(".", 1)
    for bad in ("openllm", "openllm."):
        with pytest.raises(ValueError, match="leaderboard.scenario"):
            split_partition_key(bad)


def test_drops_landing_and_quarantine(db, empty):
    act = db.active_drops()
    assert list(act.columns) == ["drop_id", "seq", "partitions"]
    assert act["drop_id"].tolist() == ["d1", "d2"] and act["seq"].tolist() == [1, 2]
    landed = db.partition_landed_at()
    assert landed.to_dict() == {
        "lb.sc": pd.Timestamp("2024-01-02").timestamp(),
        "lb.other": pd.Timestamp("2024-01-01").timestamp(),
    }
    assert db.n_quarantined() == 2
    assert db.binarize_rule(KEY) == "threshold" and db.binarize_rule("lb.nothing") is None
    assert empty.active_drops().empty and list(empty.active_drops().columns) == ["drop_id", "seq", "partitions"]
    assert empty.partition_landed_at().to_dict() == {}
    assert empty.n_quarantined() == 0 and empty.binarize_rule(KEY) is None


def test_items_and_full_scores(db, empty):
    full = db.full_scores("lb").sort_values("scenario")
    assert list(full.columns) == ["model", "scenario", "full_score"]
    assert full["full_score"].tolist() == [0.7, 0.5]
    texts = db.item_texts("lb")
    assert list(texts.columns) == ["item", "text"] and sorted(texts["item"]) == ["i1", "i2", "o1"]
    assert texts.set_index("item")["text"].isna().to_dict() == {"i1": False, "i2": True, "o1": False}
    assert db.item_texts("lb", "sc").set_index("item")["text"].to_dict().keys() == {"i1", "i2"}
    assert db.landed_item_split(KEY).to_dict() == {"i1": "test", "i2": "train"}
    assert db.full_scores("none").empty and list(empty.full_scores("lb").columns) == ["model", "scenario", "full_score"]
    assert empty.item_texts("lb").empty and empty.item_texts("lb", "sc").empty
    assert empty.landed_item_split(KEY).empty


def test_responses(db, empty):
    st = db.response_stats(KEY)
    assert (st["n_rows"], st["models"], st["items"], st["subscenarios"], st["drops"], st["out_of_range"]) == (
        5,
        2,
        2,
        2,
        2,
        1,
    )
    assert st["min_score"] == 0.0 and st["max_score"] == 1.5 and st["mean_score"] == pytest.approx(3.0 / 5)
    dups = db.response_duplicates(KEY)
    assert dups.to_dict("records") == [{"model": "m2", "item": "i2", "copies": 2}]
    bad = db.responses_out_of_range(KEY)
    assert bad.to_dict("records") == [{"model": "m2", "item": "i1", "score": 1.5}]
    assert db.responses_out_of_range(KEY, limit=0).empty
    e = empty.response_stats(KEY)
    assert e["n_rows"] == 0 and e["out_of_range"] == 0 and e["models"] == 0
    assert all(math.isnan(float(e[c])) for c in ("mean_score", "min_score", "max_score"))
    assert empty.response_duplicates(KEY).empty and empty.responses_out_of_range(KEY).empty
    assert list(empty.responses_out_of_range(KEY).columns) == ["model", "item", "score"]


def test_binarized_and_binarization(db, empty):
    y = db.binarized(KEY).sort_values("model")
    assert y.to_dict("records") == [{"model": "m1", "item": "i1", "y": 1.0}, {"model": "m2", "item": "i1", "y": 0.0}]
    assert y["y"].dtype == float
    row = db.binarization(KEY)
    assert len(row) == 1 and row["rule"].iloc[0] == "threshold" and row["mean_abs_shift"].iloc[0] == 0.1
    board = db.board_binarization("lb").sort_values("partition_key")
    assert list(board.columns) == ["partition_key", "rule", "threshold"]
    assert board["partition_key"].tolist() == ["lb.other", "lb.sc"]  # not lbx.sc
    assert math.isnan(board["threshold"].iloc[0]) and board["threshold"].iloc[1] == 0.5
    assert empty.binarized(KEY).empty and empty.binarization(KEY).empty and empty.board_binarization("lb").empty


def test_board_prefix_is_literal(tmp_path):
    """A leaderboard name with '_' (a LIKE wildcard) matches only its own scenarios."""
    s = Store(tmp_path / "u.duckdb")
    s.execute(
        "INSERT INTO binarization VALUES ('open_llm.a', 'auto', NULL, 0, 0, 0, now()), ('openXllm.b', 'auto', NULL, 0, 0, 0, now())"
    )
    s.replace_partition(
        {"irt_items": pd.DataFrame({"item": ["x"], "scenario": "a", "subscenario": "s", "b": [0.0], "a": [[1.0]]})},
        "openXllm.a",
    )
    assert s.board_binarization("open_llm")["partition_key"].tolist() == ["open_llm.a"]
    assert s.irt_scenario_keys("open_llm") == []


def test_matrix(db, empty):
    items = db.matrix_items(KEY)
    assert list(items.columns) == ["col", "item", "subscenario", "balance_weight", "split", "mean_score"]
    assert items["item"].tolist() == ["i1", "i2"]  # matrix order
    models = db.matrix_models(KEY)
    assert list(models.columns) == ["row", "model", "n_items", "accuracy"] and models["model"].tolist() == ["m1", "m2"]
    assert db.item_split(KEY).to_dict() == {"i2": "train", "i1": "test"}
    q = db.matrix_questions(KEY)
    assert list(q.columns) == ["item", "split", "text"] and q["item"].tolist() == ["i1", "i2"]
    assert q["text"].iloc[0] == "What?" and pd.isna(q["text"].iloc[1])
    summ = db.scenario_summary()
    assert summ.to_dict("records") == [
        {
            "partition_key": KEY,
            "models": 2,
            "items": 2,
            "mean_acc_pct": 75.0,
            "binarization": "threshold",
            "threshold": 0.5,
        }
    ]
    assert empty.matrix_items(KEY).empty and empty.matrix_models(KEY).empty and empty.item_split(KEY).empty
    assert empty.matrix_questions(KEY).empty and empty.scenario_summary().empty
    assert list(empty.scenario_summary().columns) == [
        "partition_key",
        "models",
        "items",
        "mean_acc_pct",
        "binarization",
        "threshold",
    ]


def test_model_split_and_irt(db, empty):
    split = db.model_split("lb")
    assert split.to_dict() == {"m1": "train", "m2": "test", "m3": "train"} and split.get("nobody") is None
    assert db.n_models("lb") == 3 and db.n_models(KEY) == 0
    fit = db.irt_fit_summary(KEY)
    assert len(fit) == 1 and int(fit["dim"].iloc[0]) == 2 and int(fit["seed"].iloc[0]) == 7
    items = db.irt_items(KEY)
    assert list(items.columns) == ["item", "b", "a"] and sorted(items["item"]) == ["i1", "i2"]
    assert [len(a) for a in items["a"]] == [2, 2]
    models = db.irt_models(KEY)
    assert list(models.columns) == ["model", "theta"] and list(models["theta"].iloc[0]) == [0.3, 0.4]
    w = db.weighted_irt_items(KEY)
    assert list(w.columns) == ["item", "b", "a", "w"] and w["item"].tolist() == ["i1", "i2"]
    assert w["w"].tolist() == [1.5, 0.5]
    assert db.weighted_irt_items("lb.other")["w"].tolist() == [1.0]  # no matrix weight stored: 1
    assert db.irt_scenario_keys("lb") == ["lb.other", "lb.sc"]  # not the joint fit "lb", not lbxother.sc
    assert empty.model_split("lb").empty and empty.n_models("lb") == 0 and empty.irt_fit_summary(KEY).empty
    assert empty.irt_items(KEY).empty and empty.irt_models(KEY).empty and empty.weighted_irt_items(KEY).empty
    assert empty.irt_scenario_keys("lb") == []


def test_an_evaluation_supersedes_only_its_own_models_earlier_rows(empty):
    """write_evaluation keeps the history per (leaderboard, model): evaluating B leaves A's latest rows latest, and A
    evaluated again supersedes A's first rows only."""
    from tinybench_assets.io.evaluation_rows import EVALUATION_COLUMNS

    def rows(model: str, estimate: float) -> pd.DataFrame:
        base = dict.fromkeys(EVALUATION_COLUMNS, "x")
        base.update(leaderboard="lb", model=model, n_answers=30, n_anchors=30, anchors_missing=0)
        for c in ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2"):
            base[c] = estimate
        return pd.DataFrame([{**base, "scenario": s} for s in ("a", "b")])

    empty.write_evaluation("lb", "A", rows("A", 0.5))
    empty.write_evaluation("lb", "B", rows("B", 0.6))
    empty.write_evaluation("other", "A", rows("A", 0.1).assign(leaderboard="other"))
    latest = empty.evaluations("lb")
    assert sorted(latest.model) == ["A", "A", "B", "B"] and not latest.superseded.any()
    empty.write_evaluation("lb", "A", rows("A", 0.7))
    hist = empty.evaluations("lb", "A", latest=False)
    assert len(hist) == 4 and hist.superseded.sum() == 2 and set(hist[hist.superseded].estimate) == {0.5}
    assert set(empty.evaluations("lb", "B").estimate) == {0.6} and len(empty.evaluations("other")) == 2
