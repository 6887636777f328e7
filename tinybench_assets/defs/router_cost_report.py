"""The cost side of the router report, where per-question costs landed (RouterBench): the objective served and the
operating point chosen on training questions, the cost-quality curve of the family with the best training AIQ gain,
AIQ on the test questions against the zero router, and what ``tinybench route`` needs to serve a cost objective.
``cost_part`` is what ``router_accuracy`` calls (through defs/router_report.py)."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets.core.routing.cost import (
    choose_point,
    cost_quality_report,
    expected_cost,
    training_aiq_gain,
    training_points,
)
from tinybench_assets.core.routing.families import simplicity
from tinybench_assets.io import plots, router_plots
from tinybench_assets.io.routing_reads import cost_matrix
from tinybench_assets.io.store import Store


def cost_choice(config, objective: str, sel, test_P: dict, Ytr, Ctr, prior):
    """(family, OperatingPoint) to serve where costs landed, chosen on TRAINING questions: every policy (the best single
    model, the lambda sweep, the cascade thresholds) of each fitted family's out-of-fold P through
    ``core.routing.cost.choose_point``; across families the same rule (cheapest point that meets the target; for
    max_cost the most accurate within it)."""
    points = {
        f: choose_point(
            sel.oof[f],
            Ytr,
            Ctr,
            prior,
            objective,
            tolerance=config.tolerance,
            max_cost=config.max_cost,
            min_accuracy=config.min_accuracy,
        )
        for f in test_P
        if f in sel.oof
    }
    if objective == "max_cost":
        fam = max(points, key=lambda f: (points[f].accuracy, -points[f].cost))
    elif objective == "accuracy":
        fam = sel.served if sel.served in points else next(iter(points))
    else:
        met = [f for f in points if points[f].policy.kind != "single" and points[f].met]
        fam = min(met or points, key=lambda f: (points[f].cost, -points[f].accuracy))
    return fam, points[fam]


def curve_family(sel, families, Ytr, Ctr, prior) -> tuple[str, dict]:
    """The family whose cost-quality curve the report shows: the highest AIQ gain over the zero router on TRAINING
    questions (out-of-fold P), ties to the simpler family; with every family's gain."""
    gains = {f: training_aiq_gain(sel.oof[f], Ytr, Ctr, prior) for f in families if f in sel.oof}
    return min(gains, key=lambda f: (-round(gains[f], 12), simplicity(f))), gains


def cost_file_meta(objective: str, config, choice, P_oof, Ytr, Ctr, prior) -> dict:
    """What ``tinybench route`` needs to serve a cost objective without data: each model's mean training cost per
    question (what routing prices it at), the served policy, and every policy of the served family with its
    training-CV accuracy and cost, from which ``--tolerance`` / ``--max-cost`` / ``--min-accuracy`` choose another."""
    pts = training_points(P_oof, Ytr, Ctr, prior)
    return {
        "objective": objective,
        "tolerance": config.tolerance,
        **choice[1].policy.as_dict(),
        "rule": choice[1].rule,
        "model_cost": [float(c) for c in expected_cost(Ctr)],
        "points": {
            "policy": [p.policy.kind for p in pts],
            "value": [p.policy.value for p in pts],
            "cv_acc": [p.accuracy for p in pts],
            "cv_cost": [p.cost for p in pts],
        },
    }


def cost_row(objective: str, choice, rep: dict, models, best: int, curve: tuple[str, dict]) -> dict:
    """The one-row router_cost_quality table."""
    fam, point = choice
    return {
        "objective": objective,
        "family": fam,
        "curve_family": curve[0],
        "curve_cv_aiq_gain": curve[1][curve[0]],
        "policy": point.policy.kind,
        "policy_value": point.policy.value,
        "lambda": point.policy.value if point.policy.kind == "lambda" else None,
        "rule": point.rule,
        "cv_acc": point.accuracy,
        "cv_cost": point.cost,
        "served_acc": rep["served_acc"],
        "served_acc_lo": rep["served_acc_ci"][0],
        "served_acc_hi": rep["served_acc_ci"][1],
        "served_cost": rep["served_cost"],
        "served_cost_lo": rep["served_cost_ci"][0],
        "served_cost_hi": rep["served_cost_ci"][1],
        "best_single_model": models[best],
        "best_single_acc": rep["best_single_acc"],
        "best_single_cost": rep["best_single_cost"],
        "cost_ratio": rep["cost_ratio"],
        "aiq_router": rep["aiq_router"],
        "aiq_zero": rep["aiq_zero"],
        "aiq_delta": rep["aiq_delta"],
        "aiq_delta_lo": rep["aiq_delta_ci"][0],
        "aiq_delta_hi": rep["aiq_delta_ci"][1],
        "aiq_router_lo": rep["aiq_router_ci"][0],
        "aiq_router_hi": rep["aiq_router_ci"][1],
        "aiq_zero_lo": rep["aiq_zero_ci"][0],
        "aiq_zero_hi": rep["aiq_zero_ci"][1],
        "level": rep["level"],
        "n_test": rep["n_questions"],
    }


