"""A 0/1 matrix with no header row: detected (a first line of 0/1 values, one repeated) or declared with
``"header": false`` in its sidecar, it lands with generated ids; a header of distinct numeric ids stays a header, and
an error that remains says how to declare the file."""

import json

import numpy as np
import pandas as pd
import pytest

from tinybench_assets.io.drops import DropError, read_drop
from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.store import Store


def _headerless(path, x: np.ndarray, fmt: str = "%.1f", row_ids=None) -> None:
    """``x`` as CSV lines with no header row (pandas' to_csv(header=False) writes 1.0/0.0 for a float matrix)."""
    frame = pd.DataFrame(x)
    if row_ids is not None:
        frame.insert(0, "id", row_ids)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, header=False, index=False, float_format=fmt)


def _x(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2, (rows, cols)).astype(float)


def test_the_reported_file_is_read_with_generated_ids(tmp_path):
    """12 rows x 41,871 columns of 1.0/0.0 and no header row, the shape of the file issue 40 reports."""
    x = _x(12, 41_871)
    _headerless(tmp_path / "arc_train.csv", x)
    drop = read_drop(tmp_path / "arc_train.csv", "lb")
    assert len(drop.responses) == x.size
    assert sorted(drop.responses["model"].unique()) == sorted(f"arc.train.model{i}" for i in range(12))
    assert drop.items["item"].tolist() == [f"arc.train.{j}" for j in range(41_871)]
    wide = drop.responses.pivot(index="model", columns="item", values="score")
    assert np.array_equal(wide.loc[[f"arc.train.model{i}" for i in range(12)], drop.items["item"]].to_numpy(), x)
    notes = " ".join(drop.notes)
    assert "no header row (detected" in notes and "models arc.train.model<i>, items arc.train.<i>" in notes


def test_a_headerless_matrix_lands_through_the_ingest(tmp_path):
    incoming, quarantine = tmp_path / "incoming", tmp_path / "quarantine"
    x = _x(12, 300, seed=1)
    _headerless(incoming / "lb" / "quiz.csv", x, fmt="%g")  # 1/0 rather than 1.0/0.0
    store = Store(tmp_path / "tb.duckdb")
    report = ingest_landing(store, incoming, quarantine)
    assert report.ingested == ["lb/quiz.csv"] and report.quarantined == {}
    resp = store.query("SELECT model, item, score FROM landed_responses")
    assert len(resp) == x.size and set(resp["model"]) == {f"quiz.model{i}" for i in range(12)}
    assert resp.query("model == 'quiz.model3' and item == 'quiz.17'")["score"].iloc[0] == x[3, 17]


def test_row_ids_in_the_first_column_are_kept(tmp_path):
    x = _x(4, 30, seed=2)
    _headerless(tmp_path / "logic.csv", x, row_ids=[f"org/m{i}" for i in range(4)])
    drop = read_drop(tmp_path / "logic.csv", "lb")
    assert sorted(drop.responses["model"].unique()) == [f"org/m{i}" for i in range(4)]
    assert sorted(drop.responses["item"].unique()) == sorted(f"logic.{j}" for j in range(30))
    assert "(row ids from the first column)" in " ".join(drop.notes)


def test_a_sidecar_declares_a_file_the_rule_cannot_see(tmp_path):
    """Scores whose first line has no repeated value look like a header of numeric ids: the sidecar says otherwise."""
    x = np.array([[0.25, 0.5, 0.75, 1.0], [0.0, 0.5, 1.0, 0.25], [1.0, 1.0, 0.0, 0.0]])
    path = tmp_path / "mix_test.csv"
    _headerless(path, x, fmt="%g")
    side = path.with_name(path.name + ".meta.json")
    side.write_text(json.dumps({"values": "scores", "rows": "items"}))
    assert len(read_drop(path, "lb").responses) == 2 * 3  # its first line read as the header, its first column as ids
    side.write_text(json.dumps({"header": False, "values": "scores", "rows": "items"}))
    drop = read_drop(path, "lb")
    assert len(drop.responses) == x.size
    assert drop.responses.query("item == 'mix.test.0' and model == 'mix.test.model2'")["score"].iloc[0] == 0.75
    assert 'sidecar mix_test.csv.meta.json says "header": false' in " ".join(drop.notes)


def test_header_true_in_the_sidecar_turns_the_detection_off(tmp_path):
    path = tmp_path / "quiz.csv"
    _headerless(path, _x(5, 20))
    path.with_name("quiz.csv.meta.json").write_text('{"header": true}')
    with pytest.raises(DropError, match="listed twice in the header"):
        read_drop(path, "lb")


@pytest.mark.parametrize("header", [["id", *map(str, range(41))], ["model", "0", "1"], ["", "1", "0"]])
def test_a_header_of_numeric_ids_is_not_taken_for_data(tmp_path, header):
    body = _x(3, len(header) - 1, seed=3).astype(int)
    lines = [",".join(header)] + [",".join([f"q{i}", *map(str, row)]) for i, row in enumerate(body)]
    (tmp_path / "quiz.csv").write_text("\n".join(lines) + "\n")
    drop = read_drop(tmp_path / "quiz.csv", "lb")
    ids = set(drop.responses["item"]) | set(drop.responses["model"])
    assert ids == set(header[1:]) | {"q0", "q1", "q2"} and len(drop.responses) == body.size
    assert not any("no header row" in n for n in drop.notes)


def test_errors_say_how_to_declare_a_headerless_file(tmp_path):
    """A first line that is data but not 0/1 (here a 2) cannot be detected: the error names the sidecar to add."""
    path = tmp_path / "quiz.csv"
    path.write_text("1,0,2,1,0\n0,1,1,0,1\n")
    with pytest.raises(
        DropError,
        match=r"column listed twice in the header \(if the first line is data, not column "
        r"names, add a sidecar quiz.csv.meta.json with \{\"header\": false\}\)",
    ):
        read_drop(path, "lb")
    path.with_name("quiz.csv.meta.json").write_text('{"header": false}')
    with pytest.raises(DropError, match=r"row 1, column '3': value 2.0 is not 0 or 1"):
        read_drop(path, "lb")  # positions counted from 1 in a file without a header row


@pytest.mark.parametrize(
    "meta, suffix, expected",
    [
        ({"header": "no"}, ".csv", "'header' is 'no', expected true or false"),
        ({"header": False}, ".parquet", '"header": false is for CSV files'),
    ],
)
def test_bad_header_settings(tmp_path, meta, suffix, expected):
    path = tmp_path / f"quiz{suffix}"
    frame = pd.DataFrame({"model": ["a", "b"], "q1": [1, 0], "q2": [0, 1], "q3": [1, 1]})
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path, index=False)
    path.with_name(path.name + ".meta.json").write_text(json.dumps(meta))
    with pytest.raises(DropError, match=expected):
        read_drop(path, "lb")
