"""Landing folder ingestion: transactions per drop, quarantine, idempotence, superseding versions."""

import pandas as pd
import pytest

from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.store import Store


def _counts(store: Store) -> dict:
    return {
        t: int(store.query(f"SELECT count(*) AS n FROM {t}")["n"].iloc[0])
        for t in ("drops", "landed_responses", "items", "full_scores")
    }


def test_ingest_all_then_nothing_new(landing):
    store = Store(landing["db"])
    report = ingest_landing(store, landing["incoming"], landing["quarantine"])
    assert len(report.ingested) == 8 and not report.quarantined
    assert set(store.partition_keys()) == {"openllm.arc", "openllm.mmlu", "routerdc.mmlu", "routerdc.gsm8k"}
    before = _counts(store)
    again = ingest_landing(store, landing["incoming"], landing["quarantine"])
    assert again.ingested == [] and len(again.skipped) == 8
    assert _counts(store) == before  # re-ingesting the same files adds nothing


def test_bad_file_is_quarantined_and_store_unchanged(landing):
    store = Store(landing["db"])
    ingest_landing(store, landing["incoming"], landing["quarantine"])
    before = _counts(store)
    responses_before = store.query("SELECT * FROM landed_responses ORDER BY drop_id, model, item")
    bad = landing["incoming"] / "openllm" / "late.responses.csv"
    pd.DataFrame(
        {"model": ["m", "m"], "scenario": "arc", "subscenario": "arc", "item": ["arc.1", "arc.2"], "score": [1, 7]}
    ).to_csv(bad, index=False)
    good = landing["incoming"] / "openllm" / "extra.responses.csv"
    pd.DataFrame(
        {
            "model": ["new-model"] * 2,
            "scenario": "arc",
            "subscenario": "arc",
            "item": ["arc.660", "arc.1067"],
            "score": [1, 0],
        }
    ).to_csv(good, index=False)
    report = ingest_landing(store, landing["incoming"], landing["quarantine"])
    assert report.ingested == ["openllm/extra.responses.csv"]  # other files still ingest
    assert list(report.quarantined) == ["openllm/late.responses.csv"]
    assert "row 2, column 'score': score 7.0 outside [0, 1]" in report.quarantined["openllm/late.responses.csv"]
    assert not bad.exists()
    moved = landing["quarantine"] / "openllm" / "late.responses.csv"
    assert moved.exists()
    assert "outside [0, 1]" in (moved.parent / "late.responses.csv.error.txt").read_text()
    after = _counts(store)
    assert after["landed_responses"] == before["landed_responses"] + 2 and after["drops"] == before["drops"] + 1
    kept = store.query(
        "SELECT * FROM landed_responses WHERE drop_id IN (SELECT drop_id FROM landed_responses GROUP BY 1 HAVING count(*) > 2) ORDER BY drop_id, model, item"
    )
    pd.testing.assert_frame_equal(kept.reset_index(drop=True), responses_before.reset_index(drop=True))
    q = store.query("SELECT path, error FROM quarantine")
    assert q["path"].tolist() == ["openllm/late.responses.csv"]


def test_failed_transaction_leaves_store_untouched(landing, monkeypatch):
    store = Store(landing["db"])
    ingest_landing(store, landing["incoming"], landing["quarantine"])
    before = _counts(store)
    extra = landing["incoming"] / "openllm" / "extra.responses.csv"
    pd.DataFrame({"model": ["x"], "scenario": "arc", "subscenario": "arc", "item": ["arc.660"], "score": [1]}).to_csv(
        extra, index=False
    )
    from tinybench_assets.io.drops import Drop

    original = Drop.partition_keys

    def boom(self):  # fails mid-transaction, after the drops row was inserted
        raise RuntimeError("disk full")

    monkeypatch.setattr(Drop, "partition_keys", boom)
    try:
        ingest_landing(store, landing["incoming"], landing["quarantine"])
    except RuntimeError:
        pass
    monkeypatch.setattr(Drop, "partition_keys", original)
    assert _counts(store) == before and extra.exists()  # nothing half-written, file left for a retry


