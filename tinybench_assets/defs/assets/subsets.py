"""MAGI subset assets per leaderboard: item rankings, score trends, voter penalty, the chosen subset
(with its Pareto front and a runnable export), every model's subset score, and stratified parallel forms.

Per-leaderboard defaults (``BOARD_DEFAULTS``): openllm pools all its scenario partitions; routerdc uses the
mmlu partition's test questions. The core is tinybench_assets.core.subsets (docs/magi.md).
"""
import io
import json
import time
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
from pydantic import Field

from tinybench_assets import paths
from tinybench_assets.atomic import atomic_write
from tinybench_assets.core.responses import concat_scenarios
from tinybench_assets.core.subsets import (
    DEFAULTS,
    Scalarization,
    SearchSpace,
    chance_per_item,
    choose_export,
    parallel_forms,
    prepare,
    read_aggregate,
    run_magi,
)
from tinybench_assets.core.subsets.choice import EXPORT_RULE
from tinybench_assets.core.subsets.penalty import penalty_vs_n_voters, score_trends, subset_scores
from tinybench_assets.core.subsets.rankings import VOTER_METHODS
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.partitions import leaderboard_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, StoreResource, env_torch_threads
from tinybench_assets.io import plots
from tinybench_assets.io.drops import split_partition_key
from tinybench_assets.io.store import Store, load_matrix
from tinybench_assets.orchestration.versions import code_version

GROUP = "magi"
CODE_VERSION = code_version("magi")
BOARD_DEFAULTS = {"routerdc": {"scenarios": ["mmlu"], "item_split": "test"}}
MAGI_ASSETS = ("magi_rankings", "magi_score_trends", "magi_voter_penalty", "magi_subset", "magi_scores")


class MagiConfig(dg.Config):
    """Which items, who votes, how the search runs and how one point is chosen (docs/magi.md)."""

    scenarios: list[str] = []  # empty: the leaderboard's default (openllm: all; routerdc: mmlu)
    item_split: str = ""  # "" : the default (routerdc: test questions; others: every item); "all": no filter
    aggregate_csv: str = ""  # "" : <default data dir>/<leaderboard>/leaderboard_aggregate_scores.csv (may be absent)
    n_voters: int = 60
    per_family: int = 3
    guesser_z: float = 2.0
    eval_fraction: float = 0.5  # non-voters held out from every selection step
    reference: str = ""  # "" : the best tune model by full score
    methods: list[str] = ["mean_score", "ref_vs_voters", "irt", "irt_discrimination", "irt_information",
                          "top_discrimination"]
    # exported as magi_subset.json: "auto" = the variant rule applied to this run's subsets on tune models and voters
    # (core EXPORT_RULE, choose_export; never ref_vs_voters, which burns its reference), or a method name
    export_method: str = "auto"
    export_min_tau: float = 0.3  # auto: the tune top-50 Kendall tau a subset needs (ranks the top like the full score)
    n_trials: int = 60
    seed: int = 0
    irt_dim: int = 1
    torch_threads: int = Field(default_factory=lambda: env_torch_threads(2))  # $TINYBENCH_TORCH_THREADS when set
    # construct validity; defaults = core DEFAULTS, chosen by the variant rule on tune models (docs/magi.md)
    stratify: bool = DEFAULTS["stratify"]  # every scenario the guard keeps holds its share of the pool
    balanced: bool = DEFAULTS["balanced"]  # subset score = mean over scenarios of the accuracy on their kept items
    irt_scope: str = DEFAULTS["irt_scope"]  # scenario (one 1-D fit per scenario) | pooled (one 1-D fit)
    information: str = DEFAULTS["information"]  # irt_information: full_direction (2-D fit, along the full score) | raw
    validity_top: int = DEFAULTS["validity_top"]  # the guard: scenario validity among the top-N tune models
    guard: bool = DEFAULTS["min_validity"] is not None  # delete first the scenarios whose score does not rise
    min_validity: float = DEFAULTS["min_validity"] or 0.0  # with the full score at the top (validity <= this)
    step_fraction: float = 0.05
    max_fraction: float = 0.2
    max_mean_penalty: float = 0.5
    max_guesser_advantage: float = 0.0
    penalty_weight: float = 0.05
    guesser_weight: float = 0.5
    size_weight: float = 0.01
    keep_fraction_min: float = 0.08
    keep_fraction_max: float = 0.2


