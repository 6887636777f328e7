"""Stratified parallel forms: two non-overlapping item subsets that match the pool's distribution over
subscenario x difficulty bucket.

Strata are subscenario x difficulty bucket (``n_buckets`` quantile buckets of the difficulty: 1 - mean
accuracy, or IRT b). Each stratum gets ``round`` of its pool share of the form size (largest remainder,
capped at half the stratum so both forms can take it); within a stratum items are sorted by difficulty,
paired neighbour by neighbour, and a seeded coin sends one of each pair to form A and the other to B, so
the two forms match in difficulty inside every stratum, not only in counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class ParallelForms:
    """form_a, form_b : item indices; items : per-item frame (item, subscenario, difficulty, bucket, form);
    summary : counts and proportions per stratum; distances : L1 distances; correlation : A vs B scores."""

    form_a: np.ndarray
    form_b: np.ndarray
    items: pd.DataFrame
    summary: pd.DataFrame
    distances: dict
    correlation: dict


def difficulty_buckets(difficulty: np.ndarray, n_buckets: int = 3) -> np.ndarray:
    """Quantile bucket 0..n_buckets-1 per item (0 = easiest), shape (n_items,)."""
    d = np.asarray(difficulty, dtype=float)
    ranks = pd.Series(d).rank(method="first").to_numpy() - 1
    return np.minimum((ranks * n_buckets / max(len(d), 1)).astype(int), n_buckets - 1)


def _allocate(counts: np.ndarray, size: int) -> np.ndarray:
    """Largest-remainder allocation of ``size`` over strata proportional to counts, capped at counts // 2."""
    cap = counts // 2
    size = int(min(size, cap.sum()))
    raw = counts / counts.sum() * size
    alloc = np.minimum(np.floor(raw).astype(int), cap)
    while alloc.sum() < size:
        room = alloc < cap
        gain = np.where(room, raw - alloc, -np.inf)
        alloc[int(np.argmax(gain))] += 1
    return alloc


def l1(p: pd.Series, q: pd.Series) -> float:
    """L1 distance of two distributions given as counts or proportions (aligned on their index)."""
    idx = p.index.union(q.index)
    p = p.reindex(idx, fill_value=0).astype(float)
    q = q.reindex(idx, fill_value=0).astype(float)
    return float((p / max(p.sum(), 1e-12) - q / max(q.sum(), 1e-12)).abs().sum())


