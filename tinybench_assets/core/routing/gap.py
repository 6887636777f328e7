"""RouteLLM's measures for a two-model partition: how much of the weak-strong accuracy gap a router recovers per
share of calls sent to the strong model (Ong et al., 2024).

A router ranks questions by how much it prefers the strong model (``score`` = P_strong - P_weak). Sending the top
share s of questions to the strong model and the rest to the weak one gives an accuracy acc(s); the performance gap
recovered is PGR(s) = (acc(s) - acc_weak) / (acc_strong - acc_weak). Questions with the same score go together (a
threshold cannot split them); between those points the curve is linear (a random share of the tied block).

- CPT(x): the smallest share of strong calls at which PGR reaches x (a random router: x);
- APGR: the area under PGR(s) over s in [0, 1] (a random router: 0.5).

Intervals: a percentile bootstrap over questions (each resample re-ranks nothing: the router's scores are fixed,
the questions drawn with replacement).
"""

from __future__ import annotations

import numpy as np


def _curve(score: np.ndarray, weak: np.ndarray, strong: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(share of strong calls, PGR) at every threshold; ``w`` (B, n) question weights (bootstrap counts).
    Returns arrays (B, K + 1) starting at share 0."""
    order = np.argsort(-score, kind="stable")
    s = score[order]
    ends = np.r_[np.flatnonzero(s[1:] != s[:-1]), len(s) - 1]  # last index of each tied block
    w = w[:, order]
    gain = np.cumsum(w * (strong - weak)[order][None, :], axis=1)[:, ends]  # strong instead of weak on the top block
    share = np.cumsum(w, axis=1)[:, ends]
    total = w.sum(axis=1, keepdims=True)
    acc_weak = (w * weak[order][None, :]).sum(axis=1, keepdims=True) / total
    gap = (w * (strong - weak)[order][None, :]).sum(axis=1, keepdims=True) / total
    acc = acc_weak + gain / total
    with np.errstate(invalid="ignore", divide="ignore"):
        pgr = np.where(np.abs(gap) > 0, (acc - acc_weak) / gap, np.nan)
    zeros = np.zeros((len(w), 1))
    return np.hstack([zeros, share / total]), np.hstack([zeros, pgr])


def _apgr(share: np.ndarray, pgr: np.ndarray) -> np.ndarray:
    return np.sum(np.diff(share, axis=1) * (pgr[:, 1:] + pgr[:, :-1]) / 2, axis=1)


def _cpt(share: np.ndarray, pgr: np.ndarray, x: float) -> np.ndarray:
    """First share where the piecewise-linear PGR curve reaches x, per row (1.0 when it never does)."""
    out = np.ones(len(share))
    for b in range(len(share)):
        hit = np.flatnonzero(pgr[b] >= x)
        if len(hit) == 0:
            continue
        j = hit[0]
        if j == 0:
            out[b] = 0.0
            continue
        p0, p1, s0, s1 = pgr[b, j - 1], pgr[b, j], share[b, j - 1], share[b, j]
        out[b] = s0 + (s1 - s0) * (x - p0) / (p1 - p0) if p1 > p0 else s1
    return out


def gap_measures(score, y_weak, y_strong, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """APGR, CPT(50 %), CPT(80 %) of a router's ``score`` (n,) on questions with both models' 0/1 answers, with
    percentile bootstrap intervals (shares as fractions in [0, 1])."""
    score = np.asarray(score, dtype=float)
    weak, strong = np.asarray(y_weak, dtype=float), np.asarray(y_strong, dtype=float)
    n = len(score)
    if n == 0:
        raise ValueError("no questions to measure the router on")
    share, pgr = _curve(score, weak, strong, np.ones((1, n)))
    out = {
        "apgr": float(_apgr(share, pgr)[0]),
        "cpt50": float(_cpt(share, pgr, 0.5)[0]),
        "cpt80": float(_cpt(share, pgr, 0.8)[0]),
        "weak_acc": float(weak.mean()),
        "strong_acc": float(strong.mean()),
        "n_test": int(n),
        "level": level,
        "curve_share": share[0].tolist(),
        "curve_pgr": pgr[0].tolist(),
    }
    g = np.random.default_rng(seed)
    apgr, cpt50, cpt80 = [], [], []
    for s in range(0, n_boot, 100):
        w = np.stack([np.bincount(g.integers(0, n, n), minlength=n) for _ in range(min(100, n_boot - s))]).astype(float)
        bs, bp = _curve(score, weak, strong, w)
        apgr.append(_apgr(bs, bp))
        cpt50.append(_cpt(bs, bp, 0.5))
        cpt80.append(_cpt(bs, bp, 0.8))
    a = (1 - level) / 2
    for name, vals in (("apgr", apgr), ("cpt50", cpt50), ("cpt80", cpt80)):
        v = np.concatenate(vals)
        v = v[np.isfinite(v)]
        out[f"{name}_lo"], out[f"{name}_hi"] = (
            (float(np.quantile(v, a)), float(np.quantile(v, 1 - a))) if len(v) else (float("nan"), float("nan"))
        )
    return out


def strong_weak(train_acc) -> tuple[int, int]:
    """(strong, weak) model indices of a two-model partition: the strong one is the more accurate on training."""
    acc = np.asarray(train_acc, dtype=float)
    if len(acc) != 2:
        raise ValueError(f"RouteLLM's measures compare two models; got {len(acc)}")
    strong = int(np.argmax(acc))
    return strong, 1 - strong


def preference(P: np.ndarray, strong: int, weak: int) -> np.ndarray:
    """How much a router prefers the strong model on each question: P_strong - P_weak."""
    P = np.asarray(P, dtype=float)
    return P[:, strong] - P[:, weak]


def training_apgr(P_oof, Y, strong: int, weak: int) -> float:
    """APGR of a family's out-of-fold P on TRAINING questions (those both models answered): the choice of the family
    whose measures the report shows reads no test question."""
    Y = np.asarray(Y, dtype=float)
    ok = ~np.isnan(Y[:, [strong, weak]]).any(axis=1)
    if not ok.any():
        return float("nan")
    share, pgr = _curve(
        preference(np.asarray(P_oof)[ok], strong, weak), Y[ok, weak], Y[ok, strong], np.ones((1, ok.sum()))
    )
    return float(_apgr(share, pgr)[0])


def apgr_family(oof: dict, families, Ytr, strong: int, weak: int, simplicity) -> tuple[str, dict]:
    """(the family with the best training-CV APGR, {family: its training APGR}) among ``families`` that have
    out-of-fold P in ``oof``; ties go to the simpler (``simplicity`` ranks families)."""
    cv = {f: training_apgr(oof[f], Ytr, strong, weak) for f in families if f in oof}
    return min(cv, key=lambda f: (-round(np.nan_to_num(cv[f], nan=-1.0), 12), simplicity(f))), cv


def gap_report(oof: dict, test_P: dict, Ytr, Yte, prior, simplicity, n_boot: int = 1000, seed: int = 0) -> dict:
    """RouteLLM's measures on test questions for the family with the best training-CV APGR (:func:`apgr_family`),
    with every family's training APGR. ``test_P``: family -> P on ``Yte``'s rows."""
    strong, weak = strong_weak(prior)
    fam, cv = apgr_family(oof, test_P, Ytr, strong, weak, simplicity)
    Yte = np.asarray(Yte, dtype=float)
    rep = gap_measures(preference(test_P[fam], strong, weak), Yte[:, weak], Yte[:, strong], n_boot=n_boot, seed=seed)
    return {**rep, "family": fam, "cv_apgr": cv, "strong": strong, "weak": weak}
