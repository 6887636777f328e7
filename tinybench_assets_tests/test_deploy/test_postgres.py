"""The scale-out profile for real (issue 14): a throwaway PostgreSQL server holds the Dagster instance
(deploy/dagster.yaml) and the results store; ingest and a scenario partition's assets give the same rows as on DuckDB;
the PostgreSQL store's partition replace is one transaction and lets writers of different partitions run at once."""

import threading
import time

import numpy as np
import pandas as pd
import pytest

from tinybench_assets.io.store import PostgresStore, Store, StoreUnavailable
from tinybench_assets.testing.parity import postgres_matches_duckdb


def test_scenario_partition_on_postgres_matches_duckdb(landing, pg_server, pg_env, tmp_path):
    res = postgres_matches_duckdb(landing["incoming"], tmp_path, pg_server)
    assert res["match"], res["problems"]
    # every table of the partition and of the ingest came back, with rows; floats bit for bit
    assert res["tables"] >= 14 and res["rows"] > 10_000, res
    assert res["max_abs_float_diff"] == 0.0, res["max_abs_float_diff"]
    inst = res["pg_instance"]
    assert inst["storage"] == "PostgresRunStorage" and inst["runs"] == inst["succeeded"] == 2, inst
    assert "openllm.arc" in inst["scenario_partitions"], inst


@pytest.fixture()
def pg_store(pg_server, request) -> Store:
    return Store(pg_server.create_db(f"unit_{request.node.name[:40].lower()}"))


def _frame(tag: str, n: int) -> pd.DataFrame:
    return pd.DataFrame({"model": [f"{tag}{i}" for i in range(n)], "split": "train", "seed": 0})


def test_partition_replace_is_one_transaction(pg_store):
    assert isinstance(pg_store, PostgresStore) and pg_store.engine == "postgresql"
    good = pd.DataFrame({"model": ["m1", "m2"], "item": ["i1", "i1"], "y": [1, 0]})
    pg_store.replace_partition({"model_splits": _frame("old", 3), "binarized": good}, "lb.sc")
    bad = good.assign(y=[1, None])  # NOT NULL y: the second table's insert fails after the first table was replaced
    with pytest.raises(Exception, match="null value"):
        pg_store.replace_partition({"model_splits": _frame("new", 5), "binarized": bad}, "lb.sc")
    assert sorted(pg_store.model_split("lb.sc").index) == ["old0", "old1", "old2"]
    assert pg_store.binarized("lb.sc")["y"].tolist() == [1.0, 0.0]


def test_concurrent_writers_of_different_partitions_both_land(pg_server, pg_store):
    """Writer A holds its transaction open (its rows of partition a written, not committed) while writer B replaces
    partition b of the same table and commits: B does not wait for A, and both partitions land."""
    url = pg_store.url
    a = PostgresStore(url)
    inside, release, b_done = threading.Event(), threading.Event(), threading.Event()
    frame = a.frame

    def slow_frame(con, name, df, **kw):  # A pauses inside its transaction, after its DELETE, before its INSERT
        inside.set()
        assert release.wait(30)
        return frame(con, name, df, **kw)

    a.frame = slow_frame
    errors = []

    def write_a():
        try:
            a.replace_partition({"model_splits": _frame("a", 4)}, "lb.a")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    pg_store.replace_partition({"model_splits": _frame("setup", 1)}, "lb.setup")  # the table exists before A starts
    t = threading.Thread(target=write_a)
    t.start()
    assert inside.wait(30), errors
    t0 = time.perf_counter()
    Store(url).replace_partition({"model_splits": _frame("b", 6)}, "lb.b")
    b_seconds = time.perf_counter() - t0
    b_done.set()
    release.set()
    t.join(30)
    assert not errors and not t.is_alive()
    assert b_seconds < 5, f"writer B waited {b_seconds:.1f} s for writer A"
    assert len(pg_store.model_split("lb.a")) == 4 and len(pg_store.model_split("lb.b")) == 6


def test_writers_of_one_partition_take_turns(pg_store):
    """Two writers replacing the same partition at once leave one writer's rows, never both (no duplicates)."""
    pg_store.replace_partition({"model_splits": _frame("x", 1)}, "lb.same")
    barrier, errors = threading.Barrier(2), []

    def write(tag, n):
        try:
            barrier.wait(10)
            Store(pg_store.url).replace_partition({"model_splits": _frame(tag, n)}, "lb.same")
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(tag, n)) for tag, n in (("p", 50), ("q", 70))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    models = pg_store.model_split("lb.same").index
    assert len(models) in (50, 70) and len({m[0] for m in models}) == 1


def test_unreachable_server_names_the_url_without_password():
    store = Store("postgresql://alice:s3cret-pw@127.0.0.1:1/results")
    with pytest.raises(StoreUnavailable) as err:
        store.tables()
    msg = str(err.value)
    assert "postgresql://alice:***@127.0.0.1:1/results" in msg and "s3cret-pw" not in msg


class _FakeEncoder:
    """Deterministic float32 vectors from the text's bytes (no model to load)."""

    encoder_id = "test/fake-encoder"

    def encode(self, texts, log=None):
        return np.stack(
            [np.frombuffer(t.encode().ljust(16, b".")[:16], dtype=np.uint8).astype(np.float32) / 7 for t in texts]
        )


def test_embedding_cache_on_postgres(pg_store, tmp_path):
    """The router's embedding cache (io/embeddings.py) goes through the same store: float32 vectors come back bit for
    bit, as on DuckDB, and a second call embeds nothing."""
    from tinybench_assets.io.embeddings import embed_cached, load_cached, text_key

    texts = ["What is 2+2?", "Name a prime.", "What is 2+2?"]
    E, stats = embed_cached(pg_store, _FakeEncoder(), texts)
    assert stats["embedded"] == 2 and E.dtype == np.float32
    again, stats = embed_cached(pg_store, _FakeEncoder(), texts)
    assert stats["embedded"] == 0 and np.array_equal(again, E)
    keys = [text_key(_FakeEncoder.encoder_id, t) for t in texts]
    duck, _ = embed_cached(Store(tmp_path / "e.duckdb"), _FakeEncoder(), texts)
    assert np.array_equal(load_cached(pg_store, _FakeEncoder.encoder_id, keys), duck)


def test_missing_postgres_binaries_fail_with_the_remedy(monkeypatch):
    """No initdb anywhere: the fixture fails (never skips) naming scripts/env.sh."""
    from tinybench_assets.testing import pg_server

    monkeypatch.setenv("TINYBENCH_PG_BIN", "")
    monkeypatch.setattr(pg_server.shutil, "which", lambda name: None)
    monkeypatch.setattr(pg_server.glob, "glob", lambda pattern: [])
    with pytest.raises(pg_server.PostgresMissing, match="scripts/env.sh"):
        pg_server.pg_bin_dir()


def test_comparison_sees_a_changed_row():
    from tinybench_assets.testing.parity import compare

    a = {"irt_items": pd.DataFrame({"item": ["i1"], "a": [(0.5, 1.0)]}, dtype=object)}
    b = {"irt_items": pd.DataFrame({"item": ["i1"], "a": [(0.5, 1.0 + 1e-9)]}, dtype=object)}
    assert compare(a, a) == ({}, 0.0)
    problems, worst = compare(a, b)
    assert "irt_items" in problems and worst == pytest.approx(1e-9)
