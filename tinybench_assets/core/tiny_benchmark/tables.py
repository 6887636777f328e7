"""Views of the artifact: the anchors a new model must answer (:func:`anchor_list`) and flat tables for the
DuckDB store (:func:`artifact_tables`)."""

from __future__ import annotations

import json

import pandas as pd

from .format import _dec


def anchor_list(artifact: dict, with_text: bool = False) -> pd.DataFrame:
    """The items a new model must answer: scenario, item, weight (and text)."""
    rows = []
    for s in artifact["scenario_order"]:
        a = artifact["scenarios"][s]["anchors"]
        for i, (it, wt) in enumerate(zip(a["items"], a["weights"])):
            r = {"scenario": s, "item": it, "weight": _dec(wt)}
            if with_text:
                r["text"] = (a.get("texts") or [None] * len(a["items"]))[i]
            rows.append(r)
    return pd.DataFrame(rows)


def artifact_tables(artifact: dict) -> dict[str, pd.DataFrame]:
    """The artifact as flat tables (for the DuckDB store): ``tiny_benchmark`` (one row per scenario),
    ``tiny_benchmark_anchors`` (one row per anchor) and ``tiny_benchmark_estimators`` (one row per scenario x
    JSON-evaluable estimator, with calibration and interval parameters)."""
    art = artifact
    meta, anchors, ests = [], [], []
    for s in art["scenario_order"]:
        d = art["scenarios"][s]
        lam = d["lambdas"]
        meta.append(
            {
                "scenario": s,
                "n": art["n"],
                "clustering": art["clustering"],
                "n_items": d["n_items"],
                "recommended_t1": d["recommended"]["t1"],
                "recommended_t2": d["recommended"]["t2"],
                "recommended_learned_t1": d["recommended_learned"]["t1"],
                "recommended_learned_t2": d["recommended_learned"]["t2"],
                "irt_dim": art["irt_dims"][s],
                "irt_dim_joint": art["irt_dims"]["joint"],
                "lambda_tutorial": _dec(lam["sep"]["tutorial"]),
                "lambda_validation": _dec(lam["sep"]["validation"]),
                "lambda_tutorial_joint": _dec(lam["joint"]["tutorial"]),
                "lambda_validation_joint": _dec(lam["joint"]["validation"]),
                "format": art["format"],
                "created": art.get("created"),
                "learned_sha256": (art.get("learned") or {}).get("sha256"),
            }
        )
        a = d["anchors"]
        texts = a.get("texts") or [None] * len(a["items"])
        for i, (it, loc, wt) in enumerate(zip(a["items"], a["local"], a["weights"])):
            anchors.append(
                {"scenario": s, "anchor": i, "item": it, "pool_index": int(loc), "weight": _dec(wt), "text": texts[i]}
            )
        for e, ed in d["estimators"].items():
            i1, i2, cal = ed["interval_t1"] or {}, ed["interval_t2"] or {}, ed["calibration_t2"]
            ests.append(
                {
                    "scenario": s,
                    "estimator": e,
                    "recommended_t1": e == d["recommended"]["t1"],
                    "recommended_t2": e == d["recommended"]["t2"],
                    "val_mae_t1": _dec(ed["val_mae_t1"]),
                    "val_mae_t2": _dec(ed["val_mae_t2"]),
                    "n_val": ed["n_val"],
                    "q_lo_t1": _dec(i1.get("q_lo")),
                    "q_hi_t1": _dec(i1.get("q_hi")),
                    "q_lo_t2": _dec(i2.get("q_lo")),
                    "q_hi_t2": _dec(i2.get("q_hi")),
                    "calibration_t2": json.dumps(cal) if cal else None,
                }
            )
    leaderboard = art.get("leaderboard")
    return {
        name: pd.DataFrame(rows).assign(leaderboard=leaderboard)
        for name, rows in (
            ("tiny_benchmark", meta),
            ("tiny_benchmark_anchors", anchors),
            ("tiny_benchmark_estimators", ests),
        )
    }