class FormsConfig(dg.Config):
    scenarios: list[str] = []
    item_split: str = ""
    form_size: int = 300
    n_buckets: int = 3
    difficulty: str = "accuracy"  # accuracy (1 - mean accuracy) | irt (IRT b, dim 1)
    exclude_subscenarios: list[str] = []
    seed: int = 0


def board_matrix(db: Store, board: str, scenarios: list[str], item_split: str):
    """Binarized models x items of the chosen scenarios and item split (models observed on every item), the
    item texts, and each model's mean full score over those scenarios (NaN when unknown)."""
    defaults = BOARD_DEFAULTS.get(board, {})
    scenarios = scenarios or defaults.get("scenarios", [])
    split = item_split or defaults.get("item_split", "all")
    keys = [k for k in db.partition_keys(board) if not scenarios or split_partition_key(k)[1] in scenarios]
    if not keys:
        raise dg.Failure(f"leaderboard {board}: no stored scenario partitions among {scenarios or 'all'}")
    mats = []
    for key in keys:
        m = load_matrix(db, key, binarized=True)
        if split != "all":
            sp = db.item_split(key)
            keep = np.array([sp.get(i) == split for i in m.items])
            if keep.any():
                m = m.subset(items=keep)
        mats.append(m)
    matrix = concat_scenarios(mats)
    complete = ~np.isnan(matrix.scores).any(axis=1)
    matrix = matrix.subset(models=complete)
    full = db.full_scores(board)
    full = full[full.scenario.isin({split_partition_key(k)[1] for k in keys})]
    full_mean = full.groupby("model")["full_score"].mean().reindex(matrix.models).to_numpy(dtype=float)
    texts = db.item_texts(board).set_index("item")["text"]
    return matrix, full_mean, texts, keys, split


#: what a MAGI subset or parallel forms need: models observed on every item, and items
MIN_MAGI_MODELS, MIN_MAGI_ITEMS = 5, 10


def magi_inputs(db: Store, board: str, scenarios: list[str], item_split: str):
    """board_matrix's result, or (None, why) when the leaderboard is too small for subsets (a `skipped` note)."""
    try:
        out = board_matrix(db, board, scenarios, item_split)
    except LookupError as e:  # a partition with nothing binarized (too small to land a matrix)
        return None, f"{board}: {e}"
    matrix = out[0]
    if len(matrix.models) < MIN_MAGI_MODELS or len(matrix.items) < MIN_MAGI_ITEMS:
        return None, (f"{board}: {len(matrix.models)} model(s) observed on all of {len(matrix.items)} item(s); subsets "
                      f"need at least {MIN_MAGI_MODELS} models and {MIN_MAGI_ITEMS} items")
    return out, None


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=70, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _trend_png(sizes, scores, roles, title) -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    style = {"voter": dict(color="0.7", lw=0.7), "top": dict(color="tab:blue", lw=1.0), "reference": dict(color="tab:red", lw=2.2)}
    seen = set()
    for j, role in enumerate(roles):
        ax.plot(sizes, scores[:, j], label=None if role in seen else role, **style[role])
        seen.add(role)
    ax.invert_xaxis()
    ax.set_xlabel("items left")
    ax.set_ylabel("score on the items left")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _png(fig)


