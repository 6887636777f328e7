"""Several processes writing one DuckDB file at once wait for each other instead of failing."""
import multiprocessing as mp

import pandas as pd

from tinybench_assets.io.store import Store


def _writer(path: str, worker: int, rounds: int) -> None:
    store = Store(path, lock_timeout=120)
    for r in range(rounds):
        df = pd.DataFrame({"col": range(50), "item": [f"w{worker}.{i}" for i in range(50)], "subscenario": "s",
                           "balance_weight": 1.0, "split": None, "mean_score": float(r)})
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
    out = Store(path).query("SELECT partition_key, count(*) AS n, max(mean_score) AS last FROM matrix_items GROUP BY 1 ORDER BY 1")
    assert out["n"].tolist() == [50, 50, 50] and out["last"].tolist() == [14.0, 14.0, 14.0]
