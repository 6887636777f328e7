"""Export a fitted :class:`~tinybench_assets.core.predictor.AnchorPredictor` as a tiny benchmark: the
JSON-serializable dict laid out in :mod:`.format`, plus (key ``_trees``) the learned regressors of its
(clustering, n) as the numeric arrays of :mod:`.trees` (saved with :func:`.files.save_artifact`)."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pandas as pd

from ..calibration import ConformalInterval, IsotonicCalibrator
from ..estimation.base_estimates import feature_width
from .format import FORMAT, JSON_BASE, TREES_FILE, ArtifactError, _enc, _enc_list, _enc_matrix
from .trees import hgb_arrays, pack


def _json_evaluable(name: str, stacks: dict) -> bool:
    if name in JSON_BASE:
        return True
    st = stacks.get(name)
    return st is not None and all(m in JSON_BASE for m in st["members"])


def _n_features(st: dict, c: str, n: int, s: str, kind: str) -> int:
    """Width of the learned regressors' features (``base_estimates.features``): anchors + D + its linear score
    (sep), every scenario's anchors + D_joint + every scenario's linear score (joint). st : the named steps."""
    return feature_width(st["anchors"].of(c, n), st["irt"].params_, s, kind)


def bank_arrays(bank: dict | None) -> dict:
    """The tree file's arrays of an answer bank ({"answers", "values", ...}; :data:`.trees.BANK_ARRAYS`), {} for None."""
    if bank is None:
        return {}
    return {
        "bank_answers": np.asarray(bank["answers"], dtype="<f4").ravel(),
        "bank_values": np.asarray(bank["values"], dtype="<f8").ravel(),
    }


def bank_info(bank: dict | None) -> dict | None:
    """The JSON's ``learned.bank`` of an answer bank: {models: F, eps: {scenario: eps}}, or None without one."""
    if bank is None:
        return None
    return {"models": int(len(bank["answers"])), "eps": {s: float(e) for s, e in bank["eps"].items()}}


def learned_models(st: dict, c: str, n: int, models: list[dict]) -> dict:
    """The tree file's arrays for the regressors ``models`` ([{scenario, kind, target}], in order) of (c, n), and
    the answer bank of (c, n) when the predictor has one. st : the predictor's named steps."""
    out = []
    for m in models:
        key = (c, n, m["scenario"], m["kind"], m["target"])
        if key not in st["learned"].models_:
            raise ArtifactError(f"the predictor has no learned regressor {key}")
        out.append(hgb_arrays(st["learned"].models_[key], _n_features(st, c, n, m["scenario"], m["kind"])))
    return {**pack(out), **bank_arrays(st["bank"].banks_.get((c, n)))}


def _interval(ci: ConformalInterval | None) -> dict | None:
    if ci is None:
        return None
    return {
        "alpha": float(ci.alpha),
        "scale": ci.scale,
        "floor": float(ci.floor),
        "lo": float(ci.lo),
        "hi": float(ci.hi),
        "q_lo": _enc(ci.q_lo_),
        "q_hi": _enc(ci.q_hi_),
        "n": int(ci.n_),
    }


def _calibration(cal: IsotonicCalibrator | None) -> dict | None:
    if cal is None:
        return None
    iso = cal.iso_
    return {
        "x": _enc_list(iso.X_thresholds_),
        "y": _enc_list(iso.y_thresholds_),
        "y_min": _enc(cal.y_min),
        "y_max": _enc(cal.y_max),
    }


def _best(rows: pd.DataFrame) -> dict:
    """{t1, t2}: lowest validation MAE (T2 falls back to T1's choice when no T2 MAE exists). Same tie rule
    (first row) as the predictor's selection."""
    r1 = rows.loc[rows.val_mae_t1.idxmin()]
    r2rows = rows.dropna(subset=["val_mae_t2"])
    r2 = r2rows.loc[r2rows.val_mae_t2.idxmin()] if len(r2rows) else r1
    return {"t1": str(r1.estimator), "t2": str(r2.estimator)}


