"""``tinybench summary``: print what the results store holds (also the end of ``tinybench run-all``)."""

from __future__ import annotations

import argparse

from tinybench_assets import paths

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions


def summary(args: argparse.Namespace) -> int:
    from tinybench_assets.io.store import Store

    store = Store(paths.store_target())
    print(f"\n{'DuckDB' if store.engine == 'duckdb' else 'PostgreSQL'} store: {store.location}")
    df = store.scenario_summary()
    print(df.to_string(index=False))
    q = store.n_quarantined()
    print(f"quarantined files so far: {q}")
    for table, title in (
        ("irt_fits", "IRT fits"),
        ("backtest_summary", "estimation backtest"),
        (
            "budgets",
            "small leaderboards: error and 90 % half-width against the anchor budget "
            "(leave-family-out; `tinybench anchors --n N` or --target-width W)",
        ),
        ("router_metrics", "router (test questions; served router chosen on training questions)"),
    ):
        if (table if table != "budgets" else "backtest_summary") in store.tables():
            print(f"\n{title}:")
            from tinybench_assets.io import reports

            print(reports.render(store, table))
    from tinybench_assets.io import reports

    print(
        "\nevaluations (latest per model, accuracy points; `tinybench estimate --save` or data/incoming/evaluations/):"
    )
    print(reports.evaluations_report(store))
    return 0