def test_a_bad_new_version_of_a_landed_file_is_quarantined_and_the_old_version_stays(landing):
    """A landed file replaced by a bad version: the bad bytes go to quarantine, the landed version keeps its rows and
    stays active (nothing stored is lost)."""
    store = Store(landing["db"])
    ingest_landing(store, landing["incoming"], landing["quarantine"])
    before = _counts(store)
    rows = store.query("SELECT * FROM landed_responses ORDER BY drop_id, model, item")
    path = landing["incoming"] / "openllm" / "arc.responses.parquet"
    df = pd.read_parquet(path)
    df.assign(score=df["score"].where(df.index != 3, 7)).to_parquet(path, index=False)
    report = ingest_landing(store, landing["incoming"], landing["quarantine"])
    assert list(report.quarantined) == ["openllm/arc.responses.parquet"] and report.ingested == []
    assert _counts(store) == before
    pd.testing.assert_frame_equal(store.query("SELECT * FROM landed_responses ORDER BY drop_id, model, item"), rows)
    status = store.query("SELECT status FROM drops WHERE path = 'openllm/arc.responses.parquet'")["status"].tolist()
    assert status == ["active"]


def test_changed_file_supersedes_old_version(landing):
    store = Store(landing["db"])
    ingest_landing(store, landing["incoming"], landing["quarantine"])
    store.consolidate_responses("openllm.arc")
    path = landing["incoming"] / "openllm" / "arc.responses.parquet"
    df = pd.read_parquet(path)
    flipped = df.assign(score=1 - df["score"])
    flipped.to_parquet(path, index=False)
    report = ingest_landing(store, landing["incoming"], landing["quarantine"])
    assert report.ingested == ["openllm/arc.responses.parquet"]
    n = store.consolidate_responses("openllm.arc")
    assert n == len(df)
    mean = store.query("SELECT avg(score) AS m FROM responses WHERE partition_key = 'openllm.arc'")["m"].iloc[0]
    assert abs(mean - (1 - df["score"].mean())) < 1e-9
    status = store.query("SELECT status FROM drops WHERE path = 'openllm/arc.responses.parquet' ORDER BY seq")[
        "status"
    ].tolist()
    assert status == ["superseded", "active"]


def test_the_same_bytes_in_another_leaderboards_folder_land_there_too(landing):
    """A drop's identity is its bytes on its leaderboard: a copy placed in another board's folder is that board's data
    (pending, ingested, its own partitions), while a second copy on the same board is skipped as before; the first
    board's rows and drop id are unchanged."""
    from tinybench_assets.io.landing import pending_drops

    store = Store(landing["db"])
    ingest_landing(store, landing["incoming"], landing["quarantine"])
    first = store.query("SELECT drop_id, leaderboard FROM drops WHERE path = 'openllm/arc.responses.parquet'")
    arc_rows = _counts(store)["landed_responses"]
    src = landing["incoming"] / "openllm" / "arc.responses.parquet"
    (landing["incoming"] / "mirror").mkdir()
    (landing["incoming"] / "mirror" / "arc.parquet").write_bytes(src.read_bytes())
    (landing["incoming"] / "openllm" / "arc_copy.parquet").write_bytes(src.read_bytes())
    assert pending_drops(store, landing["incoming"]) == ["mirror/arc.parquet"]
    report = ingest_landing(store, landing["incoming"], landing["quarantine"])
    assert report.ingested == ["mirror/arc.parquet"] and "openllm/arc_copy.parquet" in report.skipped
    assert pending_drops(store, landing["incoming"]) == []
    assert "mirror.arc" in store.partition_keys()
    n_arc = len(pd.read_parquet(src))
    assert _counts(store)["landed_responses"] == arc_rows + n_arc
    drops = store.query(
        "SELECT drop_id, leaderboard, status FROM drops "
        "WHERE path IN ('openllm/arc.responses.parquet', 'mirror/arc.parquet') ORDER BY seq"
    )
    assert drops["leaderboard"].tolist() == ["openllm", "mirror"] and set(drops["status"]) == {"active"}
    assert drops["drop_id"].iloc[0] == first["drop_id"].iloc[0] != drops["drop_id"].iloc[1]
    assert store.consolidate_responses("mirror.arc") == store.consolidate_responses("openllm.arc") == n_arc
    again = ingest_landing(store, landing["incoming"], landing["quarantine"])
    assert again.ingested == [] and "mirror/arc.parquet" in again.skipped


def _arc_mean(store: Store) -> float:
    store.consolidate_responses("openllm.arc")
    return store.query("SELECT avg(score) AS m FROM responses WHERE partition_key = 'openllm.arc'")["m"].iloc[0]