def _scenario_entry(st: dict, lay, c: str, n: int, s: str, vs, texts: dict, selected: bool) -> tuple[dict, set, set]:
    """One scenario's block of the artifact (items, anchors, IRT, lambdas, stacks, estimators with their validation
    figures, intervals and calibrations, the recommendations) and its JSON-evaluable and learned estimator names.
    ``st``: the predictor's named steps; ``lay``: its item layout; ``vs``: its validation rows of (c, n, s);
    ``selected``: c is the clustering the predictor selected."""
    cols = lay.cols[s]
    A = st["anchors"].sets_[(c, n, s)]
    ps, pj = st["irt"].params_[s], st["irt"].params_["joint"]
    stacks = {name: x for (cc, nn, ss, name), x in st["stacks"].stacks_.items() if (cc, nn, ss) == (c, n, s)}
    cal = st["calibrators"]
    ests = {}
    for r in vs.itertuples(index=False):
        e = r.estimator
        key = (c, n, s, e)
        ests[e] = {
            "val_mae_t1": _enc(r.val_mae_t1),
            "val_mae_t2": _enc(r.val_mae_t2),
            "n_val": int(r.n_val),
            "interval_t1": _interval(cal.t1_intervals_.get(key)),
            "calibration_t2": _calibration(cal.t2_maps_.get(key)),
            "interval_t2": _interval(cal.t2_intervals_.get(key)),
        }
    json_names = {e for e in ests if _json_evaluable(e, stacks)}
    if not json_names:
        raise ArtifactError(f"scenario {s!r}: no JSON-evaluable estimator in the predictor's validation table")
    if selected:
        sel = st["selector"].selection_[(n, s, "tinybench")]
        learned = {"t1": sel["t1"][1], "t2": sel["t2"][1]}
        served = st["served"].intervals_.get((n, s, "tinybench"))
        if served is not None:  # the T1 interval that allows for the estimator's selection
            learned["interval_t1"] = _interval(served)
    else:
        learned = _best(vs)
    irt = st["irt"]
    lam = {fit: {k: _enc(x) for k, x in st["lambdas"].lambdas_[(c, n, s, fit)].items()} for fit in ("sep", "joint")}
    lam.update(b_sep=_enc(irt.b_[("sep", s)]), b_joint=_enc(irt.b_[("joint", s)]), v=_enc(irt.v_[s]))
    entry = {
        "n_items": int(len(cols)),
        "items": [str(lay.items[j]) for j in cols],
        "balance_weights": _enc_list(lay.w[cols]),
        "anchors": {
            "items": [str(lay.items[j]) for j in A.items],
            "local": [int(i) for i in A.local],
            "weights": _enc_list(A.weights),
            "texts": [texts.get(lay.items[j]) for j in A.items],
            "linear": None
            if A.linear is None
            else {
                "fill": _enc_list(A.linear["fill"]),
                "coef": _enc_list(A.linear["coef"]),
                "intercept": _enc(A.linear["intercept"]),
            },
        },
        "irt": {
            "sep": {"a": _enc_matrix(ps.a), "b": _enc_list(ps.b)},
            "joint": {"a": _enc_matrix(pj.a[cols]), "b": _enc_list(pj.b[cols])},
        },
        "lambdas": lam,
        "stacks": {
            name: {"members": list(x["members"]), "w_t1": _enc_list(x["w_t1"]), "w_t2": _enc_list(x["w_t2"])}
            for name, x in stacks.items()
        },
        "estimators": ests,
        "recommended": _best(vs[vs.estimator.isin(list(json_names))]),
        "recommended_learned": learned,
    }
    return entry, json_names, set(ests) - json_names


