"""``tinybench route``: send questions to the model most likely to answer them, from a stored router, offline.

    tinybench route --leaderboard routerdc --scenario mmlu "question text" ["another question" ...]
    tinybench route --leaderboard routerdc "question of any scenario"     (the leaderboard's mixed-traffic router)
    tinybench route --leaderboard routerdc --scenario mmlu --questions questions.csv [--json] [--output routes.csv]
    tinybench route --leaderboard routerbench --scenario mbpp --objective quality_at_min_cost --tolerance 1 "..."
    tinybench route --leaderboard routerbench --scenario mbpp --max-cost 0.001 "..."
    tinybench route --leaderboard routellm --scenario mmlu --threshold strong30 "..."   (a calibrated threshold)

The router is the one ``router_accuracy`` saved for partition ``BOARD.SCENARIO``
(``$TINYBENCH_ARTIFACTS/BOARD/router_SCENARIO.npz``; ``--router FILE`` overrides it); without ``--scenario``, the one
``leaderboard_router`` saved for the leaderboard (``$TINYBENCH_ARTIFACTS/BOARD/router.npz``), which also flags a
question unlike every training question as out of distribution and sends it to the model it trusts most overall. Questions are embedded
with the encoder recorded in the router (the packaged all-MiniLM-L6-v2, or the static encoder distilled from it, found
by its id under ``$TINYBENCH_ARTIFACTS/encoders``; no hub access) and routed exactly as
the asset routes its test questions: argmax of P(correct) with the router's margin and the tie-break by
training accuracy. No DuckDB store is read. Bad input exits with code 2 and a one-line error on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

from tinybench_assets import paths
from tinybench_assets.cli.errors import UsageError
from tinybench_assets.cli.questions import clean_question, read_questions
from tinybench_assets.cli.route_policy import cost_policy, threshold_policy

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions

PACKAGED_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
JSON_TEXT_CHARS = 200


def default_router_path(board: str, scenario: str | None) -> Path:
    """Where ``router_accuracy`` saves the partition's router (``leaderboard_router`` the leaderboard's, scenario None):
    the rule of ``io.model_files`` that the ``ModelStore`` resource uses, without importing Dagster. A name with ``/``,
    ``..`` or a NUL byte is a UsageError."""
    from tinybench_assets.io.model_files import BOARD_ROUTER_FILE, UnsafeNameError, model_path, router_file

    try:
        return model_path(
            paths.artifacts_dir(), board, BOARD_ROUTER_FILE if scenario is None else router_file(scenario)
        )
    except UnsafeNameError as e:
        raise UsageError(str(e)) from None


# --------------------------------------------------------------------------------------------- routing
def _load_router(args):
    from tinybench_assets.core.routing.served import RouterFileError, ServedRouter

    if args.router:
        path = Path(args.router)
    else:
        if not args.leaderboard:
            raise UsageError("give --leaderboard (and --scenario for a scenario's router), or --router FILE")
        path = default_router_path(args.leaderboard, args.scenario)
    want = (f"{args.leaderboard}.{args.scenario}" if args.scenario else args.leaderboard) if args.leaderboard else None
    if not path.is_file():
        if args.router:
            raise UsageError(f"no router at {path}")
        what = (
            f"router_accuracy for partition {want}" if args.scenario else f"leaderboard_router for leaderboard {want}"
        )
        raise UsageError(f"no router at {path}: materialize {what} first")
    try:
        served = ServedRouter.load(path, partition=want)
    except RouterFileError as e:
        raise UsageError(str(e)) from None
    return path, served


def check_device(device: str) -> None:
    """A UsageError naming the device when ``cuda`` is asked for on a machine where torch has none."""
    if device != "cuda":
        return
    import torch

    if not torch.cuda.is_available():
        why = "this torch build has no CUDA support" if torch.version.cuda is None else "no CUDA device is visible"
        raise UsageError(
            f"--device cuda: {why} (torch {torch.__version__}); use --device cpu, or --device auto "
            "(cuda where available, else cpu)"
        )


def _encoder(meta: dict, path: Path, device: str, threads: int):
    from tinybench_assets.io.embeddings import DEFAULT_MODEL, Encoder
    from tinybench_assets.io.static_encoder import PREFIX, StaticEncoder, StaticEncoderMissing, find_static_encoder

    check_device(device)
    if meta["encoder"].startswith(PREFIX):  # the distilled static encoder, found by its id under the artifacts folder
        try:
            return StaticEncoder(find_static_encoder(meta["encoder"]))
        except StaticEncoderMissing as e:
            raise UsageError(f"router {path}: {e}") from None
    if meta["encoder"] != PACKAGED_ENCODER:
        raise UsageError(
            f"router {path} was trained on {meta['encoder']} embeddings; only the packaged "
            f"{PACKAGED_ENCODER} encoder and the static encoder distilled from it can embed questions offline here"
        )
    return Encoder(DEFAULT_MODEL, device=device, num_threads=threads)


@contextlib.contextmanager
def _offline_and_quiet():
    """No hub access, and no "Loading weights" progress bar on stderr (restored afterwards)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def decide(served, enc, questions: list[tuple[str, str]], policy=None) -> tuple[list[dict], object, object]:
    """The routing decision of ``tinybench route`` and of the server: (one result dict per question, P, ood) for
    (id, text) pairs, embedded with ``enc`` and routed by ``served`` with ``policy`` (None: accuracy)."""
    texts = [t for _, t in questions]
    try:
        with _offline_and_quiet():
            E = enc.encode(texts)
        X = served.inputs(E, texts)  # the text's form beside the embedding, where trained so
    except (OSError, RuntimeError) as e:
        raise UsageError(
            f"cannot embed the questions: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from None
    P, picks, ood = route_questions(served, X, policy)
    meta = served.meta
    models = list(meta["models"])
    model_cost = (meta.get("cost") or {}).get("model_cost")
    results = []
    for i, ((ident, text), row, pick) in enumerate(zip(questions, P, picks)):
        order = sorted(range(len(models)), key=lambda j: (-row[j], j))
        results.append(
            {
                "id": ident,
                "question": text,
                "chosen_model": models[int(pick)],
                "expected_accuracy": float(row[int(pick)]),
                **({"out_of_distribution": bool(ood[i])} if ood is not None else {}),
                **({"expected_cost": float(model_cost[int(pick)])} if model_cost else {}),
                "p": {models[j]: float(row[j]) for j in order},
            }
        )
    return results, P, ood


def json_rows(results: list[dict]) -> list[dict]:
    """The results as ``--json`` prints them (question text cut to JSON_TEXT_CHARS)."""
    return [{**r, "question": _short(r["question"], JSON_TEXT_CHARS)} for r in results]


def route_questions(served, E, policy=None):
    """(P, picks, out-of-distribution flags or None) of embedded questions (core/routing/served.py); a router that
    gives the wrong shape is a UsageError."""
    from tinybench_assets.core.routing.served import RouterFileError

    try:
        return served.route(E, policy)
    except RouterFileError as e:
        raise UsageError(str(e)) from None


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def format_table(results: list[dict], meta: dict, source: str, policy: dict | None = None) -> str:
    """The human-readable report: per question the chosen model, then every model's P(correct), highest first;
    the objective and, where costs landed, the expected accuracy and cost per question."""
    cfg = meta.get("config") or {}
    policy = policy or {"objective": "accuracy", "policy": None, "rule": ""}
    lines = [
        f"{meta.get('partition', '?')} router: {meta.get('served', '?')} {json.dumps(cfg)} "
        f"(margin {float(meta.get('margin', 0.0)):g}; {len(results)} question(s) from {source})",
        f"objective {policy['objective']}"
        + (f", {policy['policy'].label()}" if policy["policy"] else "")
        + (f": {policy['rule']}" if policy["rule"] else ""),
    ]
    if results:
        mean_acc = sum(r["expected_accuracy"] for r in results) / len(results)
        cost = [r["expected_cost"] for r in results if "expected_cost" in r]
        lines.append(
            f"expected accuracy {100 * mean_acc:.1f} %"
            + (f", expected cost {sum(cost) / len(cost):.6g} per question" if cost else "")
        )
    w = max(len(m) for m in meta["models"])
    for r in results:
        lines.append("")
        lines.append(f"[{r['id']}] {_short(r['question'], 100)}")
        lines.append(
            f"  chosen: {r['chosen_model']} (expected P(correct) {r['expected_accuracy']:.3f}"
            + (f", expected cost {r['expected_cost']:.6g})" if "expected_cost" in r else ")")
        )
        if r.get("out_of_distribution"):
            lines.append(
                "  OUT OF DISTRIBUTION: unlike every training question; sent to the model with the best "
                "training accuracy"
            )
        for m, p in r["p"].items():
            mark = "*" if m == r["chosen_model"] else " "
            lines.append(f"  {mark} {m:<{w}}  P(correct) {p:.3f}")
    lines.append("")
    lines.append(
        "* = chosen (argmax of P; ties go to the higher training accuracy; "
        "a margin keeps the best single model unless another beats it by more)"
    )
    return "\n".join(lines)


def route_cmd(args: argparse.Namespace) -> int:
    try:
        if args.threads < 0:
            raise UsageError("--threads must be >= 0")
        if args.questions and args.texts:
            raise UsageError("give question texts or --questions FILE, not both")
        if args.questions:
            questions, source = read_questions(args.questions), str(args.questions)
        elif args.texts:
            questions = [(str(i), clean_question(t, f"question {i}")) for i, t in enumerate(args.texts, start=1)]
            source = "the command line"
        else:
            raise UsageError("give one or more question texts or --questions FILE")
        path, served = _load_router(args)
        meta = served.meta
        enc = _encoder(meta, path, args.device, args.threads)
        if args.threshold is not None:
            extra = {"--tolerance": args.tolerance, "--max-cost": args.max_cost, "--min-accuracy": args.min_accuracy}
            objective, chosen, rule = threshold_policy(path, served, args.threshold, args.objective, extra)
        else:
            objective, chosen, rule = cost_policy(
                meta, args.objective, args.tolerance, args.max_cost, args.min_accuracy
            )
        results, P, ood = decide(served, enc, questions, chosen)
    except UsageError as e:
        print(f"tinybench route: error: {e}", file=sys.stderr)
        return 2
    models = list(meta["models"])
    model_cost = (meta.get("cost") or {}).get("model_cost")
    policy = {"objective": objective, "policy": chosen, "rule": rule}
    if args.output:
        import pandas as pd

        df = pd.DataFrame(
            {
                "id": [r["id"] for r in results],
                "question": [r["question"] for r in results],
                "chosen_model": [r["chosen_model"] for r in results],
                "expected_accuracy": [r["expected_accuracy"] for r in results],
            }
        )
        if ood is not None:
            df["out_of_distribution"] = ood
        if model_cost:
            df["expected_cost"] = [r["expected_cost"] for r in results]
        for j, m in enumerate(models):
            df[f"p_{m}"] = P[:, j]
        df.to_csv(args.output, index=False)
    if args.json:
        print(json.dumps(json_rows(results), indent=1, ensure_ascii=False))
        if args.output:
            print(f"tinybench route: {len(results)} route(s) written to {args.output}", file=sys.stderr)
    else:
        print(format_table(results, meta, source, policy))
        if args.output:
            print(f"{len(results)} route(s) written to {args.output}")
    return 0


def add_parsers(sub) -> None:
    """Register the ``route`` subcommand on the ``tinybench`` parser's subparsers."""
    p = sub.add_parser(
        "route",
        help="route questions to the model most likely to answer them (stored router, offline)",
        description="Route questions with the router saved by router_accuracy: the chosen model and "
        "every model's P(correct) per question. Offline; no DuckDB store needed.",
    )
    p.add_argument("texts", nargs="*", metavar="QUESTION", help="question text(s)")
    p.add_argument("--leaderboard", help="leaderboard of the router's partition (e.g. routerdc)")
    p.add_argument(
        "--scenario",
        help="scenario of the router's partition (e.g. mmlu); without it, the leaderboard's "
        "mixed-traffic router (questions of any scenario)",
    )
    p.add_argument(
        "--router",
        help="router file (default: $TINYBENCH_ARTIFACTS/LEADERBOARD/router_SCENARIO.npz, "
        "or LEADERBOARD/router.npz without --scenario)",
    )
    p.add_argument(
        "--questions",
        help="questions file: .csv/.parquet with a question/prompt/text column "
        "(optional id/item), .jsonl/.json, or .txt with one question per line",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.add_argument("--output", help="also write the routes as CSV (id, question, chosen_model, p_<model> ...)")
    p.add_argument(
        "--objective",
        choices=("accuracy", "quality_at_min_cost", "max_cost", "min_accuracy"),
        help="what to serve (default: the router file's choice: quality_at_min_cost where costs landed, "
        "else accuracy); cost objectives re-choose lambda from the router's training-CV sweep",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        help="quality_at_min_cost: accuracy points below the best single model allowed (default: the asset's, 1)",
    )
    p.add_argument("--max-cost", type=float, help="max_cost: mean cost per question allowed (the drop's cost unit)")
    p.add_argument("--min-accuracy", type=float, help="min_accuracy: accuracy (percent) to reach at the least cost")
    p.add_argument(
        "--threshold",
        help="route by a threshold instead of an objective: a number, or the name of one saved by tinybench "
        "calibrate (the strongest model where its P(correct) exceeds every other's by it or more, else the most likely "
        "other model)",
    )
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"), help="encoder device (default cpu)")
    p.add_argument(
        "--threads", type=int, default=2, help="torch CPU threads for the encoder (default 2; 0 = torch default)"
    )
    p.set_defaults(func=route_cmd)
