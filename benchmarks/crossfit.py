"""RouteLLM's measures cross-fitted over every question of a two-model partition (used by benchmarks/router.py).

The issue's reference figures for a plain kNN router (MMLU APGR 0.631, GSM8K 0.582) come from 5-fold cross-validation
over all questions; the assets measure on their own 20 % test split (264 GSM8K questions: a 95 % interval about
+-0.09 wide). This runs the product's whole procedure per outer fold, on the other folds' questions only: every
family cross-validated and fitted as ``router_accuracy`` does (``select_router``), the family with the best
training-CV APGR (``apgr_family``, as ``gap_report`` chooses) scores the held-out fold, and the pooled held-out scores give APGR and
CPT with a bootstrap over all questions. The plain kNN reference (k = 20 nearest training questions by cosine,
score = the strong model's mean minus the weak one's) runs on the same folds, side by side.
"""

from __future__ import annotations

import numpy as np


def plain_knn_scores(Etr, Ytr, Eva, strong: int, weak: int, k: int = 20) -> np.ndarray:
    from tinybench_assets.core.routing.knn import nearest

    idx, _ = nearest(Eva, Etr, k)
    Yn = Ytr[idx]  # (n, k, M)
    return np.nanmean(Yn[:, :, strong], axis=1) - np.nanmean(Yn[:, :, weak], axis=1)


def crossfit_gap(E, Y, groups=None, n_folds: int = 5, seed: int = 0, n_boot: int = 1000, log=print) -> dict:
    """{"product": gap measures + families chosen per fold, "plain_knn": gap measures} over every question both
    models answered."""
    from tinybench_assets.core.routing.gap import apgr_family, gap_measures, preference, strong_weak
    from tinybench_assets.core.routing.routers import model_accuracy
    from tinybench_assets.core.routing.select import select_router, simplicity

    ok = ~np.isnan(Y).any(axis=1)
    E, Y = np.asarray(E)[ok], np.asarray(Y, dtype=float)[ok]
    groups = None if groups is None else np.asarray(groups)[ok]
    strong, weak = strong_weak(model_accuracy(Y))
    fold = np.random.default_rng(seed).permutation(len(Y)) % n_folds
    score, knn, chosen = np.zeros(len(Y)), np.zeros(len(Y)), []
    for f in range(n_folds):
        tr, va = fold != f, fold == f
        gtr = None if groups is None else groups[tr]
        sel = select_router(E[tr], Y[tr], groups=gtr, n_folds=5, seed=seed, n_boot=200)
        fam, cv = apgr_family(sel.oof, sel.best, Y[tr], strong, weak, simplicity)
        router = sel.make(fam, seed=seed).fit(E[tr], Y[tr], gtr)
        score[va] = preference(router.predict_proba(E[va]), strong, weak)
        knn[va] = plain_knn_scores(E[tr], Y[tr], E[va], strong, weak)
        chosen.append(fam)
        log(f"  fold {f + 1}/{n_folds}: {fam} (training-CV APGR {cv[fam]:.3f})")
    keep = ("apgr", "apgr_lo", "apgr_hi", "cpt50", "cpt50_lo", "cpt50_hi", "cpt80", "n_test")
    prod = gap_measures(score, Y[:, weak], Y[:, strong], n_boot=n_boot, seed=seed)
    ref = gap_measures(knn, Y[:, weak], Y[:, strong], n_boot=n_boot, seed=seed)
    return {"product": {**{k: prod[k] for k in keep}, "families": chosen}, "plain_knn": {k: ref[k] for k in keep}}
