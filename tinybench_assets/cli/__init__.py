"""The ``tinybench`` console script.

tinybench run-all            seed the landing folder, materialize what is stale or missing (--force: all), print a summary
tinybench summary            print what the DuckDB store holds
tinybench anchors            list the anchor items of an exported tiny benchmark
tinybench estimate           estimate a new model's accuracy from its answers to the anchors
tinybench route              route questions to the model most likely to answer them (stored router, offline)
tinybench calibrate          calibrate a router's threshold on your own questions (share to the strongest model)
tinybench serve              the routers behind an OpenAI-compatible endpoint (/v1/chat/completions, /v1/route)
tinybench adaptive           adaptive test of a new model on one scenario, item by item (next / answer / estimate / run)
tinybench ui                 the Dagster UI (webserver and daemon) on the project's instance
tinybench worker             a Celery worker of the distributed profile (deploy/README.md)
"""

from __future__ import annotations

import argparse
import os

# Imports: each subcommand imports what it runs inside its own functions (the project's modules, Dagster, torch,
# pandas), so `tinybench --help` starts in 0.3 s; with every subcommand's imports at module level it took 10.8 s
# (measured on the 2-core machine). Every module of this package follows that rule ("# cli: lazy" marks it).


def main(argv: list[str] | None = None) -> int:
    from tinybench_assets.cli.run_all import run_all
    from tinybench_assets.cli.summary import summary

    parser = argparse.ArgumentParser(
        prog="tinybench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run-all", help="seed the landing folder and materialize every asset")
    p.add_argument("--data", help="default data folder (default: $TINYBENCH_DEFAULT_DATA or ../shared/data)")
    p.add_argument("--no-seed", action="store_true", help="do not copy the default data into the landing folder")
    p.add_argument("--only", nargs="*", help="partition keys or leaderboard names to refresh (default: all)")
    p.add_argument(
        "--force",
        action="store_true",
        help="re-materialize every asset, stale or not (after a config change; default: stale or missing only)",
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="if another run-all is running on this project, exit at once (code 3) instead of waiting for it",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=0,
        help="leaderboards refreshed at once, each in its own process (default 0: one per 4 CPU cores, at "
        "most one per leaderboard, so one after another on small machines; 1: in this process)",
    )
    p.add_argument(
        "--scenario-jobs",
        type=int,
        default=int(os.environ.get("TINYBENCH_SCENARIO_JOBS") or 0),
        help="worker processes (one thread each) for the scenario partitions with work to do and the "
        "leaderboards, each leaderboard as soon as its scenarios are done (default "
        "$TINYBENCH_SCENARIO_JOBS or 0: one per CPU core; 1: everything one after another in this "
        "process). Applies when --jobs is 1 and --threads is not given",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch/BLAS CPU threads of each leaderboard's chain (default 0: cores / --jobs when several run "
        "at once, else the resources' own setting). Fits are reproducible for a given thread count",
    )
    p.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="Dagster console log level (default WARNING; every event is recorded in the instance anyway)",
    )
    p.set_defaults(func=run_all)
    p = sub.add_parser("summary", help="print what the store holds")
    p.set_defaults(func=summary)
    from tinybench_assets.cli.adaptive import add_parsers as add_adaptive_parsers
    from tinybench_assets.cli.calibrate import add_parsers as add_calibrate_parsers
    from tinybench_assets.cli.estimate import add_parsers
    from tinybench_assets.cli.route import add_parsers as add_route_parsers
    from tinybench_assets.cli.serve import add_parsers as add_serve_parsers
    from tinybench_assets.cli.ui import add_parsers as add_ui_parsers
    from tinybench_assets.cli.worker import add_parsers as add_worker_parsers

    add_parsers(sub)
    add_adaptive_parsers(sub)
    add_route_parsers(sub)
    add_calibrate_parsers(sub)
    add_serve_parsers(sub)
    add_ui_parsers(sub)
    add_worker_parsers(sub)
    args = parser.parse_args(argv)
    return args.func(args)