def _penalty_png(pen: pd.DataFrame, curve: pd.DataFrame) -> bytes:
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    g = pen.groupby("method")[["penalty_before", "penalty_after"]].mean()
    x = np.arange(len(g))
    ax1.bar(x - 0.2, g["penalty_before"], 0.4, label="before padding")
    ax1.bar(x + 0.2, g["penalty_after"], 0.4, label="after padding")
    ax1.set_xticks(x, g.index, rotation=30, fontsize=7)
    ax1.set_ylabel("mean voter penalty (points)")
    ax1.legend(fontsize=7)
    for method, c in curve.groupby("method"):
        ax2.plot(c["n_voters"], c["mean_penalty"], marker="o", label=method)
    ax2.set_xscale("log")
    ax2.set_xlabel("number of voters")
    ax2.set_ylabel("mean voter penalty (points)")
    ax2.legend(fontsize=7)
    ax2.grid(alpha=0.3)
    return _png(fig)


def _md_image(png: bytes, alt: str) -> dg.MetadataValue:
    return dg.MetadataValue.md(plots.markdown_image(png, alt))


MAGI_TITLES = ("MAGI item rankings", "MAGI score trends", "MAGI voter penalty", "MAGI subset", "MAGI subset scores")


@dg.multi_asset(
    specs=[dg.AssetSpec(name, group_name=GROUP, partitions_def=leaderboard_partitions,
                        deps=[dg.AssetDep("binarized_responses", partition_mapping=dg.AllPartitionMapping())] if name == "magi_rankings" else ["magi_rankings"],
                        code_version=CODE_VERSION, **card(title, desc, kinds=("python", "optuna", "duckdb")))
           for name, title, desc in zip(MAGI_ASSETS, MAGI_TITLES, (
               "Item rankings per method (mean voter score, reference-vs-voters, IRT difficulty / discrimination / "
               "information at the top models' abilities along the full-score direction, covariance with the full "
               "score among the top tune models): keep score and rank per item.",
               "Progressive deletion: every chosen model's score (reference, voters, top-10 non-voters) as items are deleted.",
               "Leave-one-out voter penalty per voter before/after offset padding, and mean penalty vs number of voters.",
               "The chosen subset per method (items, ranking scores, parameters, Pareto front of the seeded search) and "
               "the runnable export data/artifacts/<leaderboard>/magi_subset.json.",
               "Every model's score on each method's subset beside its pool and full score, with the not-fair flag."))],
    pool=DUCKDB_POOL, can_subset=False)