def parallel_forms(
    items,
    subscenarios,
    difficulty: np.ndarray,
    *,
    size: int = 300,
    n_buckets: int = 3,
    exclude=(),
    scores: np.ndarray | None = None,
    seed: int = 0,
) -> ParallelForms:
    """Two non-overlapping forms of ``size`` items each (fewer when the pool is short: at most half of it).

    Parameters
    ----------
    items : (n_items,) ids.  subscenarios : (n_items,) subject per item.
    difficulty : (n_items,) higher = harder (1 - mean accuracy, or IRT b).
    exclude : subscenarios left out of the pool.  scores : (n_models, n_items) 0/1 to correlate the forms.
    """
    items = np.asarray(items, dtype=object)
    subs = np.asarray(subscenarios, dtype=object).astype(str)
    diff = np.asarray(difficulty, dtype=float)
    keep = ~np.isin(subs, [str(x) for x in exclude])
    idx = np.flatnonzero(keep)
    bucket = np.full(len(items), -1)
    bucket[idx] = difficulty_buckets(diff[idx], n_buckets)
    strata = pd.Series([f"{s}|{b}" for s, b in zip(subs[idx], bucket[idx])], index=idx)
    counts = strata.value_counts().sort_index()
    alloc = pd.Series(_allocate(counts.to_numpy(), size), index=counts.index)
    rng = np.random.default_rng(seed)
    form = np.full(len(items), "", dtype=object)
    for stratum in counts.index:
        members = strata.index[strata.to_numpy() == stratum].to_numpy()
        n = int(alloc[stratum])
        if n == 0:
            continue
        members = members[np.argsort(diff[members] + rng.random(len(members)) * 1e-9, kind="stable")]
        # spread the 2n chosen items over the stratum's difficulty range, then pair neighbours
        pos = np.unique(np.round(np.linspace(0, len(members) - 1, 2 * n)).astype(int))
        if len(pos) < 2 * n:
            pos = np.sort(rng.choice(len(members), 2 * n, replace=False))
        chosen = members[pos]
        for j in range(n):
            a, b = chosen[2 * j], chosen[2 * j + 1]
            if rng.random() < 0.5:
                a, b = b, a
            form[a], form[b] = "A", "B"
    form_a, form_b = np.flatnonzero(form == "A"), np.flatnonzero(form == "B")
    table = pd.DataFrame(
        {"item": items, "subscenario": subs, "difficulty": diff, "bucket": bucket, "excluded": ~keep, "form": form}
    )
    pool = table[keep]
    parts = {"pool": pool, "A": table.iloc[form_a], "B": table.iloc[form_b]}
    summary = pd.concat({k: v.groupby(["subscenario", "bucket"]).size() for k, v in parts.items()}, axis=1).fillna(0)
    summary = summary.astype(int)
    for k in parts:
        summary[f"prop_{k}"] = summary[k] / max(summary[k].sum(), 1)
    summary = summary.reset_index()
    dist = {}
    for col in ("subscenario", "bucket"):
        c = {k: v[col].value_counts() for k, v in parts.items()}
        dist[f"l1_{col}_a_b"] = l1(c["A"], c["B"])
        dist[f"l1_{col}_a_pool"] = l1(c["A"], c["pool"])
        dist[f"l1_{col}_b_pool"] = l1(c["B"], c["pool"])
    corr = {"pearson": float("nan"), "spearman": float("nan"), "n_models": 0}
    if scores is not None and len(form_a) and len(form_b):
        sa = np.nanmean(np.asarray(scores, float)[:, form_a], axis=1)
        sb = np.nanmean(np.asarray(scores, float)[:, form_b], axis=1)
        if len(sa) > 2 and np.std(sa) > 0 and np.std(sb) > 0:
            # imported here: scipy.stats took 0.45 s of the 1.7 s every run worker and code server spends loading
            # the definitions
            from scipy.stats import pearsonr, spearmanr

            corr = {
                "pearson": float(pearsonr(sa, sb).statistic),
                "spearman": float(spearmanr(sa, sb).statistic),
                "n_models": int(len(sa)),
            }
    return ParallelForms(form_a, form_b, table, summary, dist, corr)


def item_difficulty(matrix, kind: str, seed: int = 0) -> np.ndarray:
    """(I,) difficulty of each item of a ResponseMatrix: ``accuracy`` (1 - mean correctness) or ``irt`` (b of a 1-d
    2PL fit, seeded)."""
    if kind == "accuracy":
        return 1 - np.nanmean(matrix.scores, axis=0)
    if kind == "irt":
        from ..irt import fit_irt  # lazy: loads torch (~2 s), for this choice only

        return fit_irt(matrix.scores, dim=1, seed=seed).b
    raise ValueError(f"unknown difficulty {kind!r} (accuracy | irt)")


def matrix_forms(matrix, kind: str, size: int, n_buckets: int, exclude, seed: int) -> ParallelForms:
    """:func:`parallel_forms` of a ResponseMatrix, strata = "scenario/subscenario" x ``kind`` difficulty bucket."""
    sub = np.array(
        [f"{s}/{t}" if s != t else str(s) for s, t in zip(matrix.scenarios, matrix.subscenarios)], dtype=object
    )
    return parallel_forms(
        matrix.items,
        sub,
        item_difficulty(matrix, kind, seed),
        size=size,
        n_buckets=n_buckets,
        exclude=exclude,
        scores=matrix.scores,
        seed=seed,
    )


def forms_tables(forms: ParallelForms, requested_size: int) -> dict[str, pd.DataFrame]:
    """The stored tables of two forms: ``parallel_forms`` (the chosen items), ``parallel_forms_strata`` and
    ``parallel_forms_stats`` (distances, A-vs-B correlations, sizes)."""
    stats = {
        **forms.distances,
        **{f"corr_{k}": v for k, v in forms.correlation.items()},
        "form_size": len(forms.form_a),
        "requested_size": requested_size,
        "pool_items": int((~forms.items.excluded).sum()),
    }
    chosen = forms.items[forms.items.form != ""]
    return {
        "parallel_forms": chosen[["item", "form", "subscenario", "bucket", "difficulty"]],
        "parallel_forms_strata": forms.summary,
        "parallel_forms_stats": pd.DataFrame([stats]),
    }
