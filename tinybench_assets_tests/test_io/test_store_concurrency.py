"""Several processes writing one DuckDB file at once wait for each other instead of failing."""

import multiprocessing as mp

import pandas as pd

from tinybench_assets.io.store import Store


def _writer(path: str, worker: int, rounds: int) -> None:
    store = Store(path, lock_timeout=120)
    for r in range(rounds):
        df = pd.DataFrame(
            {
                "col": range(50),
                "item": [f"w{worker}.{i}" for i in range(50)],
                "subscenario": "s",
                "balance_weight": 1.0,
                "split": None,
                "mean_score": float(r),
            }
        )
        store.replace_partition({"matrix_items": df}, f"lb.w{worker}")
        store.query("SELECT count(*) FROM matrix_items")


def test_concurrent_writers_never_fail(tmp_path):
    path = str(tmp_path / "c.duckdb")
    Store(path).tables()  # create the schema
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 15)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    out = Store(path).query(
        "SELECT partition_key, count(*) AS n, max(mean_score) AS last FROM matrix_items GROUP BY 1 ORDER BY 1"
    )
    assert out["n"].tolist() == [50, 50, 50] and out["last"].tolist() == [14.0, 14.0, 14.0]


def test_replace_partition_adds_new_columns_and_keeps_stored_rows(tmp_path):
    """A result table written by an older version gains the new columns; its other partitions stay."""
    import pandas as pd

    from tinybench_assets.io.store import Store

    db = Store(tmp_path / "s.duckdb")
    db.replace_partition({"results": pd.DataFrame({"x": [1.0, 2.0]})}, "old")
    db.replace_partition({"results": pd.DataFrame({"x": [3.0], "kind": ["grouped"], "lo": [0.5]})}, "new")
    got = db.query("SELECT * FROM results ORDER BY x")
    assert list(got.columns) == ["partition_key", "x", "kind", "lo"]
    assert got.partition_key.tolist() == ["old", "old", "new"] and got.kind.isna().sum() == 2
    assert got.lo.iloc[-1] == 0.5
    # the declared backtest_summary of an older file gains split_kind and the MAE intervals
    cols = set(db.query("SELECT * FROM backtest_summary LIMIT 0").columns)
    assert {"split_kind", "mae_t1_lo", "mae_t1_hi", "mae_t2_lo", "mae_t2_hi"} <= cols


def test_a_column_first_written_all_null_takes_later_values(tmp_path):
    """A result table created by a leaderboard whose column is all None (a small board without full scores: no T2
    calibration) takes another leaderboard's strings later; a store whose older version typed such a column "NULL"
    is repaired on the next write, its rows kept. (Seen: the main job failed in tiny_benchmark when RouterBench's
    small board created the table before openllm.)"""
    import duckdb

    from tinybench_assets.io.store import Store

    db = Store(tmp_path / "s.duckdb")
    db.replace_partition({"results": pd.DataFrame({"x": [1.0], "calibration": [None]})}, "small")
    db.replace_partition({"results": pd.DataFrame({"x": [2.0], "calibration": ['{"x": [0, 1]}']})}, "big")
    got = db.query("SELECT * FROM results ORDER BY x")
    assert got.calibration.tolist() == [None, '{"x": [0, 1]}']
    with duckdb.connect(str(tmp_path / "old.duckdb")) as con:  # what the older version left
        con.execute('CREATE TABLE results (partition_key VARCHAR, x DOUBLE, calibration "NULL")')
        con.execute("INSERT INTO results VALUES ('small', 1.0, NULL)")
    old = Store(tmp_path / "old.duckdb")
    old.replace_partition({"results": pd.DataFrame({"x": [2.0], "calibration": ['{"x": [0, 1]}']})}, "big")
    got = old.query("SELECT * FROM results ORDER BY x")
    assert got.partition_key.tolist() == ["small", "big"] and got.calibration.tolist() == [None, '{"x": [0, 1]}']


def _write_once(path: str, q) -> None:
    import duckdb

    try:
        con = duckdb.connect(path)
        con.execute("INSERT INTO t VALUES (2)")
        con.close()
        q.put("wrote")
    except duckdb.IOException as exc:
        q.put(f"locked: {exc}")


def test_an_access_holds_the_file_only_while_it_lasts_and_accesses_of_one_process_share_it(tmp_path):
    """The store's accesses attach the file to the process's one DuckDB instance: another process cannot write while
    one lasts and can right after; nested accesses and threads of one process share it; two spellings of one path
    are one file; a write inside a read-only access of the same thread is a clear error, not a wait for itself."""
    import os
    import threading

    import pytest

    from tinybench_assets.io.connection import _ATTACHMENTS, DuckDBFile

    path = tmp_path / "a.duckdb"
    db = DuckDBFile(path, schema="CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    db.execute("INSERT INTO t VALUES (1)")
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    with db.connect() as con:
        p = ctx.Process(target=_write_once, args=(str(path), q))
        p.start()
        p.join(60)
        assert q.get(timeout=5).startswith("locked")  # held while the access lasts
        with DuckDBFile(tmp_path / "." / "a.duckdb").connect(read_only=True) as inner:  # nested, another spelling
            assert inner.execute("SELECT count(*) FROM t").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM t").fetchone() == (1,)
    assert _ATTACHMENTS._attached == {}  # detached: the lock is released
    p = ctx.Process(target=_write_once, args=(str(path), q))
    p.start()
    p.join(60)
    assert q.get(timeout=5) == "wrote"

    def insert(i):
        for _ in range(10):
            db.execute("INSERT INTO t VALUES (?)", [i])

    threads = [threading.Thread(target=insert, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert db.query("SELECT count(*) AS n FROM t")["n"].iloc[0] == 32
    with db.connect(read_only=True):
        with pytest.raises(RuntimeError, match="write access inside a read-only access"):
            with db.connect():
                pass
    assert _ATTACHMENTS._attached == {} and os.path.exists(path)


def test_an_access_ended_in_another_thread_still_detaches_the_file(tmp_path):
    """A block may end in another thread than it began (a generator finished elsewhere): the file is detached all
    the same, and the next access attaches it afresh."""
    import threading

    from tinybench_assets.io.connection import _ATTACHMENTS, DuckDBFile

    db = DuckDBFile(tmp_path / "b.duckdb", schema="CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    db.execute("INSERT INTO t VALUES (1)")
    block = db.connect(read_only=True)
    con = block.__enter__()
    assert con.execute("SELECT count(*) FROM t").fetchone() == (1,)
    t = threading.Thread(target=block.__exit__, args=(None, None, None))
    t.start()
    t.join(30)
    assert _ATTACHMENTS._attached == {}
    db.execute("INSERT INTO t VALUES (2)")
    assert db.query("SELECT count(*) AS n FROM t")["n"].iloc[0] == 2