def magi_subset_assets(context: dg.AssetExecutionContext, config: MagiConfig, store: StoreResource):
    import torch

    torch.set_num_threads(max(1, config.torch_threads))
    db = store.get()
    board = context.partition_key
    t0 = time.perf_counter()
    inputs, why = magi_inputs(db, board, config.scenarios, config.item_split)
    if inputs is None:
        for name in MAGI_ASSETS:
            yield dg.MaterializeResult(asset_key=name, metadata={"skipped": why})
        return
    matrix, full, texts, keys, split = inputs
    agg_path = paths.aggregate_csv(board, config.aggregate_csv)
    setup = prepare(matrix.scores, matrix.models, matrix.items, matrix.scenarios, matrix.subscenarios,
                    chance_per_item(matrix.scenarios), full, aggregate=read_aggregate(agg_path), n_voters=config.n_voters,
                    per_family=config.per_family, eval_fraction=config.eval_fraction, reference=config.reference or None,
                    guesser_z=config.guesser_z, seed=config.seed, balanced=config.balanced)
    scalar = Scalarization(config.max_fraction, config.max_mean_penalty, config.max_guesser_advantage,
                           config.penalty_weight, config.guesser_weight, config.size_weight)
    space = SearchSpace(keep_fraction=(config.keep_fraction_min, config.keep_fraction_max))
    result = run_magi(setup, methods=tuple(config.methods), n_trials=config.n_trials, seed=config.seed,
                      irt_dim=config.irt_dim, space=space, scalar=scalar, stratify=config.stratify,
                      balanced=config.balanced, irt_scope=config.irt_scope, validity_top=config.validity_top,
                      min_validity=config.min_validity if config.guard else None, information=config.information)
    if config.export_method == "auto":
        export = choose_export(result, min_tau=config.export_min_tau, scalar=scalar)
    elif config.export_method in result.methods:
        export = config.export_method
    else:
        raise ValueError(f"magi_subset_assets: export_method {config.export_method!r} is neither 'auto' nor one of the "
                         f"methods run ({', '.join(result.methods)})")
    models = np.asarray(setup.models, dtype=object)
    fam = setup.families.loc[setup.models, "family"].to_numpy()
    role = setup.role.copy()
    role[setup.reference] = "reference"
    items = pd.DataFrame({"item": setup.items, "scenario": setup.scenarios.astype(str),
                          "subscenario": setup.subscenarios.astype(str), "chance": setup.chance})
    rankings, trends, penalties, curves, subset_rows, search, summary, scores = [], [], [], [], [], [], [], []
    top = np.concatenate([setup.top(setup.role == "tune", 10), setup.top(setup.role == "eval", 10)])
    chosen_rows = np.concatenate([[setup.reference], setup.voters, top])
    chosen_roles = ["reference"] + ["voter"] * len(setup.voters) + ["top"] * len(top)
    pool_score = np.nanmean(setup.Y, axis=1)
    charts = {}
    for method, res in result.methods.items():
        keep = res.ranking.keep
        rank = np.empty(len(keep), dtype=int)
        rank[np.argsort(-keep, kind="stable")] = np.arange(1, len(keep) + 1)
        rankings.append(items.assign(method=method, keep_score=keep, rank=rank))
        sizes, sc = score_trends(setup.Y, res.ranking, chosen_rows, step_fraction=config.step_fraction,
                                 min_items=min(10, len(keep)), groups=setup.score_groups)
        for t, n_left in enumerate(sizes):
            trends.append(pd.DataFrame({"method": method, "items_left": int(n_left), "model": models[chosen_rows],
                                        "role": chosen_roles, "not_fair": setup.not_fair[chosen_rows], "score": sc[t]}))
        if method == export:
            charts["score_trends"] = _md_image(_trend_png(sizes, sc, chosen_roles, f"{board}: {method}, progressive deletion"), "trends")
        penalties.append(pd.DataFrame({
            "method": method, "model": models[setup.voters], "family": fam[setup.voters],
            "penalty_before": res.chosen.penalty_before, "penalty_after": res.chosen.penalty_after}))
        k = int(res.chosen.base.sum())
        if method in VOTER_METHODS and len(setup.voters) > 1:
            n_values = sorted({n for n in (1, 2, 3, 5, 10, 20, 40, 60, len(setup.voters)) if n <= len(setup.voters)})
            curves.append(penalty_vs_n_voters(setup.Yv, method, k, y_ref=setup.Y[setup.reference], n_values=n_values,
                                              seed=config.seed).assign(method=method))
        subset_rows.append(items.assign(method=method, keep_score=keep, in_subset=res.chosen.mask,
                                        padded=res.chosen.mask & ~res.chosen.base, exported=method == export))
        search.append(res.trials.assign(method=method))
        summary.append({"method": method, **{f"tune_{k_}": v for k_, v in res.chosen.metrics.items()},
                        **{f"eval_{k_}": v for k_, v in res.eval_metrics.items()},
                        "params": json.dumps({**res.params.as_dict(), **res.ranking_options}), "seconds": res.seconds})
        scores.append(pd.DataFrame({"method": method, "model": models, "role": role, "family": fam,
                                    "not_fair": setup.not_fair, "guesser": setup.guesser, "full_score": setup.full_score,
                                    "pool_score": pool_score, "subset_score": setup.scores(res.chosen.mask)}))
    full_row = {"method": "full", **{f"tune_{k_}": v for k_, v in result.full_metrics.items()},
                **{f"eval_{k_}": v for k_, v in result.full_eval_metrics.items()}, "params": "{}", "seconds": 0.0}
    summary_df = pd.DataFrame([full_row, *summary])
    pen_df = pd.concat(penalties, ignore_index=True)
    curve_df = pd.concat(curves, ignore_index=True)[["method", "n_voters", "mean_penalty", "sd_penalty", "draws"]] if curves else \
        pd.DataFrame(columns=["method", "n_voters", "mean_penalty", "sd_penalty", "draws"])
    search_df = pd.concat(search, ignore_index=True)
    db.replace_partition({
        "magi_rankings": pd.concat(rankings, ignore_index=True),
        "magi_score_trends": pd.concat(trends, ignore_index=True),
        "magi_voter_penalty": pen_df, "magi_penalty_curve": curve_df,
        "magi_subset": pd.concat(subset_rows, ignore_index=True), "magi_search": search_df,
        "magi_summary": summary_df, "magi_scores": pd.concat(scores, ignore_index=True),
    }, board, column="leaderboard")
    res = result.methods[export]
    sel = np.flatnonzero(res.chosen.mask)
    artifact = {
        "format": "tinybench-magi-subset/1", "leaderboard": board, "scenarios": keys, "item_split": split,
        "method": export, "params": {**res.params.as_dict(), **res.ranking_options}, "seed": config.seed,
        "scoring_rule": ("score = mean over the scenarios listed of the mean 0/1 correctness on that scenario's items"
                         if setup.balanced else "score = mean over the listed items of 0/1 correctness")
                        + " (binarized as the leaderboard's binarization table says); chance = the same rule over the "
                          "items' chance",
        "chance": float(subset_scores(setup.chance[None, :], res.chosen.mask, setup.score_groups)[0]),
        "options": result.options, "demoted_scenarios": [str(g) for g in result.demoted],
        "not_fair_models": [str(m) for m in models[setup.not_fair]] if export == "ref_vs_voters" else [],
        "reference_model": str(models[setup.reference]), "metrics_eval": res.eval_metrics,
        "items": [{"item": setup.items[j], "scenario": str(setup.scenarios[j]), "subscenario": str(setup.subscenarios[j]),
                   "chance": float(setup.chance[j]), "padded": bool(not res.chosen.base[j]),
                   "text": None if pd.isna(texts.get(setup.items[j])) else str(texts.get(setup.items[j]))} for j in sel],
    }
    text = json.dumps(artifact, indent=1, default=float)
    path = atomic_write(Path(paths.artifacts_dir()) / board / "magi_subset.json", lambda tmp: tmp.write_text(text))
    spread = summary_df.set_index("method")[["eval_size", "eval_top10_std", "eval_top10_std_voters", "eval_mean_voter_penalty",
                                             "eval_guesser_advantage", "eval_kendall_tau_nonvoters"]]
    spread["top10_std_ratio"] = spread["eval_top10_std"] / spread.loc["full", "eval_top10_std"]
    common = {"models": len(setup.models), "items": len(setup.items), "voters": len(setup.voters),
              "reference": str(models[setup.reference]), "not_fair_models": int(setup.not_fair.sum())}
    yield dg.MaterializeResult(asset_key="magi_rankings", metadata={
        **common, "methods": dg.MetadataValue.json(list(result.methods)), "irt_seconds": round(result.irt_seconds, 2)})
    yield dg.MaterializeResult(asset_key="magi_score_trends", metadata={
        **({"trend_chart": charts["score_trends"]} if "score_trends" in charts else {}),
        "rows": int(sum(len(t) for t in trends))})
    yield dg.MaterializeResult(asset_key="magi_voter_penalty", metadata={
        "penalty_chart": _md_image(_penalty_png(pen_df, curve_df), "penalty"),
        "mean_penalty": dg.MetadataValue.md(pen_df.groupby("method")[["penalty_before", "penalty_after"]].mean().round(3).to_markdown())})
    yield dg.MaterializeResult(asset_key="magi_subset", metadata={
        **common, "top10_spread_before_after": dg.MetadataValue.md(spread.round(4).to_markdown()),
        "exported_method": export, "exported_items": len(sel),
        "exported_scenarios": dg.MetadataValue.json(  # a one-scenario subset spreads the top on that scenario only
            {str(k): int(v) for k, v in pd.Series(setup.scenarios[sel].astype(str)).value_counts().items()}),
        "export_rule": EXPORT_RULE if config.export_method == "auto" else f"export_method: {config.export_method}",
        "artifact": dg.MetadataValue.path(str(path)),
        "pareto_points": int(search_df.pareto.sum()), "seconds": round(time.perf_counter() - t0, 1)})
    yield dg.MaterializeResult(asset_key="magi_scores", metadata={
        "rows": int(sum(len(s) for s in scores)),
        "not_fair": dg.MetadataValue.json([str(m) for m in models[setup.not_fair]][:50])})


