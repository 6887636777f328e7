"""Estimates of a new model from the artifact: :func:`evaluate_json` (the JSON-evaluable estimators, from
the stored parameters alone) and :func:`estimate_from_artifact` (recommended estimators, with the verified
``predictor.pkl`` for the learned ones)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from .. import estimators as est
from ..calibration import ConformalInterval, IsotonicCalibrator
from ..irt import estimate_ability, item_curve
from ..predictor import JOINT, PER_SCENARIO, STACKS
from .answers import AnswerError, _prepare_answers, read_answers
from .format import PICKLE_FILE, ArtifactError, _arr, _check_format, _dec, _mat, load_artifact, load_predictor


# ====================================================================== JSON evaluator
def _ci(d: dict | None) -> ConformalInterval | None:
    if d is None:
        return None
    ci = ConformalInterval(alpha=float(d["alpha"]), scale=d["scale"], floor=float(d["floor"]), lo=float(d["lo"]), hi=float(d["hi"]))
    ci.q_lo_, ci.q_hi_, ci.n_ = _dec(d["q_lo"]), _dec(d["q_hi"]), int(d.get("n", 0))
    return ci


def _iso(d: dict | None):
    """An IsotonicCalibrator rebuilt from its stored thresholds (same interpolation as the fitted one)."""
    if d is None:
        return None
    x, y = _arr(d["x"]), _arr(d["y"])
    if len(x) == 1:  # a constant map
        const = float(y[0])
        return lambda e: np.where(np.isfinite(np.asarray(e, dtype=float)), const, np.nan)
    cal = IsotonicCalibrator(y_min=_dec(d["y_min"]), y_max=_dec(d["y_max"])).fit(x, y)
    iso = cal.iso_
    if not (np.array_equal(iso.X_thresholds_, x) and np.array_equal(iso.y_thresholds_, y)) and hasattr(iso, "_build_f"):
        # refitting an isotonic sequence may move a plateau by an ulp; pin the stored thresholds exactly
        iso.X_thresholds_, iso.y_thresholds_ = x, y
        iso.X_min_, iso.X_max_ = float(x[0]), float(x[-1])
        iso._build_f(x, y)
    return cal.transform


def evaluate_json(artifact: dict, Ya: dict[str, np.ndarray], estimators: Iterable[str] | None = None) -> dict:
    """JSON-only estimates, vectorized over models.

    Ya : {scenario: (M, n_s) anchor answers in the artifact's anchor order, NaN = unanswered} for every
    scenario of ``scenario_order`` (an unanswered scenario is all NaN). The computation is the predictor's own
    (``AnchorPredictor._features`` / ``_compose`` / ``_apply_stacks`` / ``_finish``) on the stored parameters.

    Returns {(scenario, estimator): {estimate, lower, upper, estimate_t2, lower_t2, upper_t2: (M,)}}; a model
    that answered none of a scenario's anchors gets NaN there.
    """
    art = artifact
    order = art["scenario_order"]
    sc = {s: art["scenarios"][s] for s in order}
    loc = {s: np.asarray(sc[s]["anchors"]["local"], dtype=int) for s in order}
    aj = {s: _mat(sc[s]["irt"]["joint"]["a"]) for s in order}
    bj = {s: _arr(sc[s]["irt"]["joint"]["b"]) for s in order}
    Yall = np.hstack([np.asarray(Ya[s], dtype=float) for s in order])
    thj = estimate_ability(Yall, np.vstack([aj[s][loc[s]] for s in order]), np.concatenate([bj[s][loc[s]] for s in order]))
    out = {}
    for s in order:
        d = sc[s]
        wanted = list(d["estimators"]) if estimators is None else [e for e in estimators if e in d["estimators"]]
        if not wanted:
            continue
        w = _arr(d["balance_weights"])
        a, b = _mat(d["irt"]["sep"]["a"]), _arr(d["irt"]["sep"]["b"])
        Y = np.asarray(Ya[s], dtype=float)
        h = ~np.isnan(Y).all(1)
        Yz = np.where(np.isnan(Y), 0.0, Y)
        th = estimate_ability(Y, a[loc[s]], b[loc[s]])
        P = item_curve(th, a, b)
        Pj = item_curve(thj, aj[s], bj[s])
        vals = {
            "anchor": est.anchor_estimate(Y, _arr(d["anchors"]["weights"])),
            "irt": est.irt_estimate(P, w),
            "pirt": est.pirt_estimate(Yz, P, loc[s], w),
            "irt_joint": est.irt_estimate(Pj, w),
            "pirt_joint": est.pirt_estimate(Yz, Pj, loc[s], w),
        }
        full = {k: np.where(h, x, np.nan) for k, x in vals.items()}
        for fit, sfx in (("sep", ""), ("joint", "_joint")):
            lam = d["lambdas"][fit]
            full["gpirt" + sfx] = est.gpirt_estimate(full["anchor"], full["pirt" + sfx], _dec(lam["tutorial"]))
            full["gpirt_val" + sfx] = est.gpirt_estimate(full["anchor"], full["pirt" + sfx], _dec(lam["validation"]))
        t2in = {}
        for name in STACKS:  # the predictor's order
            st = d["stacks"].get(name)
            if st is None:
                continue
            X = np.column_stack([full[m] for m in st["members"]])
            full[name] = X @ _arr(st["w_t1"])
            t2in[name] = X @ _arr(st["w_t2"])
        for e in wanted:
            ed = d["estimators"][e]
            x = full[e]
            lo, up = _ci(ed["interval_t1"]).predict(x)
            cal = _iso(ed["calibration_t2"])
            if cal is None:
                e2 = lo2 = up2 = np.full(len(x), np.nan)
            else:
                e2 = cal(t2in.get(e, x))
                lo2, up2 = _ci(ed["interval_t2"]).predict(e2)
            out[(s, e)] = {"estimate": x, "lower": lo, "upper": up, "estimate_t2": e2, "lower_t2": lo2, "upper_t2": up2}
    return out


# ====================================================================== estimation
COLUMNS = ["scenario", "estimator", "estimator_t2", "answered", "n_anchors", "estimate", "lower", "upper",
           "estimate_t2", "lower_t2", "upper_t2", "source"]


def _learned_rows(predictor, art: dict, Ya: dict, needed: set[tuple[str, str]]) -> dict:
    """{(scenario, estimator): row} from ``predictor.estimate`` on a matrix that is NaN except the anchors."""
    c, n = art["clustering"], art["n"]
    if n not in getattr(predictor, "n_values", ()) or c not in getattr(predictor, "clusterings", ()):
        raise ArtifactError(f"the predictor was not fitted for n={n}, clustering {c!r}: it does not belong to this artifact")
    mine = {k: [str(i) for i in v] for k, v in predictor.anchor_items(c, n).items()}
    if any(mine.get(s) != art["scenarios"][s]["anchors"]["items"] for s in art["scenario_order"]):
        raise ArtifactError("the predictor's anchors differ from the artifact's: it does not belong to this artifact")
    items = list(predictor.items_)
    index = {str(it): j for j, it in enumerate(items)}
    Y = np.full((1, len(items)), np.nan)
    for s in art["scenario_order"]:
        for it, val in zip(art["scenarios"][s]["anchors"]["items"], Ya[s][0]):
            if it not in index:
                raise ArtifactError(f"anchor {it!r} is not an item of the pickled predictor; re-export the artifact")
            Y[0, index[it]] = val
    device = getattr(predictor, "device", "cpu")
    try:  # one model: the CPU is fast, and a predictor fitted on a GPU also runs where there is none
        predictor.device = "cpu"
        df = predictor.estimate(Y, ["new model"], n_values=[n])
    finally:
        predictor.device = device
    df = df[df.clustering == c]
    rows = {(r.scenario, r.estimator): r for r in df.itertuples(index=False)}
    return {k: rows[k] for k in needed if k in rows}


def estimate_from_artifact(
    artifact,
    answers,
    *,
    use_learned: bool = True,
    predictor=None,
    estimator: str | None = None,
    allow_missing: bool = False,
    allow_extra: bool = False,
) -> pd.DataFrame:
    """Estimated accuracy of a new model per scenario, from its answers to the anchors.

    Parameters
    ----------
    artifact : dict from :func:`export_tiny_benchmark` / :func:`load_artifact`, or a folder / JSON path.
    answers : {item id: score in [0, 1]} (scores taken as given: binarize them as the leaderboard does), or a
        path read with :func:`read_answers`.
    use_learned : use the recommended estimator among ALL estimators (possibly learned: gbm, stacks) when it
        needs the predictor and one is available (``predictor`` or the verified ``predictor.pkl`` beside the
        JSON); otherwise, or when no pickle is there, the recommended JSON-evaluable estimator.
    predictor : a fitted AnchorPredictor to use for learned estimators (skips loading the pickle).
    estimator : force one estimator for T1 and T2 (a JSON one, or a learned one when a predictor is there).
    allow_missing : allow a scenario with some anchors unanswered (they are left out; the anchor weights are
        renormalized, IRT abilities use the answered ones). A scenario with no answer at all is always skipped.
    allow_extra : ignore answered pool items that are not anchors (items unknown to the leaderboard are
        always an error).

    Returns
    -------
    DataFrame, one row per answered scenario: scenario, estimator (T1), estimator_t2, answered, n_anchors,
    estimate, lower, upper (pool accuracy, 1 - alpha interval), estimate_t2, lower_t2, upper_t2 (full-benchmark
    score), source ("json" or "predictor.pkl"). ``df.attrs["notes"]`` lists skipped scenarios and fallbacks.

    Raises AnswerError (a ValueError) for unusable answers, ArtifactError for an unusable artifact.
    """
    art = load_artifact(artifact) if isinstance(artifact, (str, Path)) else artifact
    _check_format(art)
    if isinstance(answers, (str, Path)):
        answers = read_answers(answers)
    if not isinstance(answers, dict):
        raise AnswerError(f"answers must be a dict {{item: score}} or a file path, got {type(answers).__name__}")
    if estimator is not None and estimator not in (*PER_SCENARIO, *JOINT):
        raise AnswerError(f"unknown estimator {estimator!r}; choose one of {', '.join((*PER_SCENARIO, *JOINT))}")
    Ya, answered, notes = _prepare_answers(art, answers, allow_missing, allow_extra)
    want: dict[str, tuple[str, str]] = {}
    for s in answered:
        d = art["scenarios"][s]
        if estimator is not None:
            want[s] = (estimator, estimator)
        elif use_learned:
            want[s] = (d["recommended_learned"]["t1"], d["recommended_learned"]["t2"])
        else:
            want[s] = (d["recommended"]["t1"], d["recommended"]["t2"])
    json_ok = {s: set(art["scenarios"][s]["estimators"]) for s in answered}
    need_pred = {s for s, (e1, e2) in want.items() if e1 not in json_ok[s] or e2 not in json_ok[s]}
    if need_pred and predictor is None and (use_learned or estimator is not None):
        predictor = load_predictor(art)
    if need_pred and predictor is None:
        if estimator is not None:
            raise AnswerError(f"estimator {estimator!r} is not evaluable from the JSON "
                              f"(JSON estimators: {', '.join(art.get('json_estimators', []))}) and no predictor.pkl is available")
        if use_learned:
            notes.append("predictor.pkl not available: learned estimators replaced by the best JSON-evaluable ones")
        for s in need_pred:
            d = art["scenarios"][s]
            e1, e2 = want[s]
            want[s] = (e1 if e1 in json_ok[s] else d["recommended"]["t1"], e2 if e2 in json_ok[s] else d["recommended"]["t2"])
        need_pred = set()
    if estimator is not None and predictor is None:
        bad = [s for s in answered if estimator not in json_ok[s]]
        if bad:
            raise AnswerError(f"estimator {estimator!r} is not available for scenario(s) {bad}")
    names = {e for pair in want.values() for e in pair}
    res = evaluate_json(art, Ya, [e for e in names if any(e in json_ok[s] for s in answered)])
    learned = {}
    if need_pred:
        learned = _learned_rows(predictor, art, Ya, {(s, e) for s in need_pred for e in want[s]})
    rows = []
    for s in answered:
        e1, e2 = want[s]
        part = {}
        src = []
        for e, cols in ((e1, ("estimate", "lower", "upper")), (e2, ("estimate_t2", "lower_t2", "upper_t2"))):
            if (s, e) in res:
                r = res[(s, e)]
                part.update({k: float(r[k][0]) for k in cols})
                src.append("json")
            elif (s, e) in learned:
                r = learned[(s, e)]
                part.update({k: float(getattr(r, k)) for k in cols})
                src.append(PICKLE_FILE)
            else:
                raise AnswerError(f"scenario {s!r}: estimator {e!r} gave no estimate")
        d = art["scenarios"][s]
        rows.append({"scenario": s, "estimator": e1, "estimator_t2": e2, "answered": int(np.isfinite(Ya[s]).sum()),
                     "n_anchors": len(d["anchors"]["items"]), **part,
                     "source": src[0] if src[0] == src[1] else "+".join(src)})
    df = pd.DataFrame(rows, columns=COLUMNS)
    df.attrs["notes"] = notes
    df.attrs["leaderboard"] = art.get("leaderboard")
    df.attrs["n"] = art["n"]
    df.attrs["clustering"] = art["clustering"]
    return df