def test_a_superseded_version_put_back_lands_again_under_any_name(landing):
    """v1 -> v2 -> v1 again: the store holds v1's answers (its drop id and row back, active, landed last), v2 is
    superseded; v2 put back under another name lands again too (its rows went when it was superseded)."""
    from tinybench_assets.io.landing import pending_drops

    store = Store(landing["db"])
    ingest_landing(store, landing["incoming"], landing["quarantine"])
    path = landing["incoming"] / "openllm" / "arc.responses.parquet"
    v1, df = path.read_bytes(), pd.read_parquet(path)
    df.assign(score=1 - df["score"]).to_parquet(path, index=False)
    v2 = path.read_bytes()
    assert ingest_landing(store, landing["incoming"], landing["quarantine"]).ingested == [
        "openllm/arc.responses.parquet"
    ]
    path.write_bytes(v1)
    assert pending_drops(store, landing["incoming"]) == ["openllm/arc.responses.parquet"]
    assert ingest_landing(store, landing["incoming"], landing["quarantine"]).ingested == [
        "openllm/arc.responses.parquet"
    ]
    assert pending_drops(store, landing["incoming"]) == []
    assert abs(_arc_mean(store) - df["score"].mean()) < 1e-9
    rows = store.query("SELECT drop_id, status FROM drops WHERE path = 'openllm/arc.responses.parquet' ORDER BY seq")
    assert rows["status"].tolist() == ["superseded", "active"] and rows["drop_id"].nunique() == 2
    (landing["incoming"] / "openllm" / "arc_v2.parquet").write_bytes(v2)
    assert pending_drops(store, landing["incoming"]) == ["openllm/arc_v2.parquet"]
    assert ingest_landing(store, landing["incoming"], landing["quarantine"]).ingested == ["openllm/arc_v2.parquet"]
    assert abs(_arc_mean(store) - (1 - df["score"].mean())) < 1e-9  # landed last: it wins every cell
    assert set(store.query("SELECT status FROM drops")["status"]) == {"active"}
    assert ingest_landing(store, landing["incoming"], landing["quarantine"]).ingested == []


def test_a_renamed_file_keeps_its_rows_and_a_later_change_supersedes_them(landing):
    """A landed file renamed in the landing folder: nothing lands again, the stored version takes the new name (an
    ingest runs for it), and a later change of the renamed file supersedes it; putting it back lands it again."""
    from tinybench_assets.io.landing import pending_drops

    store = Store(landing["db"])
    ingest_landing(store, landing["incoming"], landing["quarantine"])
    before = _counts(store)
    path = landing["incoming"] / "openllm" / "arc.responses.parquet"
    renamed = path.with_name("arc_renamed.parquet")
    a, df = path.read_bytes(), pd.read_parquet(path)
    path.rename(renamed)
    assert pending_drops(store, landing["incoming"]) == ["openllm/arc_renamed.parquet"]
    report = ingest_landing(store, landing["incoming"], landing["quarantine"])
    assert report.ingested == [] and "openllm/arc_renamed.parquet" in report.skipped
    assert pending_drops(store, landing["incoming"]) == [] and _counts(store) == before
    assert store.query("SELECT count(*) AS n FROM drops WHERE path = 'openllm/arc_renamed.parquet'")["n"].iloc[0] == 1
    df.assign(score=1 - df["score"]).to_parquet(renamed, index=False)
    assert ingest_landing(store, landing["incoming"], landing["quarantine"]).ingested == ["openllm/arc_renamed.parquet"]
    assert abs(_arc_mean(store) - (1 - df["score"].mean())) < 1e-9  # the old version is superseded, not beside it
    renamed.write_bytes(a)
    assert ingest_landing(store, landing["incoming"], landing["quarantine"]).ingested == ["openllm/arc_renamed.parquet"]
    assert abs(_arc_mean(store) - df["score"].mean()) < 1e-9
    assert pending_drops(store, landing["incoming"]) == []


def test_later_drop_wins_per_cell(landing):
    store = Store(landing["db"])
    ingest_landing(store, landing["incoming"], landing["quarantine"])
    arc = pd.read_parquet(landing["incoming"] / "openllm" / "arc.responses.parquet")
    row = arc.iloc[0]
    fix = landing["incoming"] / "openllm" / "zz_fix.responses.csv"
    pd.DataFrame([{**row.to_dict(), "score": 1 - row["score"]}]).to_csv(fix, index=False)
    ingest_landing(store, landing["incoming"], landing["quarantine"])
    store.consolidate_responses("openllm.arc")
    got = store.query("SELECT score FROM responses WHERE model = ? AND item = ?", [row["model"], row["item"]])[
        "score"
    ].tolist()
    assert got == [1 - row["score"]]