@dg.asset(name="parallel_forms", group_name=GROUP, code_version=CODE_VERSION, pool=DUCKDB_POOL,
          partitions_def=leaderboard_partitions, deps=[dg.AssetDep("binarized_responses", partition_mapping=dg.AllPartitionMapping())],
          **card("Parallel test forms", "Two non-overlapping stratified parallel forms (subscenario x difficulty bucket) "
                 "with counts, proportions, L1 distances to each other and to the pool, and the A-vs-B correlation of "
                 "every model's score."))
def parallel_forms_asset(context: dg.AssetExecutionContext, config: FormsConfig, store: StoreResource) -> dg.MaterializeResult:
    db = store.get()
    board = context.partition_key
    inputs, why = magi_inputs(db, board, config.scenarios, config.item_split)
    if inputs is None:
        return dg.MaterializeResult(metadata={"skipped": why})
    matrix, _, _, keys, split = inputs
    if config.difficulty == "irt":
        import torch

        from tinybench_assets.core.irt import fit_irt

        torch.set_num_threads(max(1, env_torch_threads(2)))
        difficulty = fit_irt(matrix.scores, dim=1, seed=config.seed).b
    elif config.difficulty == "accuracy":
        difficulty = 1 - np.nanmean(matrix.scores, axis=0)
    else:
        raise dg.Failure(f"unknown difficulty {config.difficulty!r} (accuracy | irt)")
    sub = np.array([f"{s}/{t}" if s != t else str(s) for s, t in zip(matrix.scenarios, matrix.subscenarios)], dtype=object)
    forms = parallel_forms(matrix.items, sub, difficulty, size=config.form_size, n_buckets=config.n_buckets,
                           exclude=config.exclude_subscenarios, scores=matrix.scores, seed=config.seed)
    chosen = forms.items[forms.items.form != ""]
    stats = pd.DataFrame([{**forms.distances, **{f"corr_{k}": v for k, v in forms.correlation.items()},
                           "form_size": len(forms.form_a), "requested_size": config.form_size, "pool_items": int((~forms.items.excluded).sum())}])
    db.replace_partition({"parallel_forms": chosen[["item", "form", "subscenario", "bucket", "difficulty"]],
                          "parallel_forms_strata": forms.summary, "parallel_forms_stats": stats}, board, column="leaderboard")
    return dg.MaterializeResult(metadata={
        "scenarios": dg.MetadataValue.json(keys), "item_split": split,
        "form_size": len(forms.form_a), "requested_size": config.form_size,
        "overlap": len(set(forms.form_a) & set(forms.form_b)),
        "l1_distances": dg.MetadataValue.json({k: round(v, 4) for k, v in forms.distances.items()}),
        "a_vs_b_correlation": dg.MetadataValue.json(forms.correlation),
        "strata": dg.MetadataValue.md(forms.summary.head(60).round(3).to_markdown(index=False)),
    })


leaderboard_assets = [magi_subset_assets, parallel_forms_asset]
