"""What the MAGI assets compute for one leaderboard, so that the assets only load, call, write and return metadata::

    magi_inputs(db, board, scenarios, item_split)   the binarized matrix of the chosen scenarios and item split
                                                    (``BOARD_DEFAULTS`` per leaderboard), or why it is too small
    search(setup, config)                           run_magi with the config's options, and the method exported
    magi_tables(setup, result, export, config)      the magi_* tables (rankings, trends, penalties, subsets, search,
                                                    summary, scores) and the export's trend chart
    subset_artifact(...)                            the runnable magi_subset.json
    magi_metadata(...)                              each asset's metadata

The core is tinybench_assets.core.subsets (docs/magi.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets.core.responses import concat_scenarios
from tinybench_assets.core.subsets import Scalarization, SearchSpace, choose_export, run_magi
from tinybench_assets.core.subsets.choice import EXPORT_RULE
from tinybench_assets.core.subsets.optimizer import UNSCORED_NOTE, unscored_trials
from tinybench_assets.core.subsets.penalty import penalty_vs_n_voters, score_trends, subset_scores
from tinybench_assets.core.subsets.rankings import VOTER_METHODS
from tinybench_assets.io import plots
from tinybench_assets.io.drops import split_partition_key
from tinybench_assets.io.store import Store, load_matrix

BOARD_DEFAULTS = {"routerdc": {"scenarios": ["mmlu"], "item_split": "test"}}
CURVE_COLUMNS = ["method", "n_voters", "mean_penalty", "sd_penalty", "draws"]


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
        return None, (
            f"{board}: {len(matrix.models)} model(s) observed on all of {len(matrix.items)} item(s); subsets "
            f"need at least {MIN_MAGI_MODELS} models and {MIN_MAGI_ITEMS} items"
        )
    return out, None


def search(setup, config) -> tuple:
    """(run_magi's result, the method exported, the Scalarization) with the config's options; ``export_method``
    "auto" chooses by ``choose_export``."""
    scalar = Scalarization(
        config.max_fraction,
        config.max_mean_penalty,
        config.max_guesser_advantage,
        config.penalty_weight,
        config.guesser_weight,
        config.size_weight,
    )
    space = SearchSpace(keep_fraction=(config.keep_fraction_min, config.keep_fraction_max))
    result = run_magi(
        setup,
        methods=tuple(config.methods),
        n_trials=config.n_trials,
        seed=config.seed,
        irt_dim=config.irt_dim,
        space=space,
        scalar=scalar,
        stratify=config.stratify,
        balanced=config.balanced,
        irt_scope=config.irt_scope,
        validity_top=config.validity_top,
        min_validity=config.min_validity if config.guard else None,
        information=config.information,
    )
    if config.export_method == "auto":
        export = choose_export(result, min_tau=config.export_min_tau, scalar=scalar)
    elif config.export_method in result.methods:
        export = config.export_method
    else:
        raise ValueError(
            f"magi_subset_assets: export_method {config.export_method!r} is neither 'auto' nor one of the "
            f"methods run ({', '.join(result.methods)})"
        )
    return result, export, scalar


@dataclass
class MagiTables:
    """The magi_* tables of a run and the exported method's progressive-deletion chart (None: not drawn)."""

    tables: dict
    trend_png: bytes | None


def _roster(setup) -> pd.DataFrame:
    """Every model's columns of magi_scores that no method changes: model, role (the reference named), family,
    not_fair, guesser, full_score and pool_score; computed once per run."""
    role = setup.role.copy()
    role[setup.reference] = "reference"
    return pd.DataFrame(
        {
            "model": np.asarray(setup.models, dtype=object),
            "role": role,
            "family": setup.families.loc[setup.models, "family"].to_numpy(),
            "not_fair": setup.not_fair,
            "guesser": setup.guesser,
            "full_score": setup.full_score,
            "pool_score": np.nanmean(setup.Y, axis=1),
        }
    )


def _method_rows(setup, method: str, res, chosen_rows, chosen_roles, items, roster: pd.DataFrame, config) -> dict:
    """One method's rows of every magi_* table, and its trend (sizes, scores)."""
    models, fam = roster["model"].to_numpy(), roster["family"].to_numpy()
    keep = res.ranking.keep
    rank = np.empty(len(keep), dtype=int)
    rank[np.argsort(-keep, kind="stable")] = np.arange(1, len(keep) + 1)
    sizes, sc = score_trends(
        setup.Y,
        res.ranking,
        chosen_rows,
        step_fraction=config.step_fraction,
        min_items=min(10, len(keep)),
        groups=setup.score_groups,
    )
    out = {
        "rankings": items.assign(method=method, keep_score=keep, rank=rank),
        "trend": (sizes, sc),
        "trends": [
            pd.DataFrame(
                {
                    "method": method,
                    "items_left": int(n_left),
                    "model": models[chosen_rows],
                    "role": chosen_roles,
                    "not_fair": setup.not_fair[chosen_rows],
                    "score": sc[t],
                }
            )
            for t, n_left in enumerate(sizes)
        ],
        "penalties": pd.DataFrame(
            {
                "method": method,
                "model": models[setup.voters],
                "family": fam[setup.voters],
                "penalty_before": res.chosen.penalty_before,
                "penalty_after": res.chosen.penalty_after,
            }
        ),
        "curve": None,
    }
    if method in VOTER_METHODS and len(setup.voters) > 1:
        n_values = sorted({n for n in (1, 2, 3, 5, 10, 20, 40, 60, len(setup.voters)) if n <= len(setup.voters)})
        out["curve"] = penalty_vs_n_voters(
            setup.Yv,
            method,
            int(res.chosen.base.sum()),
            y_ref=setup.Y[setup.reference],
            n_values=n_values,
            seed=config.seed,
        ).assign(method=method)
    out["subset"] = items.assign(
        method=method,
        keep_score=keep,
        in_subset=res.chosen.mask,
        padded=res.chosen.mask & ~res.chosen.base,
        exported=False,
    )
    out["summary"] = {
        "method": method,
        **{f"tune_{k}": v for k, v in res.chosen.metrics.items()},
        **{f"eval_{k}": v for k, v in res.eval_metrics.items()},
        "params": json.dumps({**res.params.as_dict(), **res.ranking_options}),
        "seconds": res.seconds,
    }
    out["scores"] = roster.assign(subset_score=setup.scores(res.chosen.mask))
    out["scores"].insert(0, "method", method)
    return out


def magi_tables(setup, result, export: str, config, board: str) -> MagiTables:
    """Every method's rankings, score trends (reference, voters, the top 10 tune and eval models), voter penalties and
    penalty curve, subset, search trials, summary (beside the full pool) and every model's subset score."""
    items = pd.DataFrame(
        {
            "item": setup.items,
            "scenario": setup.scenarios.astype(str),
            "subscenario": setup.subscenarios.astype(str),
            "chance": setup.chance,
        }
    )
    top = np.concatenate([setup.top(setup.role == "tune", 10), setup.top(setup.role == "eval", 10)])
    chosen_rows = np.concatenate([[setup.reference], setup.voters, top])
    chosen_roles = ["reference"] + ["voter"] * len(setup.voters) + ["top"] * len(top)
    roster = _roster(setup)
    per = {
        m: _method_rows(setup, m, res, chosen_rows, chosen_roles, items, roster, config)
        for m, res in result.methods.items()
    }
    png = None
    if export in per:
        sizes, sc = per[export]["trend"]
        png = plots.magi_trends(sizes, sc, chosen_roles, f"{board}: {export}, progressive deletion")
    full_row = {
        "method": "full",
        **{f"tune_{k}": v for k, v in result.full_metrics.items()},
        **{f"eval_{k}": v for k, v in result.full_eval_metrics.items()},
        "params": "{}",
        "seconds": 0.0,
    }
    curves = [p["curve"] for p in per.values() if p["curve"] is not None]
    return MagiTables(
        {
            "magi_rankings": pd.concat([p["rankings"] for p in per.values()], ignore_index=True),
            "magi_score_trends": pd.concat([t for p in per.values() for t in p["trends"]], ignore_index=True),
            "magi_voter_penalty": pd.concat([p["penalties"] for p in per.values()], ignore_index=True),
            "magi_penalty_curve": (
                pd.concat(curves, ignore_index=True)[CURVE_COLUMNS] if curves else pd.DataFrame(columns=CURVE_COLUMNS)
            ),
            "magi_subset": pd.concat(
                [p["subset"].assign(exported=m == export) for m, p in per.items()], ignore_index=True
            ),
            "magi_search": pd.concat(
                [res.trials.assign(method=m) for m, res in result.methods.items()], ignore_index=True
            ),
            "magi_summary": pd.DataFrame([full_row, *[p["summary"] for p in per.values()]]),
            "magi_scores": pd.concat([p["scores"] for p in per.values()], ignore_index=True),
        },
        png,
    )


def subset_artifact(board: str, keys: list, split: str, setup, result, export: str, texts: pd.Series, config) -> dict:
    """The runnable magi_subset.json of the exported method: its items (with texts), scoring rule, chance,
    parameters and evaluation figures."""
    res = result.methods[export]
    sel = np.flatnonzero(res.chosen.mask)
    models = np.asarray(setup.models, dtype=object)
    return {
        "format": "tinybench-magi-subset/1",
        "leaderboard": board,
        "scenarios": keys,
        "item_split": split,
        "method": export,
        "params": {**res.params.as_dict(), **res.ranking_options},
        "seed": config.seed,
        "scoring_rule": (
            "score = mean over the scenarios listed of the mean 0/1 correctness on that scenario's items"
            if setup.balanced
            else "score = mean over the listed items of 0/1 correctness"
        )
        + " (binarized as the leaderboard's binarization table says); chance = the same rule over the "
        "items' chance",
        "chance": float(subset_scores(setup.chance[None, :], res.chosen.mask, setup.score_groups)[0]),
        "options": result.options,
        "demoted_scenarios": [str(g) for g in result.demoted],
        "not_fair_models": [str(m) for m in models[setup.not_fair]] if export == "ref_vs_voters" else [],
        "reference_model": str(models[setup.reference]),
        "metrics_eval": res.eval_metrics,
        "items": [
            {
                "item": setup.items[j],
                "scenario": str(setup.scenarios[j]),
                "subscenario": str(setup.subscenarios[j]),
                "chance": float(setup.chance[j]),
                "padded": bool(not res.chosen.base[j]),
                "text": None if pd.isna(texts.get(setup.items[j])) else str(texts.get(setup.items[j])),
            }
            for j in sel
        ],
    }


def magi_metadata(setup, result, export: str, mt: MagiTables, config, path) -> dict:
    """{asset: metadata} of magi_rankings, magi_score_trends, magi_voter_penalty, magi_subset and magi_scores."""
    t = mt.tables
    models = np.asarray(setup.models, dtype=object)
    sel = np.flatnonzero(result.methods[export].chosen.mask)
    summary = t["magi_summary"]
    spread = summary.set_index("method")[
        [
            "eval_size",
            "eval_top10_std",
            "eval_top10_std_voters",
            "eval_mean_voter_penalty",
            "eval_guesser_advantage",
            "eval_kendall_tau_nonvoters",
        ]
    ]
    spread["top10_std_ratio"] = spread["eval_top10_std"] / spread.loc["full", "eval_top10_std"]
    common = {
        "models": len(setup.models),
        "items": len(setup.items),
        "voters": len(setup.voters),
        "reference": str(models[setup.reference]),
        "not_fair_models": int(setup.not_fair.sum()),
    }
    pen, unscored = t["magi_voter_penalty"], unscored_trials(result.methods)  # unscored: pruned trials, per method
    return {
        "magi_rankings": {
            **common,
            "methods": dg.MetadataValue.json(list(result.methods)),
            "irt_seconds": round(result.irt_seconds, 2),
        },
        "magi_score_trends": {
            **(
                {"trend_chart": dg.MetadataValue.md(plots.markdown_image(mt.trend_png, "trends"))}
                if mt.trend_png is not None
                else {}
            ),
            "rows": int(len(t["magi_score_trends"])),
        },
        "magi_voter_penalty": {
            "penalty_chart": dg.MetadataValue.md(
                plots.markdown_image(plots.magi_penalty(pen, t["magi_penalty_curve"]), "penalty")
            ),
            "mean_penalty": dg.MetadataValue.md(
                pen.groupby("method")[["penalty_before", "penalty_after"]].mean().round(3).to_markdown()
            ),
        },
        "magi_subset": {
            **common,
            "top10_spread_before_after": dg.MetadataValue.md(spread.round(4).to_markdown()),
            "exported_method": export,
            "exported_items": len(sel),
            "exported_scenarios": dg.MetadataValue.json(  # a one-scenario subset spreads the top on that scenario only
                {str(k): int(v) for k, v in pd.Series(setup.scenarios[sel].astype(str)).value_counts().items()}
            ),
            "export_rule": EXPORT_RULE if config.export_method == "auto" else f"export_method: {config.export_method}",
            "artifact": dg.MetadataValue.path(str(path)),
            "pareto_points": int(t["magi_search"].pareto.sum()),
            **(
                {"unscored_trials": dg.MetadataValue.json(unscored), "unscored_note": UNSCORED_NOTE} if unscored else {}
            ),
        },
        "magi_scores": {
            "rows": int(len(t["magi_scores"])),
            "not_fair": dg.MetadataValue.json([str(m) for m in models[setup.not_fair]][:50]),
        },
    }
