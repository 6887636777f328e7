"""``tinybench estimate`` and ``tinybench anchors``: use an exported tiny benchmark offline.

    tinybench anchors  --leaderboard openllm [--n N | --target-width W] [--format csv|json|harness] [--with-text]
                       [--output FILE]
    tinybench estimate --leaderboard openllm --answers answers.csv [--json] [--no-learned] [--allow-missing]

A small board's export prepares several budgets from nested anchors (core/tiny_benchmark/budgets.py): ``--n N``
lists the first N anchors of every scenario (any N up to its pool; the answers to n = 30 are part of n = 100's),
``--target-width W`` the smallest prepared budget whose backtested 90 % half-width is at most W points in every
scenario. ``estimate`` scores the answers with the largest prepared budget whose anchors they cover.

``--artifact FOLDER`` (or the folder's tiny_benchmark.json) may replace ``--leaderboard NAME``, which stands for
``$TINYBENCH_ARTIFACTS/NAME``. The folder's tiny_benchmark.json and learned_models.npz (the learned estimators'
trees as plain arrays) are all that is read: nothing is unpickled, so an artifact from anyone is safe to use (any
predictor.pkl in the folder is ignored). Bad input, or a malformed artifact, exits with code 2 and a one-line
error on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from tinybench_assets import paths
from tinybench_assets.cli.errors import UsageError

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions


def _artifact_path(args) -> Path:
    if args.artifact:
        return Path(args.artifact)
    root = Path(paths.artifacts_dir())
    if args.leaderboard:
        return root / args.leaderboard
    found = sorted(p.parent.name for p in root.glob("*/tiny_benchmark.json")) if root.is_dir() else []
    if len(found) == 1:
        return root / found[0]
    raise UsageError(
        "give --artifact FOLDER or --leaderboard NAME"
        + (f" (exported under {root}: {', '.join(found)})" if found else f" (no tiny benchmark exported under {root})")
    )


def _load(args):
    from tinybench_assets.core.tiny_benchmark import load_artifact

    return load_artifact(_artifact_path(args))


def _pct(x: float) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{100 * x:.1f} %"


def _interval(lo: float, up: float) -> str:
    if not (math.isfinite(lo) and math.isfinite(up)):
        return "-"
    return f"[{100 * lo:.1f}, {100 * up:.1f}]"


def budget(estimator: str) -> str:
    """``own`` when the estimator reads only the scenario's own anchors, ``joint`` when it also reads the other
    scenarios' anchors (the whole tiny benchmark's answers)."""
    from tinybench_assets.core.estimation.predictor import JOINT, PER_SCENARIO

    if estimator in JOINT:
        return "joint"
    if estimator in PER_SCENARIO:
        return "own"
    return "joint" if "joint" in str(estimator) else "own"


def format_table(df, art: dict, source: str = "") -> str:
    """The human-readable report printed by ``tinybench estimate``."""
    level = f"{round(100 * (1 - float(art.get('alpha', 0.1))))}% interval"
    w = max([8, *(len(s) for s in df.scenario)])
    lines = [
        f"{art.get('leaderboard', '?')} tiny benchmark: n={art['n']} anchors per scenario "
        f"(clustering {art['clustering']}){source}",
        f"{'scenario':<{w}}  {'answered':>8}  {'estimate':>8}  {level:>14}  {'full score':>10}  {level:>14}  "
        "budget  estimator (T1 / T2) [source]",
    ]
    for r in df.itertuples(index=False):
        est = r.estimator if r.estimator == r.estimator_t2 else f"{r.estimator} / {r.estimator_t2}"
        lines.append(
            f"{r.scenario:<{w}}  {f'{r.answered}/{r.n_anchors}':>8}  {_pct(r.estimate):>8}  "
            f"{_interval(r.lower, r.upper):>14}  {_pct(r.estimate_t2):>10}  {_interval(r.lower_t2, r.upper_t2):>14}  "
            f"{budget(r.estimator):<6}  {est} [{r.source}]"
        )
    lines.append(
        "estimate: balance-weighted accuracy on the scenario's item pool; full score: the full-benchmark score"
    )
    lines.append(
        "budget: own = from this scenario's anchor answers only; joint = also from the other scenarios' anchors "
        f"(all {int(df.answered.sum())} answers)"
    )
    for note in df.attrs.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines)


def estimate_cmd(args: argparse.Namespace) -> int:
    from tinybench_assets.cli.answers import read_model_answers
    from tinybench_assets.core.tiny_benchmark import AnswerError, ArtifactError
    from tinybench_assets.io.evaluation_rows import estimate_answers

    try:
        folder = _artifact_path(args)
        answers = read_model_answers(args.answers)
        art, df = estimate_answers(
            folder,
            answers,
            use_learned=not args.no_learned,
            estimator=args.estimator,
            allow_missing=args.allow_missing,
            allow_extra=args.allow_extra,
        )
        saved = _save(args, art) if args.save else None
    except (ArtifactError, AnswerError, UsageError, OSError) as e:
        print(f"tinybench estimate: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        recs = [
            {
                **{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()},
                "budget": budget(r["estimator"]),
                "budget_t2": budget(r["estimator_t2"]),
            }
            for r in df.to_dict("records")
        ]
        print(
            json.dumps(
                {
                    "leaderboard": art.get("leaderboard"),
                    "n": art["n"],
                    "clustering": art["clustering"],
                    "alpha": art.get("alpha"),
                    "answers": str(args.answers),
                    "notes": df.attrs.get("notes", []),
                    "scenarios": recs,
                },
                indent=1,
            )
        )
    else:
        print(format_table(df, art, f", {len(answers)} answers from {args.answers}"))
    if saved is not None:
        print(
            f"saved to {saved}: the refresh sensor (or `tinybench run-all --no-seed`) keeps this evaluation in the "
            "evaluations table and re-estimates it when the tiny benchmark changes",
            file=sys.stderr,
        )
    return 0


def _save(args, art: dict) -> Path:
    """``--save``: copy the answers (a file, or a harness samples folder) into the evaluations landing folder
    ``<incoming>/evaluations/<leaderboard>/<model><suffix>``, where the ``model_evaluation`` asset picks them up."""
    import shutil

    from tinybench_assets.io.drop_types import clean_name
    from tinybench_assets.io.evaluation_files import evaluations_dir, model_name

    board = art.get("leaderboard") or args.leaderboard
    if not board:
        raise UsageError("--save needs the tiny benchmark's leaderboard (give --leaderboard NAME)")
    src = Path(args.answers)
    try:
        model = clean_name(args.model) if args.model else model_name(src)
    except ValueError:
        raise UsageError(f"--model {args.model!r} gives no model name (use letters a-z, digits, _ or -)") from None
    folder = evaluations_dir(paths.incoming_dir()) / clean_name(board)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / (model if src.is_dir() else model + src.suffix.lower())
    if src.is_dir():
        shutil.copytree(src, target, dirs_exist_ok=True)
    else:
        tmp = target.with_name(target.name + ".part")  # a partial upload the listing skips, renamed when whole
        shutil.copyfile(src, tmp)
        tmp.replace(target)
    return target


def _budget_anchors(args, art: dict):
    """(artifact, anchors DataFrame) for ``--n`` / ``--target-width`` (a small board's prepared budgets)."""
    import pandas as pd

    from tinybench_assets.core.tiny_benchmark import ArtifactError, anchor_list, load_artifact
    from tinybench_assets.core.tiny_benchmark.budgets import load_budgets, prefix_items, target_budget

    budgets = load_budgets(_artifact_path(args))
    if budgets is None:
        raise ArtifactError(
            f"this tiny benchmark was exported for n={art['n']} only; --n and --target-width need a "
            "small leaderboard's export (budgets.json beside it)"
        )
    prepared = {int(b["n"]): b for b in budgets["budgets"]}
    if args.target_width is not None:
        n = int(target_budget(budgets, float(args.target_width))["n"])
    else:
        n = int(args.n)
        if n < 1:
            raise UsageError("--n must be a positive number of anchors per scenario")
    if n in prepared:
        art = load_artifact(Path(budgets["_folder"]) / prepared[n]["folder"])
        return art, anchor_list(art, with_text=args.with_text), n
    items = prefix_items(budgets, n)
    texts = {}
    if args.with_text:  # the texts the largest prepared budget carries (the order's first items)
        big = load_artifact(Path(budgets["_folder"]) / prepared[max(prepared)]["folder"])
        texts = {
            it: t
            for s in big["scenario_order"]
            for it, t in zip(big["scenarios"][s]["anchors"]["items"], big["scenarios"][s]["anchors"].get("texts") or [])
        }
    df = pd.DataFrame(
        [
            {"scenario": s, "item": it, "weight": float("nan"), **({"text": texts.get(it)} if args.with_text else {})}
            for s, its in items.items()
            for it in its
        ]
    )
    below = [m for m in prepared if m <= n]
    print(
        f"note: n={n} is not a prepared budget ({', '.join(map(str, sorted(prepared)))}); `tinybench estimate` "
        + (
            f"scores these answers with the largest prepared budget they cover (n={max(below)})"
            if below
            else f"needs at least the n={min(prepared)} anchors"
        )
        + "; weights are set by the budget that scores them",
        file=sys.stderr,
    )
    return art, df, n


def anchors_cmd(args: argparse.Namespace) -> int:
    from tinybench_assets.core.tiny_benchmark import ArtifactError, anchor_list

    try:
        art = _load(args)
        if args.n is not None or args.target_width is not None:
            art, df, n = _budget_anchors(args, art)
            art = {**art, "n": n}
        else:
            df = anchor_list(art, with_text=args.with_text)
    except (ArtifactError, UsageError) as e:
        print(f"tinybench anchors: error: {e}", file=sys.stderr)
        return 2
    if args.format == "harness":
        from tinybench_assets.io.harness_drops import harness_selection

        if not args.samples_from:
            print(
                "tinybench anchors: error: --format harness needs --samples-from DIR: a model folder of "
                "samples_<task>_<timestamp>.jsonl files (any model's full run) that maps the anchors to the "
                "harness's doc indices",
                file=sys.stderr,
            )
            return 2
        selection, missing = harness_selection(df["item"].tolist(), Path(args.samples_from))
        if missing:
            print(
                f"tinybench anchors: error: {len(missing)} anchor(s) are not in {args.samples_from}: "
                f"{', '.join(missing[:5])}",
                file=sys.stderr,
            )
            return 2
        text = json.dumps(selection, indent=1) + "\n"
    elif args.format == "json":
        text = (
            json.dumps(
                {
                    "leaderboard": art.get("leaderboard"),
                    "n": art["n"],
                    "clustering": art["clustering"],
                    "anchors": df.to_dict("records"),
                },
                indent=1,
                ensure_ascii=False,
            )
            + "\n"
        )
    else:
        text = df.to_csv(index=False)
    if args.output:
        Path(args.output).write_text(text)
        print(f"{len(df)} anchors of {len(art['scenario_order'])} scenario(s) written to {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def _artifact_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--artifact", help="artifact folder (or its tiny_benchmark.json)")
    g.add_argument("--leaderboard", help="leaderboard name: the folder $TINYBENCH_ARTIFACTS/NAME")


def add_parsers(sub) -> None:
    """Register the ``estimate`` and ``anchors`` subcommands on the ``tinybench`` parser's subparsers."""
    p = sub.add_parser(
        "estimate",
        help="estimate a new model's accuracy from its answers to the anchors",
        description="Estimate a new model's accuracy per scenario (with intervals) from its answers "
        "to an exported tiny benchmark's anchors.",
    )
    _artifact_args(p)
    p.add_argument(
        "--answers",
        required=True,
        help="CSV with columns item,score, or JSON {item: score} / [{item, score}], or lm-evaluation-harness "
        "output of one model: a samples_<task>_<timestamp>.jsonl file or its folder",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--no-learned",
        action="store_true",
        help="use only the JSON-evaluable estimators (learned_models.npz is not read)",
    )
    p.add_argument("--estimator", help="force one estimator (e.g. gpirt, pirt_joint, gbm_joint)")
    p.add_argument("--allow-missing", action="store_true", help="allow a scenario with some anchors unanswered")
    p.add_argument("--allow-extra", action="store_true", help="ignore answered pool items that are not anchors")
    p.add_argument(
        "--save",
        action="store_true",
        help="also copy the answers into the evaluations landing folder (<incoming>/evaluations/<leaderboard>/), "
        "where the model_evaluation asset keeps the estimates and refreshes them",
    )
    p.add_argument("--model", help="with --save: the model's name (default: the answers file's stem)")
    p.set_defaults(func=estimate_cmd)
    p = sub.add_parser(
        "anchors",
        help="list the anchor items a new model must answer",
        description="List (or export) the anchor items of a tiny benchmark.",
    )
    _artifact_args(p)
    p.add_argument(
        "--format",
        choices=("csv", "json", "harness"),
        default="csv",
        help="harness: {task: [doc indices]} for `lm_eval --samples FILE` (needs --samples-from)",
    )
    p.add_argument(
        "--samples-from",
        help="with --format harness: a model folder of lm-evaluation-harness "
        "samples_<task>_<timestamp>.jsonl files covering the anchors",
    )
    p.add_argument("--with-text", action="store_true", help="include the item texts (prompts)")
    p.add_argument("--output", help="write to this file instead of stdout")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--n",
        type=int,
        help="anchors per scenario (a small board's export: any N up to the pool; the "
        "first N of one nested order, so a smaller budget's answers are reused)",
    )
    g.add_argument(
        "--target-width",
        type=float,
        metavar="W",
        help="the smallest prepared budget whose backtested 90 %% "
        "interval half-width is at most W accuracy points in every scenario",
    )
    p.set_defaults(func=anchors_cmd)