def _budget_and_clustering(p, n, clustering: str | None) -> tuple[int, str, str, str]:
    """(n, the clustering to export, its source: "selected" or "given", the clustering the predictor's ``tinybench``
    selection chose for n) of fitted AnchorPredictor ``p``; ArtifactError when it is not fitted or did not prepare
    n or ``clustering``."""
    if "steps_" not in vars(p):
        raise ArtifactError(
            "the predictor is not fitted, or was saved by an older tinybench without its steps: "
            "rebuild it by materializing anchor_sets (or `tinybench run-all`)"
        )
    if int(n) not in p.n_values:
        raise ArtifactError(f"n={n} was not prepared by the predictor (it has n_values={list(p.n_values)})")
    n = int(n)
    c_sel = p.named_steps["selector"].selection_[(n, list(p.layout.scenarios)[0], "tinybench")]["t1"][0]
    if clustering is None:
        return n, c_sel, "selected", c_sel
    if clustering not in p.clusterings:
        raise ArtifactError(f"clustering {clustering!r} was not prepared (have {list(p.clusterings)})")
    return n, clustering, "given", c_sel


def _learned_list(st: dict, c: str, n: int, scenarios: list) -> list[dict]:
    """The JSON's ``learned.models``: [{scenario, kind, target, n_features}] of every regressor the predictor (named
    steps ``st``) fitted for (c, n), in scenario, kind, target order."""
    return [
        {"scenario": s, "kind": kind, "target": t, "n_features": _n_features(st, c, n, s, kind)}
        for s in scenarios
        for kind in ("sep", "joint")
        for t in ("t1", "t2")
        if (c, n, s, kind, t) in st["learned"].models_
    ]


def export_tiny_benchmark(
    predictor,
    *,
    leaderboard: str,
    n: int,
    clustering: str | None = None,
    item_texts: dict[str, str] | None = None,
    binarization: dict | None = None,
) -> dict:
    """A JSON-serializable tiny benchmark of ``leaderboard`` with ``n`` anchors per scenario.

    Parameters
    ----------
    predictor : a fitted AnchorPredictor (``n`` must be one of its ``n_values``).
    leaderboard : name recorded in the artifact.
    n : anchor budget per scenario.
    clustering : anchor clustering to export; default the one the predictor's ``tinybench`` selection
        chose for ``n`` on validation models.
    item_texts : optional {item id: prompt text}; anchors without a text get ``null``.
    binarization : optional, informational (e.g. {"rule": "tutorial_threshold", "threshold": 0.5}): how the
        leaderboard's scores were binarized, so a new model's answers can be scored the same way.

    Returns
    -------
    dict in the layout of :mod:`.format`'s docstring, with the learned regressors' arrays under ``_trees`` (not
    JSON: :func:`.files.save_artifact` writes them to ``learned_models.npz`` and fills ``learned.sha256``).
    """
    p = predictor
    n, c, source, c_sel = _budget_and_clustering(p, n, clustering)
    st, lay = p.named_steps, p.layout
    scenarios = list(lay.scenarios)
    texts = item_texts or {}
    v = p.validation
    v = v[(v.clustering == c) & (v.n == n)]
    json_names: set[str] = set()
    learned_names: set[str] = set()
    out_sc = {}
    for s in scenarios:
        out_sc[s], json_s, learned_s = _scenario_entry(st, lay, c, n, s, v[v.scenario == s], texts, c == c_sel)
        json_names |= json_s
        learned_names |= learned_s
    models = _learned_list(st, c, n, scenarios)
    bank = bank_info(st["bank"].banks_.get((c, n)))
    return {
        "format": FORMAT,
        "leaderboard": str(leaderboard),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "n": n,
        "clustering": c,
        "clustering_source": source,
        "alpha": float(p.alpha),
        "interval_scale": p.interval_scale,
        "scenario_order": scenarios,
        "irt_dims": {k: int(st["irt"].params_[k].dim) for k in [*scenarios, "joint"]},
        "training": {
            "fit_models": int(st["split"].n_fit_),
            "validation_models": int(st["split"].n_val_),
            "seed": int(p.seed),
        },
        "binarization": binarization,
        "json_estimators": sorted(json_names),
        "learned_estimators": sorted(learned_names),
        "learned": {
            "file": TREES_FILE if models or bank else None,
            "sha256": None,
            "fit_learned": bool(st["learned"].enabled),
            "models": models,
            "bank": bank,
        },
        "scenarios": out_sc,
        "_trees": learned_models(st, c, n, models),
    }
