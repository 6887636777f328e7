"""The ``tinybench`` console script.

    tinybench run-all            seed the landing folder, materialize what is stale or missing (--force: all), print a summary
    tinybench summary            print what the DuckDB store holds
    tinybench anchors            list the anchor items of an exported tiny benchmark
    tinybench estimate           estimate a new model's accuracy from its answers to the anchors
    tinybench route              route questions to the model most likely to answer them (stored router, offline)
    tinybench adaptive           adaptive test of a new model on one scenario, item by item (next / answer / estimate / run)
    tinybench ui                 the Dagster UI (webserver and daemon) on the project's instance
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from tinybench_assets import paths


def _instance():
    import dagster as dg

    if not os.environ.get("DAGSTER_HOME"):
        home = paths.PROJECT_ROOT / ".dagster_home"
        home.mkdir(exist_ok=True)
        if not (home / "dagster.yaml").exists():
            (home / "dagster.yaml").write_text((paths.PROJECT_ROOT / "dagster.yaml.template").read_text())
        os.environ["DAGSTER_HOME"] = str(home)
    return dg.DagsterInstance.get()


def run_all(args: argparse.Namespace) -> int:
    """Bring every partition up to date: materialize what is stale or missing (everything with --force),
    recording the runs in the Dagster instance."""
    from tinybench_assets.definitions import build_defs
    from tinybench_assets.defs.partitions import register_partitions
    from tinybench_assets.io.landing import pending_drops, seed_default_data
    from tinybench_assets.io.store import Store

    instance = _instance()
    defs = build_defs()  # resources on the paths of this environment
    t0 = time.time()
    if not args.no_seed:
        src = Path(args.data or paths.default_data_dir())
        if src.is_dir():
            copied = seed_default_data(src, paths.incoming_dir())
            print(f"landing folder {paths.incoming_dir()}: {len(copied)} file(s) copied from {src}")
        else:
            print(f"default data {src} not found; using what is already in {paths.incoming_dir()}")
    from tinybench_assets.refresh import refresh

    # the console shows warnings and errors only; every event still goes to the instance (the UI's run pages)
    quiet = {"loggers": {"console": {"config": {"log_level": args.log_level}}}}
    force = bool(getattr(args, "force", False))
    store = Store(paths.duckdb_path())
    pending = pending_drops(store, paths.incoming_dir())
    if pending or force or not store.partition_keys():
        res = refresh(defs, instance, "ingest_landing", None, force=True, run_config=quiet)
        print(f"  ingest   {'ok' if res.success else 'FAILED'} ({len(pending)} new or changed file(s))", flush=True)
        if not res.success:
            return 1
    else:
        print(f"  ingest   nothing new in {paths.incoming_dir()}", flush=True)
    keys = store.partition_keys()
    if args.only:
        keys = [k for k in keys if any(k == o or k.startswith(o + ".") for o in args.only)]
    register_partitions(instance, keys)
    failed, materialized = [], 0

    def run(job_name: str, key: str, label: str) -> None:
        nonlocal materialized
        r = refresh(defs, instance, job_name, key, force=force, run_config=quiet)
        materialized += len(r.materialized)
        what = "fresh, nothing to do" if r.fresh else f"{len(r.materialized)} materialized"
        print(f"  {label} {key:<28} {'ok' if r.success else 'FAILED'} in {r.seconds:6.1f} s  ({what})", flush=True)
        if not r.success:
            failed.append(key)

    for key in keys:
        run("refresh_scenario", key, "scenario")
    boards = sorted({k.split('.', 1)[0] for k in keys})
    for board in boards:
        run("refresh_leaderboard", board, "leaderboard")
    print(f"{len(keys)} scenario partition(s) and {len(boards)} leaderboard(s) up to date in {time.time() - t0:.0f} s; "
          f"{materialized} asset materialization(s){' (--force)' if force else ''}")
    summary(argparse.Namespace())
    if failed:
        print(f"FAILED: {failed}", file=sys.stderr)
        return 1
    return 0


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tinybench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run-all", help="seed the landing folder and materialize every asset")
    p.add_argument("--data", help="default data folder (default: $TINYBENCH_DEFAULT_DATA or ../shared/data)")
    p.add_argument("--no-seed", action="store_true", help="do not copy the default data into the landing folder")
    p.add_argument("--only", nargs="*", help="partition keys or leaderboard names to refresh (default: all)")
    p.add_argument("--force", action="store_true",
                   help="re-materialize every asset, stale or not (after a config change; default: stale or missing only)")
    p.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="Dagster console log level (default WARNING; every event is recorded in the instance anyway)")
    p.set_defaults(func=run_all)
    p = sub.add_parser("summary", help="print what the store holds")
    p.set_defaults(func=summary)
    from tinybench_assets.estimate_cli import add_parsers
    from tinybench_assets.route_cli import add_parsers as add_route_parsers
    from tinybench_assets.adaptive_cli import add_parsers as add_adaptive_parsers
    from tinybench_assets.ui_cli import add_parsers as add_ui_parsers

    add_parsers(sub)
    add_adaptive_parsers(sub)
    add_route_parsers(sub)
    add_ui_parsers(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
