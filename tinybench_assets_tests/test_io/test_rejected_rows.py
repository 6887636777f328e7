"""A wide table in which a few rows conflict lands without them: RouterBench's ARC-Challenge shape (a row scoring one
model under the id of a complete row, its prompt holding the question twice), rebuilt from the real MBPP file. The
conflicting rows go to ``<quarantine>/<leaderboard>/<file>.rejected.csv`` with a reason each; a file with more than
the allowed share of them is still quarantined whole."""

import numpy as np
import pandas as pd
import pytest

from tinybench_assets.io.drops import DropError, read_drop
from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.store import Store
from tinybench_assets.io.wide_rows import REJECTED_SHARE_ENV, max_rejected_share
from tinybench_assets_tests.conftest import SHARED, _need_shared

MODEL = "claude-v2"  # the one model the conflicting rows score
MODEL_COLUMNS = [
    "WizardLM/WizardLM-13B-V1.2",
    "claude-instant-v1",
    "claude-v1",
    "claude-v2",
    "gpt-3.5-turbo-1106",
    "gpt-4-1106-preview",
    "meta/code-llama-instruct-34b-chat",
    "meta/llama-2-70b-chat",
    "mistralai/mistral-7b-chat",
    "mistralai/mixtral-8x7b-chat",
    "zero-one-ai/Yi-34B-Chat",
]


def _mbpp() -> pd.DataFrame:
    _need_shared()
    return pd.read_csv(SHARED / "routerbench" / "mbpp_train.csv")


def _conflicting(df: pd.DataFrame, at: int, flip: bool) -> pd.DataFrame:
    """Row ``at`` again as RouterBench's ARC files hold it: the same sample_id, the question twice in the prompt, one
    model's score (flipped when ``flip``) and cost, every other model's cells empty."""
    row = df.loc[[at]].copy()
    question = row["prompt"].iloc[0].strip("[]'\"")
    row["prompt"] = f"['{question}', '{question}']"
    for col in df.columns:
        if ("|" in col or col in MODEL_COLUMNS) and col != MODEL and not col.startswith(MODEL + "|"):
            row[col] = np.nan
    if flip:
        row[MODEL] = 1.0 - row[MODEL]
    return row


def _with_conflicts(df: pd.DataFrame, n: int) -> tuple[pd.DataFrame, list[int]]:
    """``df`` with ``n`` conflicting rows: most right after their complete row, one before it, one at the end (every
    other one with the model's score flipped). Returns the file and the conflicting rows' numbers (1 = first data row)."""
    targets = list(range(10, 10 + 13 * n, 13))[:n]
    parts, start = [], 0
    for k, at in enumerate(targets[:-1]):
        before = k == 1
        parts.append(df.iloc[start:at] if before else df.iloc[start : at + 1])
        parts.append(_conflicting(df, at, flip=k % 2 == 0).assign(_mark=True))
        if before:
            parts.append(df.iloc[[at]])
        start = at + 1
    parts.append(df.iloc[start:])
    parts.append(_conflicting(df, targets[-1], flip=True).assign(_mark=True))
    out = pd.concat(parts, ignore_index=True)
    marks = [i + 1 for i in np.flatnonzero(out["_mark"].eq(True).to_numpy())]
    return out.drop(columns="_mark"), marks


def _land(tmp_path, df: pd.DataFrame, name: str = "mbpp_train.csv"):
    incoming, quarantine = tmp_path / "incoming", tmp_path / "quarantine"
    (incoming / "rb").mkdir(parents=True)
    df.to_csv(incoming / "rb" / name, index=False)
    store = Store(tmp_path / "tb.duckdb")
    return store, ingest_landing(store, incoming, quarantine), quarantine


def test_conflicting_rows_are_rejected_and_the_rest_lands(tmp_path):
    clean = _mbpp()
    df, marks = _with_conflicts(clean, 7)
    assert len(df) == 306 and len(marks) == 7
    store, report, quarantine = _land(tmp_path, df)
    rel = "rb/mbpp_train.csv"
    assert report.ingested == [rel] and report.quarantined == {}
    target = quarantine / "rb" / "mbpp_train.csv.rejected.csv"
    assert report.rejected == {rel: (7, str(target))}
    assert "7 row(s) rejected from 1 file(s)" in report.summary()
    notes = " ".join(report.notes[rel])
    assert "7 of 306 row(s) rejected" in notes and f"written to {target}" in notes
    # the rejected rows on disk: row number, reason, then the original cells
    rejected = pd.read_csv(target)
    assert list(rejected.columns[:2]) == ["row", "reason"] and list(rejected.columns[2:]) == list(df.columns)
    assert rejected["row"].tolist() == marks
    assert rejected["reason"].str.contains("listed twice with different 'prompt'").all()
    for _, r in rejected.iterrows():
        assert repr(r["sample_id"]) in r["reason"] and r["prompt"] == df.loc[r["row"] - 1, "prompt"]
    # every question landed once, with the complete row's scores and prompt
    resp = store.query("SELECT item, model, score FROM landed_responses")
    assert len(resp) == 299 * len(MODEL_COLUMNS) and not resp.duplicated(["item", "model"]).any()
    truth = clean.melt(id_vars="sample_id", value_vars=MODEL_COLUMNS, var_name="model", value_name="truth")
    got = resp.merge(truth, left_on=["item", "model"], right_on=["sample_id", "model"])
    assert len(got) == len(resp) and (got["score"] == got["truth"]).all()
    items = store.query("SELECT item, text FROM items").set_index("item")["text"]
    assert items.to_dict() == clean.set_index("sample_id")["prompt"].to_dict()


