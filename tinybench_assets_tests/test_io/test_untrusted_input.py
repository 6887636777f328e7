"""Untrusted input never executes code and never escapes its folders (issue 14).

* A pickle drop is unpickled only when the operator trusts pickle drops (TINYBENCH_TRUST_PICKLE_DROPS, off by
  default); otherwise it is quarantined unopened, with a message naming the file and how to opt in. Trusted, it is
  still read with an unpickler that builds containers and numpy arrays only: a hostile file runs none of its code.
* Names from files (folders, file names, scenario values) cannot lead a path out of the landing or quarantine folder,
  and model/item names with quotes, SQL or NUL are stored as values (every statement binds them as parameters).
"""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pytest

from tinybench_assets.defs.resources import LandingResource
from tinybench_assets.defs.sensors import refresh_sensor
from tinybench_assets.io.drops import DropError, read_drop
from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.pickle_drops import TRUST_ENV, pickles_trusted
from tinybench_assets.io.store import Store
from tinybench_assets.testing.reliability_inputs import hostile_pickle, long_table, write_table
from tinybench_assets_tests.conftest import write_tinybenchmarks_pickle


@pytest.fixture()
def folders(tmp_path):
    return {
        "incoming": tmp_path / "incoming",
        "quarantine": tmp_path / "quarantine",
        "db": tmp_path / "tb.duckdb",
        "marker": tmp_path / "PICKLE_RAN",
    }


def _pickle(path, responses):
    path.parent.mkdir(parents=True, exist_ok=True)
    write_tinybenchmarks_pickle(path, responses)


def _ingest(f, **kw):
    return ingest_landing(Store(f["db"]), f["incoming"], f["quarantine"], **kw)


def test_pickle_drops_are_off_by_default_and_a_hostile_one_is_quarantined_unopened(folders, monkeypatch):
    monkeypatch.delenv(TRUST_ENV, raising=False)
    bad = hostile_pickle(folders["incoming"] / "lb" / "tiny.pkl", folders["marker"])
    write_table(long_table(3, 4), folders["incoming"] / "lb" / "ok.csv")
    report = _ingest(folders)
    assert not folders["marker"].exists()  # its __reduce__ never ran
    assert report.ingested == ["lb/ok.csv"] and list(report.quarantined) == ["lb/tiny.pkl"]
    msg = report.quarantined["lb/tiny.pkl"]
    assert msg.startswith(f"file {bad}") and "pickle not read" in msg
    assert f"{TRUST_ENV}=1" in msg and f"{TRUST_ENV}=lb" in msg  # how to opt in, for all folders or this one
    moved = folders["quarantine"] / "lb" / "tiny.pkl"
    assert moved.exists() and not bad.exists()
    assert TRUST_ENV in (moved.parent / "tiny.pkl.error.txt").read_text()
    assert Store(folders["db"]).query("SELECT error FROM quarantine")["error"].str.contains(TRUST_ENV).all()


def test_trusted_pickles_ingest_but_a_hostile_one_still_runs_nothing(folders, monkeypatch):
    monkeypatch.setenv(TRUST_ENV, "1")
    responses = long_table(5, 12, scenario="mmlu", seed=1)
    responses["subscenario"] = responses["subscenario"].str.replace("mmlu_", "")
    _pickle(folders["incoming"] / "lb" / "good.pickle", responses)
    hostile_pickle(folders["incoming"] / "lb" / "evil.pkl", folders["marker"])
    report = _ingest(folders)
    assert not folders["marker"].exists()
    assert report.ingested == ["lb/good.pickle"]
    assert "refers to builtins.exec" in report.quarantined["lb/evil.pkl"]  # refused by the restricted unpickler
    stored = Store(folders["db"]).query("SELECT count(*) AS n, sum(score) AS s FROM landed_responses")
    assert stored["n"].iloc[0] == len(responses) and stored["s"].iloc[0] == responses["score"].sum()


