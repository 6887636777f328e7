"""``tinybench summary``: print what the DuckDB store holds (also the end of ``tinybench run-all``)."""
from __future__ import annotations

import argparse

from tinybench_assets import paths


def summary(args: argparse.Namespace) -> int:
    from tinybench_assets.io.store import Store

    store = Store(paths.duckdb_path())
    print(f"\nDuckDB store: {store.path}")
    df = store.query(
        """SELECT m.partition_key, count(*) AS models, any_value(i.items) AS items, round(100 * avg(m.accuracy), 2) AS mean_acc_pct,
                  any_value(b.rule) AS binarization, round(any_value(b.threshold), 3) AS threshold
           FROM matrix_models m
           JOIN (SELECT partition_key, count(*) AS items FROM matrix_items GROUP BY 1) i USING (partition_key)
           LEFT JOIN binarization b USING (partition_key)
           GROUP BY 1 ORDER BY 1"""
    )
    print(df.to_string(index=False))
    q = store.query("SELECT count(*) AS n FROM quarantine")["n"].iloc[0]
    print(f"quarantined files so far: {q}")
    for table, title in (("irt_fits", "IRT fits"), ("backtest_summary", "estimation backtest"),
                         ("router_metrics", "router (test questions; served router chosen on training questions)")):
        if table in store.tables():
            print(f"\n{title}:")
            from tinybench_assets.io import reports

            print(reports.render(store, table))
    return 0
