"""The routing policy ``tinybench route`` and ``tinybench serve`` route with: the router file's own objective, a
cost objective re-chosen among its training-CV operating points (``cost_policy``), or a threshold, given as a number
or by the name ``tinybench calibrate`` saved it under (``threshold_policy``; core/routing/threshold.py)."""

from __future__ import annotations

from pathlib import Path

from tinybench_assets.cli.errors import UsageError

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions


def saved_points(cost: dict) -> list:
    """The router file's training-CV operating points (core.routing.cost.OperatingPoint) of its served family. A file
    written before cascades were served holds a lambda sweep and the best single model's figures instead."""
    from tinybench_assets.core.routing.cost import OperatingPoint, Policy

    if "points" in cost:
        pts = cost["points"]
        return [
            OperatingPoint(Policy(k, None if v is None else float(v)), float(a), float(c), "")
            for k, v, a, c in zip(pts["policy"], pts["value"], pts["cv_acc"], pts["cv_cost"])
        ]
    sw, (acc, c) = cost["sweep"], cost["best_single"]
    return [OperatingPoint(Policy("single"), float(acc), float(c), "")] + [
        OperatingPoint(Policy("lambda", float(v)), float(a), float(k), "")
        for v, a, k in zip(sw["lambda"], sw["cv_acc"], sw["cv_cost"])
    ]


def saved_policy(cost: dict):
    """The router file's served cost policy (old files: ``lambda``, None for the best single model)."""
    from tinybench_assets.core.routing.cost import Policy

    if "policy" in cost:
        return Policy(cost["policy"], None if cost["value"] is None else float(cost["value"]))
    return Policy("single") if cost["lambda"] is None else Policy("lambda", float(cost["lambda"]))


def cost_policy(
    meta: dict, objective: str | None, tolerance: float | None, max_cost: float | None, min_accuracy: float | None
) -> tuple[str, object, str]:
    """(objective, policy, rule) to route with; policy None: the accuracy objective (argmax of P with the router's
    margin), else a core.routing.cost.Policy. Without flags: the router file's own choice (its cost objective where
    costs landed, else accuracy). A cost objective re-chooses among the file's training-CV operating points (no data
    read): ``tolerance`` and ``min_accuracy`` in accuracy points, ``max_cost`` in the drop's cost unit per question."""
    from tinybench_assets.core.routing.cost import OBJECTIVES, pick_point

    cost = meta.get("cost")
    if objective is None:
        objective = (
            "max_cost"
            if max_cost is not None
            else "min_accuracy"
            if min_accuracy is not None
            else (cost["objective"] if cost else "accuracy")
        )
    if objective not in OBJECTIVES:
        raise UsageError(f"--objective {objective}: one of {', '.join(OBJECTIVES)}")
    if objective == "accuracy":
        return objective, None, "argmax of P(correct)"
    if not cost:
        raise UsageError(
            f"--objective {objective}: router {meta.get('partition', '?')} was trained without costs "
            "(no per-question costs landed); only --objective accuracy"
        )
    if objective == "max_cost" and max_cost is None:
        raise UsageError("--objective max_cost needs --max-cost")
    if objective == "min_accuracy" and min_accuracy is None:
        raise UsageError("--objective min_accuracy needs --min-accuracy")
    tol = cost.get("tolerance", 0.01) if tolerance is None else tolerance / 100
    if objective == cost["objective"] == "quality_at_min_cost" and abs(tol - cost.get("tolerance", 0.01)) < 1e-12:
        return objective, saved_policy(cost), cost["rule"]
    point = pick_point(
        saved_points(cost),
        objective,
        tolerance=tol,
        max_cost=max_cost,
        min_accuracy=None if min_accuracy is None else min_accuracy / 100,
    )
    return objective, point.policy, point.rule


def threshold_policy(
    path: Path, served, threshold: str, objective: str | None, extra: dict, sha_of=None
) -> tuple[str, object, str]:
    """(objective ``threshold``, a core.routing.threshold.ThresholdPolicy, rule) for ``threshold``: a number, or the
    name of a threshold ``tinybench calibrate`` saved beside the router file (``sha_of(path)``: the router file's
    sha256, default computed here). A threshold sets the cost-quality point itself, so it takes no ``accuracy``
    objective and none of the cost objectives' own figures (``extra``: tolerance, max_cost, min_accuracy)."""
    from tinybench_assets.core.routing.threshold import ThresholdPolicy, strongest
    from tinybench_assets.hashing import file_sha256
    from tinybench_assets.serving.thresholds import ThresholdError, load_threshold, parse_threshold

    if objective == "accuracy":
        raise UsageError("a threshold routes by the threshold rule; it takes no objective accuracy")
    given = [k for k, v in extra.items() if v is not None]
    if given:
        raise UsageError(f"a threshold sets the operating point itself; drop {', '.join(given)}")
    try:
        value = parse_threshold(threshold)
        saved = None
        if isinstance(value, str):
            saved = load_threshold(path, value, (sha_of or file_sha256)(path))
        policy = ThresholdPolicy(float(saved["threshold"]) if saved else float(value))
    except (ThresholdError, ValueError) as e:
        raise UsageError(str(e)) from None
    strong = served.models[strongest(served.prior)]
    rule = (
        f"{strong} where its P(correct) exceeds every other model's by {policy.value:.6g} or more, "
        "else the most likely other model"
    )
    if saved:
        rule += f" (saved threshold {saved['name']}: {100 * saved['strong_share']:.1f} % to {strong} on "
        rule += f"{saved['n_questions']} calibration questions)"
    return "threshold", policy, rule