def test_too_many_conflicting_rows_quarantine_the_whole_file(tmp_path):
    df, marks = _with_conflicts(_mbpp(), 20)  # 20 of 319 rows: 6.3 %, more than 5 %
    store, report, quarantine = _land(tmp_path, df)
    rel = "rb/mbpp_train.csv"
    assert report.ingested == [] and list(report.quarantined) == [rel] and report.rejected == {}
    err = report.quarantined[rel]
    assert f"row {marks[0]}, column 'sample_id'" in err and "20 of 319 rows (6.3%)" in err
    assert "more than the 5.0%" in err and REJECTED_SHARE_ENV in err
    assert (quarantine / "rb" / "mbpp_train.csv").is_file() and not (
        quarantine / "rb" / "mbpp_train.csv.rejected.csv"
    ).exists()
    assert store.query("SELECT count(*) AS n FROM landed_responses")["n"].iloc[0] == 0


@pytest.mark.parametrize("setting, lands", [("10%", True), ("0.1", True), ("0", False), ("1%", False)])
def test_the_share_is_configurable(tmp_path, monkeypatch, setting, lands):
    monkeypatch.setenv(REJECTED_SHARE_ENV, setting)
    df, _ = _with_conflicts(_mbpp(), 7 if setting in ("0", "1%") else 20)
    _, report, _ = _land(tmp_path, df)
    assert bool(report.ingested) == lands and bool(report.quarantined) != lands


def test_an_unusable_share_setting_stops_the_ingest(monkeypatch):
    for bad in ("lots", "150%", "-0.1"):
        monkeypatch.setenv(REJECTED_SHARE_ENV, bad)
        with pytest.raises(RuntimeError, match=REJECTED_SHARE_ENV):
            max_rejected_share()
    monkeypatch.delenv(REJECTED_SHARE_ENV)
    assert max_rejected_share() == 0.05


def test_the_row_scoring_most_models_is_kept_and_value_conflicts_are_rejected(tmp_path):
    """A partial row before the complete one: the complete row is kept and the partial row, scoring a model
    differently, is rejected; a partial row that agrees merges (collapses) silently."""
    rows = [
        {"sample_id": f"q{i}", "prompt": f"question {i}", **{f"org/m{j}": float((i + j) % 2) for j in range(4)}}
        for i in range(40)
    ]
    partial = {"sample_id": "q5", "prompt": "question 5", "org/m1": 1.0 - rows[5]["org/m1"]}
    agrees = {"sample_id": "q7", "prompt": "question 7", "org/m2": rows[7]["org/m2"]}
    df = pd.DataFrame([partial, *rows, agrees])
    df.to_csv(tmp_path / "quiz.csv", index=False)
    drop = read_drop(tmp_path / "quiz.csv", "lb")
    assert drop.rejected[["row", "sample_id"]].values.tolist() == [[1, "q5"]]
    reason = drop.rejected["reason"].iloc[0]
    assert "'org/m1' scored twice with different values" in reason and "kept: row 7" in reason
    assert len(drop.responses) == 40 * 4 and not drop.responses.duplicated(["item", "model"]).any()
    q5 = drop.responses[drop.responses["item"] == "q5"].set_index("model")["score"]
    assert q5["org/m1"] == rows[5]["org/m1"]
    notes = " ".join(drop.notes)
    assert (
        "1 of 42 row(s) rejected" in notes
        and "merged (each model's score and cost from the row that has it): q7" in notes
    )


def test_a_bad_cell_in_a_rejected_row_still_quarantines(tmp_path):
    """Rejection is for rows that conflict, not a way around validation: a score outside [0, 1] anywhere is an error."""
    rows = [{"sample_id": f"q{i}", "prompt": f"question {i}", "org/a": 1.0, "org/b": 0.0} for i in range(40)]
    df = pd.DataFrame([*rows, {"sample_id": "q1", "prompt": "other", "org/a": 1.5}])
    df.to_csv(tmp_path / "quiz.csv", index=False)
    with pytest.raises(DropError, match="score 1.5 outside"):
        read_drop(tmp_path / "quiz.csv", "lb")


def test_landing_ingest_metadata_shows_the_rejected_rows(tmp_path):
    """The UI's view of an ingest: landing_ingest's metadata names the file, how many rows it lost and where they are."""
    import dagster as dg

    from tinybench_assets.defs.assets import responses as resp_assets
    from tinybench_assets.defs.resources import LandingResource, StoreResource

    df, _ = _with_conflicts(_mbpp(), 7)
    incoming, quarantine = tmp_path / "incoming", tmp_path / "quarantine"
    (incoming / "rb").mkdir(parents=True)
    df.to_csv(incoming / "rb" / "mbpp_train.csv", index=False)
    resources = {
        "store": StoreResource(database=str(tmp_path / "tb.duckdb")),
        "landing": LandingResource(incoming=str(incoming), quarantine=str(quarantine)),
    }
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize([resp_assets.landing_ingest], instance=instance, resources=resources).success
    md = instance.get_latest_materialization_event(dg.AssetKey("landing_ingest")).asset_materialization.metadata
    target = str(quarantine / "rb" / "mbpp_train.csv.rejected.csv")
    assert md["rejected_rows"].value == {"rb/mbpp_train.csv": {"rows": 7, "file": target}}
    assert any(f"written to {target}" in n for n in md["notes"].value["rb/mbpp_train.csv"])