def _long_csv(**override) -> bytes:
    df = pd.DataFrame(
        {
            "model": ["m"] * 4,
            "scenario": "arc",
            "subscenario": "arc",
            "item": ["arc.1", "arc.2", "arc.3", "arc.4"],
            "score": [1, 0, 1, 0],
        }
    )
    for k, v in override.items():
        df[k] = v
    return df.to_csv(index=False).encode()


BAD_DROPS = [
    ("missing.responses.csv", _long_csv().replace(b",score", b",points"), "missing column(s) ['score']"),
    ("range.responses.csv", _long_csv(score=[1, 0, 2, 0]), "row 3, column 'score': score 2.0 outside [0, 1]"),
    ("nan.responses.csv", _long_csv(score=[1, None, 1, 0]), "row 2, column 'score': score is NaN"),
    (
        "dup.responses.csv",
        _long_csv(item=["arc.1", "arc.1", "arc.3", "arc.4"]),
        "conflicting duplicate rows for model 'm', item 'arc.1'",
    ),
    ("empty.responses.csv", b"", "empty file (0 bytes)"),
    ("broken.responses.parquet", b"PAR1 this is not parquet", "unreadable file"),
    ("scores.xlsx", b"PK\x03\x04 spreadsheet", "unknown format: suffix '.xlsx'"),
    ("notes.txt", b"model,item,score", "unknown format: suffix '.txt'"),
    ("mmlu_train.json", b"[{not json", "unreadable JSON"),
    ("tb.pkl", b"not a pickle", "unreadable pickle"),
]


@pytest.mark.parametrize("name, content, expected", BAD_DROPS, ids=[b[0] for b in BAD_DROPS])
def test_every_bad_input_is_quarantined_and_store_unchanged(landing, name, content, expected, monkeypatch):
    monkeypatch.setenv("TINYBENCH_TRUST_PICKLE_DROPS", "1")  # the pickle case tests the reader's checks
    store = Store(landing["db"])
    ingest_landing(store, landing["incoming"], landing["quarantine"])
    tables = ("drops", "landed_responses", "items", "full_scores")
    before = {t: store.query(f"SELECT * FROM {t} ORDER BY ALL") for t in tables}
    bad = landing["incoming"] / "openllm" / name
    bad.write_bytes(content)
    good = landing["incoming"] / "openllm" / "late.responses.csv"
    good.write_bytes(_long_csv(model=["late-model"] * 4))
    report = ingest_landing(store, landing["incoming"], landing["quarantine"])
    rel = f"openllm/{name}"
    assert list(report.quarantined) == [rel]
    err = report.quarantined[rel]
    assert err.startswith("file ") and name in err and expected in err, err  # names the file and the problem
    assert report.ingested == ["openllm/late.responses.csv"]  # the other file still ingests
    assert not bad.exists()
    moved = landing["quarantine"] / "openllm" / name
    assert moved.read_bytes() == content
    assert expected in (moved.parent / f"{name}.error.txt").read_text()
    assert store.query("SELECT path FROM quarantine")["path"].tolist() == [rel]
    # nothing stored before is lost or changed; the only new rows are the good drop's
    late = store.query("SELECT drop_id FROM drops WHERE path = 'openllm/late.responses.csv'")["drop_id"].tolist()
    assert len(late) == 1
    for t in tables:
        after = store.query(f"SELECT * FROM {t} ORDER BY ALL")
        if "drop_id" in after:
            after = after[~after.drop_id.isin(late)]
        pd.testing.assert_frame_equal(after.reset_index(drop=True), before[t].reset_index(drop=True), check_dtype=False)
    # ingesting again adds nothing and quarantines nothing more
    again = ingest_landing(store, landing["incoming"], landing["quarantine"])
    assert not again.ingested and not again.quarantined


def test_partial_uploads_and_notes_are_not_drops(landing):
    from tinybench_assets.io.drops import landing_files

    d = landing["incoming"] / "openllm"
    for name in ("big.parquet.part", "x.csv.tmp", ".hidden.csv", "README.md"):
        (d / name).write_bytes(b"...")
    names = {p.name for p in landing_files(landing["incoming"])}
    assert not names & {"big.parquet.part", "x.csv.tmp", ".hidden.csv", "README.md"}
    report = ingest_landing(Store(landing["db"]), landing["incoming"], landing["quarantine"])
    assert not report.quarantined and len(report.ingested) == 8