@dataclass
class CostPart:
    """What costs add: the objective served, the (family, OperatingPoint) chosen on training questions (None without
    costs), the training questions' cost matrix, the tables and the metadata."""

    objective: str
    choice: tuple | None
    Ctr: np.ndarray | None
    tables: dict
    meta: dict


def cost_part(db: Store, d, sel, sc, config) -> CostPart:
    """The cost objective (``config.objective``; "auto": quality_at_min_cost where costs landed, else accuracy), the
    point it serves, the cost-quality curve of the family with the best training AIQ gain, and AIQ on the test
    questions against the zero router. ``d``: the partition's ``RoutingInputs``, ``sc``: its ``Scores``
    (defs/router_report.py)."""
    (_, Ytr, _), (_, Yte, test_items) = d.train, d.scored
    C = cost_matrix(db, d.key, list(test_items), d.models)
    Ctr = cost_matrix(db, d.key, list(d.emb["item"][~d.test]), d.models) if C is not None else None
    objective = (
        config.objective if config.objective != "auto" else ("quality_at_min_cost" if Ctr is not None else "accuracy")
    )
    meta = {
        "objective": objective
        if Ctr is not None or objective == "accuracy"
        else f"{objective} (no costs landed: accuracy)"
    }
    if Ctr is None:
        return CostPart(objective, None, None, {}, meta)
    choice, model_cost = cost_choice(config, objective, sel, sc.test_P, Ytr, Ctr, d.prior), expected_cost(Ctr)
    cost_picks = choice[1].policy.picks(sc.test_P[choice[0]], model_cost, d.prior)  # priced at training mean costs
    curve = curve_family(sel, sc.test_P, Ytr, Ctr, d.prior)
    rep = cost_quality_report(
        sc.test_P[curve[0]],
        Yte,
        C,
        d.prior,
        cost_picks,
        model_cost=model_cost,
        n_boot=min(config.n_boot, 1000),
        seed=config.seed,
    )
    tables = {
        "router_cost_curve": pd.DataFrame(
            {"lambda": rep["lambdas"], "accuracy": rep["curve_acc"], "cost": rep["curve_cost"]}
        ).sort_values(["cost", "accuracy"]),
        "router_cost_quality": pd.DataFrame([cost_row(objective, choice, rep, d.models, d.best, curve)]),
    }
    label = (
        choice[1].policy.label() if choice[1].policy.kind == "single" else f"{choice[0]}, {choice[1].policy.label()}"
    )
    meta.update(
        {
            "served_for_cost": f"{label}: {100 * rep['served_acc']:.2f} % at {rep['served_cost']:.6g} per question "
            f"({100 * rep['cost_ratio']:.1f} % of the best single model's {rep['best_single_cost']:.6g}); "
            f"rule: {choice[1].rule}",
            "aiq": f"router ({curve[0]}, the best gain on training CV: {100 * curve[1][curve[0]]:+.2f}) "
            f"{100 * rep['aiq_router']:.2f} vs zero router {100 * rep['aiq_zero']:.2f}: "
            f"{100 * rep['aiq_delta']:+.2f} [{100 * rep['aiq_delta_ci'][0]:+.2f}, {100 * rep['aiq_delta_ci'][1]:+.2f}] "
            f"points ({int(100 * rep['level'])} % bootstrap over test questions)",
            "cost_auc": rep["aiq_router"],
            "cost_curve": dg.MetadataValue.md(
                plots.markdown_image(
                    router_plots.cost_quality(
                        f"{d.key}: accuracy vs cost ({len(Yte)} test questions; curve: {curve[0]})",
                        rep,
                        d.models,
                        label,
                    ),
                    "accuracy vs cost",
                )
            ),
        }
    )
    return CostPart(objective, choice, Ctr, tables, meta)
