"""``tinybench calibrate``: the threshold that sends a chosen share of your own questions to the strongest model
(RouteLLM's calibration), saved by name beside the router for ``tinybench route --threshold NAME`` and the server's
``router:<leaderboard>/<scenario>?threshold=NAME``.

    tinybench calibrate --leaderboard routellm --scenario mmlu --questions my_traffic.csv --strong-share 0.3
    tinybench calibrate --leaderboard routerbench --scenario mbpp --questions my_traffic.csv --max-cost 0.002

The questions are routed as ``tinybench route`` routes them (the same router file, encoder and code path); the
threshold rule is core/routing/threshold.py's (the strongest model where its P(correct) exceeds every other model's
by the threshold or more, else the most likely other model). ``--max-cost`` needs a router trained with costs: the
threshold sending the most questions to the strongest model whose expected cost per question stays within it. Bad
input exits with code 2 and a one-line error on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

from tinybench_assets.cli.errors import UsageError

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions


def default_name(args) -> str:
    if args.strong_share is not None:
        return f"strong{round(100 * args.strong_share):d}"
    return f"maxcost{args.max_cost:g}".replace("+", "")


def calibrate_cmd(args: argparse.Namespace) -> int:
    import numpy as np

    from tinybench_assets.cli.questions import read_questions
    from tinybench_assets.cli.route import _encoder, _load_router, decide
    from tinybench_assets.core.routing.threshold import calibrate_cost, calibrate_share, strongest
    from tinybench_assets.hashing import file_sha256
    from tinybench_assets.serving.thresholds import ThresholdError, save_threshold, threshold_path

    try:
        if (args.strong_share is None) == (args.max_cost is None):
            raise UsageError("give --strong-share X (0 to 1) or --max-cost C")
        if args.strong_share is not None and not 0 <= args.strong_share <= 1:
            raise UsageError(f"--strong-share {args.strong_share:g}: a share between 0 and 1")
        name = args.name or default_name(args)
        questions = read_questions(args.questions)
        path, served = _load_router(args)
        try:
            target = threshold_path(path, name)
        except ThresholdError as e:
            raise UsageError(str(e)) from None
        meta = served.meta
        model_cost = (meta.get("cost") or {}).get("model_cost")
        if args.max_cost is not None and model_cost is None:
            raise UsageError(
                f"--max-cost: router {meta.get('partition', path)} was trained without costs; give --strong-share "
                "(RouteLLM's cost: the share of calls to the strong model)"
            )
        if len(served.models) < 2:
            raise UsageError(f"router {path} serves one model: there is nothing to calibrate")
        enc = _encoder(meta, path, args.device, args.threads)
        _, P, ood = decide(served, enc, questions)
    except UsageError as e:
        print(f"tinybench calibrate: error: {e}", file=sys.stderr)
        return 2
    prior, cost = served.prior, None if model_cost is None else np.asarray(model_cost, dtype=float)
    if args.strong_share is not None:
        cal = calibrate_share(P, prior, args.strong_share, ood, cost)
    else:
        cal = calibrate_cost(P, prior, cost, args.max_cost, ood)
    source = {"file": str(args.questions), "sha256": file_sha256(args.questions), "n": len(questions)}
    saved = save_threshold(path, name, file_sha256(path), cal.as_dict(), source)
    assert saved == target
    strong = served.models[strongest(prior)]
    out = {
        "name": name,
        "file": str(saved),
        "router": meta.get("partition"),
        "strongest_model": strong,
        **cal.as_dict(),
    }
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    where = f"{meta.get('partition', path)}".replace(".", "/", 1)
    print(f"threshold {cal.threshold:.6g} saved as {name!r} ({saved})")
    print(
        f"on your {cal.n_questions} question(s) it sends {100 * cal.strong_share:.1f} % to {strong}"
        + (f", expected cost {cal.mean_cost:.6g} per question" if cal.mean_cost is not None else "")
        + ("" if cal.met else " (no threshold keeps within --max-cost: the cheapest routing)")
    )
    print(f"use it: tinybench route ... --threshold {name}, or model router:{where}?threshold={name}")
    return 0


def add_parsers(sub) -> None:
    """Register the ``calibrate`` subcommand on the ``tinybench`` parser's subparsers."""
    p = sub.add_parser(
        "calibrate",
        help="calibrate a router's threshold on your own questions (a share to the strongest model, or a cost)",
        description="The threshold that sends a chosen share of your questions to the strongest model (or keeps "
        "their expected cost within a budget), saved by name beside the router. Offline; no DuckDB store needed.",
    )
    p.add_argument("--leaderboard", help="leaderboard of the router (e.g. routellm)")
    p.add_argument("--scenario", help="scenario of the router (e.g. mmlu); without it, the leaderboard's router")
    p.add_argument("--router", help="router file (default: the one tinybench route reads)")
    p.add_argument("--questions", required=True, help="your questions: the files tinybench route --questions reads")
    p.add_argument("--strong-share", type=float, help="share of the questions (0 to 1) to send to the strongest model")
    p.add_argument("--max-cost", type=float, help="expected cost per question allowed (routers trained with costs)")
    p.add_argument("--name", help="the threshold's name (default strong<percent> or maxcost<cost>)")
    p.add_argument("--json", action="store_true", help="print the calibration as JSON")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"), help="encoder device (default cpu)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads for the encoder (default 2)")
    p.set_defaults(func=calibrate_cmd)