def test_trust_per_leaderboard_folder(folders, monkeypatch):
    monkeypatch.delenv(TRUST_ENV, raising=False)
    assert not pickles_trusted("lb")
    monkeypatch.setenv(TRUST_ENV, "openllm, lb")
    assert pickles_trusted("lb") and pickles_trusted("openllm") and not pickles_trusted("other")
    for off in ("0", "false", "", "off"):
        assert not pickles_trusted("lb", off)
    assert pickles_trusted("lb", True) and not pickles_trusted("lb", False)
    for seed, board in enumerate(("lb", "other")):
        _pickle(folders["incoming"] / board / "p.pkl", long_table(3, 6, scenario="mmlu", seed=seed))
    report = _ingest(folders)
    assert report.ingested == ["lb/p.pkl"] and list(report.quarantined) == ["other/p.pkl"]
    # an explicit setting (a resource's) wins over the environment
    _pickle(folders["incoming"] / "lb" / "q.pkl", long_table(3, 6, scenario="mmlu", seed=5))
    assert list(_ingest(folders, trust_pickles="0").quarantined) == ["lb/q.pkl"]


def test_the_refresh_sensor_never_unpickles_an_untrusted_drop(folders, monkeypatch):
    monkeypatch.delenv(TRUST_ENV, raising=False)
    hostile_pickle(folders["incoming"] / "lb" / "tiny.pkl", folders["marker"])
    from tinybench_assets.definitions import build_defs
    from tinybench_assets.defs.resources import StoreResource

    with dg.build_sensor_context(
        instance=dg.DagsterInstance.ephemeral(),
        repository_def=build_defs().get_repository_def(),
        resources={
            "landing": LandingResource(incoming=str(folders["incoming"]), quarantine=str(folders["quarantine"])),
            "store": StoreResource(database=str(folders["db"])),
        },
    ) as ctx:
        result = refresh_sensor(ctx)
    assert not folders["marker"].exists()  # the sensor only hashes files
    assert [r.job_name for r in result] == ["ingest_landing"]  # the ingest run quarantines it


def test_names_from_files_stay_inside_their_folders(folders, tmp_path):
    inc = folders["incoming"]
    # a folder name with no usable character, a scenario that cleans to nothing, one that looks like a path
    write_table(long_table(2, 3), inc / "データ" / "a.csv")
    write_table(long_table(2, 3).assign(scenario="..."), inc / "lb" / "dots.csv")
    write_table(long_table(2, 3).assign(scenario="../../etc/passwd"), inc / "lb" / "path.csv")
    # a link to a file outside the landing folder: never read, the link (not its target) quarantined
    secret = tmp_path / "secret.csv"
    secret.write_text("model,scenario,item,score\nTOP-SECRET,s,i,1\n")
    (inc / "lb" / "link.csv").symlink_to(secret)
    # model and item names with quotes, SQL and NUL are plain values
    nasty = pd.DataFrame(
        {
            "model": ["a'; DROP TABLE drops; --", 'b"\\x'],
            "scenario": "sql",
            "item": ["i\x00nul", "i2"],
            "score": [1.0, 0.0],
        }
    )
    write_table(nasty, inc / "lb" / "nasty.parquet")
    report = _ingest(folders)
    assert sorted(report.ingested) == ["lb/nasty.parquet", "lb/path.csv"]
    assert set(report.quarantined) == {"データ/a.csv", "lb/dots.csv", "lb/link.csv"}
    assert "gives no leaderboard name" in report.quarantined["データ/a.csv"]
    assert "empty name from '...'" in report.quarantined["lb/dots.csv"]
    assert "outside the landing folder" in report.quarantined["lb/link.csv"]
    assert "TOP-SECRET" not in " ".join(report.quarantined.values())
    assert secret.read_text().startswith("model") and (folders["quarantine"] / "lb" / "link.csv").is_symlink()
    store = Store(folders["db"])
    assert sorted(store.partition_keys()) == ["lb.etc_passwd", "lb.sql"]  # no '/', '.' or '..' in a partition key
    got = store.query("SELECT model, item FROM landed_responses WHERE scenario = 'sql' ORDER BY model")
    assert got["model"].tolist() == nasty["model"].tolist() and got["item"].tolist() == nasty["item"].tolist()
    assert "drops" in store.tables()
    # every moved file and report lies under the quarantine folder
    quarantine = folders["quarantine"].resolve()
    for p in folders["quarantine"].rglob("*"):
        assert p.parent.resolve().is_relative_to(quarantine)


def test_read_drop_turns_unusable_names_into_drop_errors(tmp_path):
    path = tmp_path / "x.csv"
    write_table(long_table(2, 2).assign(scenario="!!!"), path)
    with pytest.raises(DropError, match="empty name"):
        read_drop(path, "lb")
