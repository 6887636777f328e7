"""Checks on the router assets (per scenario partition) and the MAGI subsets (per leaderboard)."""

import dagster as dg
import numpy as np

from tinybench_assets.defs.assets.subsets import MagiConfig
from tinybench_assets.defs.checks._common import (
    ERROR,
    WARN,
    nothing_stored,
    partition_of,
    result,
    rows,
    skip_result,
    skipped,
)
from tinybench_assets.defs.partitions import leaderboard_partitions, scenario_partitions
from tinybench_assets.defs.resources import StoreResource


@dg.asset_check(
    asset=dg.AssetKey("knn_item_params"),
    partitions_def=scenario_partitions,
    blocking=True,
    description="Blocking: every embedded test question has exactly one imputed (a, b), finite, with the IRT "
    "fit's dimension, and no training question is imputed. Otherwise p-IRT predictions and the tutorial "
    "router would silently drop or mis-score questions.",
)
def knn_params_cover_test_questions(
    context: dg.AssetCheckExecutionContext, store: StoreResource
) -> dg.AssetCheckResult:
    key = partition_of(context)
    db = store.get()
    emb = rows(db, "question_embeddings", "partition_key = ?", [key], "item, split")
    knn = rows(db, "knn_item_params", "partition_key = ?", [key], "item, b, a")
    if knn.empty:
        reason = skipped(context, "knn_item_params", key)
        if reason:
            return skip_result(ERROR, key, reason)
    test = set(emb.loc[emb["split"] == "test", "item"]) if len(emb) else set()
    got = list(knn["item"]) if len(knn) else []
    fitted = db.irt_items(key)
    dim = len(fitted["a"].iloc[0]) if len(fitted) else None
    nonfinite = sum(
        not (np.isfinite(float(b)) and np.isfinite(np.asarray(a, dtype=float)).all())
        for b, a in zip(knn.get("b", []), knn.get("a", []))
    )
    wrong_dim = sum(len(a) != dim for a in knn.get("a", [])) if dim is not None else len(got)
    missing, extra = sorted(test - set(got)), sorted(set(got) - test)
    dup = len(got) - len(set(got))
    ok = bool(test) and not missing and not extra and dup == 0 and nonfinite == 0 and wrong_dim == 0
    return result(
        ok,
        ERROR,
        key,
        test_questions=len(test),
        imputed=len(got),
        missing=len(missing),
        not_test=len(extra),
        duplicates=dup,
        nonfinite=int(nonfinite),
        wrong_dimension=int(wrong_dim),
        irt_dim=dim if dim else -1,
        examples_missing=missing[:10],
        examples_not_test=extra[:10],
    )


