"""Small leaderboards, part 4: a fitted :class:`~.small_board.SmallBoardPredictor` as a tiny-benchmark artifact
(the layout of :mod:`..tiny_benchmark.format`, version 2, with the small board's ``shrinkage`` block)."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from ..json_floats import enc, enc_list, enc_matrix, to_dict_or_none
from ..tiny_benchmark.format import FORMAT, TREES_FILE
from ..tiny_benchmark.trees import pack
from .anchor_sets import AnchorSet
from .bank import bank_json, bank_tree_arrays
from .small_choice import BANK, CANDIDATES, FILL, MEDIAN, NO_IRT
from .small_folds import CLUSTERING
from .training import Layout

__all__ = ["build_artifact", "joint_block", "median_stack"]


def median_stack(ch) -> dict:
    """The artifact's ``stacks`` of one scenario: the median rule at the served D (small_rules.MEDIAN) as a stack of
    that name, whose members the artifact takes the median of (estimation/stacks.py); weights equal, unread."""
    med = next(r for r in ch.rules if r.estimator == MEDIAN and r.dim == ch.dim)
    members = [r.estimator for r in med.parts]
    w = enc_list(np.full(len(members), 1.0 / len(members)))
    return {MEDIAN: {"members": members, "w_t1": w, "w_t2": list(w)}}


def joint_block(fits: dict, dims: dict, s: str) -> np.ndarray:
    """Scenario ``s``'s rows of the block-diagonal joint discriminations (small_board's docstring), (I_s, sum D)."""
    order = list(dims)
    a = fits[s].irt[dims[s]].a
    out = np.zeros((a.shape[0], sum(dims.values())))
    start = sum(dims[x] for x in order[: order.index(s)])
    out[:, start : start + dims[s]] = a
    return out


def build_artifact(p, leaderboard: str, n: int, item_texts=None, binarization=None) -> dict:
    """:meth:`SmallBoardPredictor.to_artifact`: the dict of :mod:`..tiny_benchmark.format`, version 2."""
    if not hasattr(p, "served_"):
        raise ValueError("SmallBoardPredictor is not fitted")
    n = int(n)
    if n not in [int(x) for x in p.n_values]:
        raise ValueError(f"n={n} was not prepared (n_values={list(p.n_values)})")
    texts, L, fits, bank = item_texts or {}, p.layout_, p.served_.fits, p.served_.bank[(CLUSTERING, n)]
    dims = {s: p.choices_[(s, n)].dim for s in L.scenarios}
    layout = Layout(L.items, L.scenarios, L.w, L.cols)  # the big predictor's layout, to write the same blocks
    scenarios = {}
    for s in L.scenarios:
        ch, fit, cols = p.choices_[(s, n)], fits[s], L.cols[s]
        irt, (local, weights) = fit.irt[ch.dim], fit.anchors[n]
        lam = {"tutorial": enc(ch.lambdas["tutorial"]), "validation": enc(ch.lambdas["validation"])}
        cv = {r["estimator"]: r for r in ch.cv if r["estimator"] in NO_IRT or r["dim"] == ch.dim}
        ests = {
            e: {
                "val_mae_t1": enc(cv[e]["cv_mae_t1"]),
                "val_mae_t2": enc(cv[e]["cv_mae_t2"]),
                "n_val": int(cv[e]["n_models"]),
                "interval_t1": to_dict_or_none(ch.interval_t1[e]),
                "calibration_t2": to_dict_or_none(ch.calibration_t2.get(e)),
                "interval_t2": to_dict_or_none(ch.interval_t2.get(e)),
            }
            for e in (*CANDIDATES, BANK, *([FILL] if "fill" in bank else []), MEDIAN)
        }
        anchors = AnchorSet(s, CLUSTERING, n, local, cols[local], weights)
        scenarios[s] = {
            **layout.to_dict(s),
            "anchors": anchors.to_dict(L.items, texts),
            "irt": {
                "sep": {"a": enc_matrix(irt.a), "b": enc_list(irt.b)},
                "joint": {"a": enc_matrix(joint_block(fits, dims, s)), "b": enc_list(irt.b)},
            },
            "lambdas": {
                "sep": lam,
                "joint": dict(lam),
                "b_sep": enc(ch.lambdas["b"]),
                "b_joint": enc(ch.lambdas["b"]),
                "v": enc(ch.lambdas["v"]),
            },
            "stacks": median_stack(ch),
            "estimators": ests,
            "recommended": {"t1": ch.t1_json, "t2": ch.t2_json},
            "recommended_learned": {"t1": ch.t1, "t2": ch.t2, "interval_t1": to_dict_or_none(ch.interval_t1[ch.t1])},
        }
    return {
        "format": FORMAT,
        "leaderboard": str(leaderboard),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "n": n,
        "clustering": CLUSTERING,
        "clustering_source": "given",
        "alpha": float(p.alpha),
        "interval_scale": p.interval_scale,
        "scenario_order": list(L.scenarios),
        "irt_dims": {**dims, "joint": int(sum(dims.values()))},
        "training": {"fit_models": len(L.models), "validation_models": len(L.models), "seed": int(p.seed)},
        "binarization": binarization,
        "json_estimators": sorted(CANDIDATES),
        "learned_estimators": [BANK, *([FILL] if "fill" in bank else [])],
        "learned": {"file": TREES_FILE, "sha256": None, "fit_learned": False, "models": [], "bank": bank_json(bank)},
        "scenarios": scenarios,
        "shrinkage": p.served_.priors[n].to_json(),
        "_trees": {**pack([]), **bank_tree_arrays(bank)},  # the answer bank's arrays (no regressors)
    }