@dg.asset_check(
    asset=dg.AssetKey("router_accuracy"),
    partitions_def=scenario_partitions,
    description="The served router's cross-validated accuracy on TRAINING questions is at least the best single "
    "model's (the best_single family in router_cv): serving a router that loses to one model is a regression. "
    "Test-set figures are reported, not judged.",
)
def router_matches_best_single(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    key = partition_of(context)
    db = store.get()
    cv = rows(db, "router_cv", "partition_key = ?", [key], "family, config, cv_acc, served")
    if cv.empty:
        return nothing_stored(context, "router_accuracy", key, ERROR, "no router_cv rows")
    served = cv[cv["served"].astype(bool)]
    single = cv[cv["family"] == "best_single"]
    if len(served) != 1 or single.empty:
        return result(
            False,
            ERROR,
            key,
            served_rows=len(served),
            best_single_rows=len(single),
            error="router_cv needs exactly one served configuration and a best_single row",
        )
    s = served.iloc[0]
    served_cv, single_cv = float(s["cv_acc"]), float(single["cv_acc"].max())
    m = rows(db, "router_metrics", "partition_key = ?", [key], "router_acc, best_single_acc, oracle_acc")
    test = {c: float(m[c].iloc[0]) for c in m.columns} if len(m) else {}
    return result(
        served_cv >= single_cv - 1e-12,
        ERROR,
        key,
        served_family=str(s["family"]),
        served_config=str(s["config"]),
        served_cv_acc=served_cv,
        best_single_cv_acc=single_cv,
        cv_gain_points=100 * (served_cv - single_cv),
        configurations=len(cv),
        **{f"test_{k}": v for k, v in test.items()},
    )


def _magi_max_fraction(context: dg.AssetCheckExecutionContext, board: str) -> tuple[float, str]:
    """max_fraction of the run that materialized magi_subset for this leaderboard, else MagiConfig's default."""
    flt = dg.AssetRecordsFilter(asset_key=dg.AssetKey("magi_subset"), asset_partitions=[board])
    recs = context.instance.fetch_materializations(flt, limit=1).records
    run = context.instance.get_run_by_id(recs[0].run_id) if recs else None
    cfg = ((run.run_config or {}).get("ops", {}).get("magi_subset_assets", {}).get("config", {})) if run else {}
    if "max_fraction" in cfg:
        return float(cfg["max_fraction"]), f"run {run.run_id[:8]}"
    return float(MagiConfig().max_fraction), "MagiConfig default"


@dg.asset_check(
    asset=dg.AssetKey("magi_subset"),
    partitions_def=leaderboard_partitions,
    description="Each method's chosen subset (padding included) is at most max_fraction of the pool (the "
    "configuration of the run that built it) and matches its recorded search point. A warning: with no "
    "feasible point the search keeps the least-violating one.",
)
def magi_subset_within_bound(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    board = partition_of(context)
    db = store.get()
    sub = rows(db, "magi_subset", "leaderboard = ?", [board], "method, item, in_subset")
    if sub.empty:
        return result(False, WARN, board, error="no magi_subset rows for this leaderboard")
    bound, source = _magi_max_fraction(context, board)
    search = rows(db, "magi_search", "leaderboard = ? AND chosen", [board], "method, size, fraction_of_pool, violation")
    per = sub.groupby("method").agg(pool=("item", "size"), size=("in_subset", "sum")).reset_index()
    per["fraction"] = per["size"] / per["pool"]
    per = per.merge(search.rename(columns={"size": "search_size"}), on="method", how="left")
    over = per[per["fraction"] > bound + 1e-9]
    mismatch = per[per["search_size"].notna() & (per["search_size"] != per["size"])]
    empty = per[per["size"] <= 0]
    return result(
        over.empty and mismatch.empty and empty.empty,
        WARN,
        board,
        max_fraction=bound,
        bound_from=source,
        methods=len(per),
        largest_fraction=float(per["fraction"].max()),
        sizes={str(r.method): int(r.size) for r in per.itertuples()},
        over_bound=over["method"].tolist(),
        size_differs_from_search=mismatch["method"].tolist(),
        empty_subsets=empty["method"].tolist(),
        table=per.round(4),
    )


@dg.asset_check(
    asset=dg.AssetKey("magi_scores"),
    partitions_def=leaderboard_partitions,
    description="Not-fair flags are present: for every method there is one reference model, and it and every "
    "model of its family are flagged not_fair (their subset scores are biased by construction).",
)
def magi_not_fair_flagged(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    board = partition_of(context)
    sc = rows(store.get(), "magi_scores", "leaderboard = ?", [board], "method, model, role, family, not_fair")
    if sc.empty:
        return result(False, ERROR, board, error="no magi_scores rows for this leaderboard")
    problems = {}
    for method, g in sc.groupby("method"):
        ref = g[g["role"] == "reference"]
        if len(ref) != 1:
            problems[method] = f"{len(ref)} reference rows"
            continue
        fam = g[g["family"] == ref["family"].iloc[0]]
        unflagged = fam.loc[~fam["not_fair"].astype(bool), "model"].tolist()
        if unflagged:
            problems[method] = f"not flagged: {unflagged[:5]}"
    ref = sc[sc["role"] == "reference"]
    return result(
        not problems,
        ERROR,
        board,
        methods=int(sc["method"].nunique()),
        reference=str(ref["model"].iloc[0]) if len(ref) else "",
        not_fair_models=sorted(sc.loc[sc["not_fair"].astype(bool), "model"].unique().tolist())[:50],
        problems=problems,
    )


checks = [knn_params_cover_test_questions, router_matches_best_single, magi_subset_within_bound, magi_not_fair_flagged]
