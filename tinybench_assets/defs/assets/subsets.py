"""MAGI subset assets per leaderboard: item rankings, score trends, voter penalty, the chosen subset
(with its Pareto front and a runnable export), every model's subset score, and stratified parallel forms.

What they write is computed in defs/magi_report.py, with the per-leaderboard defaults (``BOARD_DEFAULTS``): openllm
pools all its scenario partitions; routerdc uses the mmlu partition's test questions. The core is
tinybench_assets.core.subsets (docs/magi.md).
"""

import json
import time
from pathlib import Path

import dagster as dg
from pydantic import Field

from tinybench_assets import paths
from tinybench_assets.atomic import atomic_write
from tinybench_assets.core.subsets import DEFAULTS, chance_per_item, prepare, read_aggregate
from tinybench_assets.core.subsets.forms import forms_tables, matrix_forms
from tinybench_assets.core.subsets.optimizer import UNSCORED_NOTE
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.magi_report import magi_inputs, magi_metadata, magi_tables, search, subset_artifact
from tinybench_assets.defs.partitions import leaderboard_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, StoreResource, env_torch_threads
from tinybench_assets.orchestration.versions import code_version

GROUP = "magi"
CODE_VERSION = code_version("magi")
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
    methods: list[str] = [
        "mean_score",
        "ref_vs_voters",
        "irt",
        "irt_discrimination",
        "irt_information",
        "top_discrimination",
    ]
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


MAGI_TITLES = ("MAGI item rankings", "MAGI score trends", "MAGI voter penalty", "MAGI subset", "MAGI subset scores")


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            name,
            group_name=GROUP,
            partitions_def=leaderboard_partitions,
            deps=[dg.AssetDep("binarized_responses", partition_mapping=dg.AllPartitionMapping())]
            if name == "magi_rankings"
            else ["magi_rankings"],
            code_version=CODE_VERSION,
            **card(title, desc, kinds=("python", "optuna", "duckdb")),
        )
        for name, title, desc in zip(
            MAGI_ASSETS,
            MAGI_TITLES,
            (
                "Item rankings per method (mean voter score, reference-vs-voters, IRT difficulty / discrimination / "
                "information at the top models' abilities along the full-score direction, covariance with the full "
                "score among the top tune models): keep score and rank per item.",
                "Progressive deletion: every chosen model's score (reference, voters, top-10 non-voters) as items are deleted.",
                "Leave-one-out voter penalty per voter before/after offset padding, and mean penalty vs number of voters.",
                "The chosen subset per method (items, ranking scores, parameters, Pareto front of the seeded search) and "
                "the runnable export data/artifacts/<leaderboard>/magi_subset.json.",
                "Every model's score on each method's subset beside its pool and full score, with the not-fair flag.",
            ),
        )
    ],
    pool=DUCKDB_POOL,
    can_subset=False,
)
def magi_subset_assets(context: dg.AssetExecutionContext, config: MagiConfig, store: StoreResource):
    import torch  # loads when the asset runs

    torch.set_num_threads(max(1, config.torch_threads))
    db, board, t0 = store.get(), context.partition_key, time.perf_counter()
    inputs, why = magi_inputs(db, board, config.scenarios, config.item_split)
    if inputs is None:
        for name in MAGI_ASSETS:
            yield dg.MaterializeResult(asset_key=name, metadata={"skipped": why})
        return
    matrix, full, texts, keys, split = inputs
    setup = prepare(
        matrix.scores,
        matrix.models,
        matrix.items,
        matrix.scenarios,
        matrix.subscenarios,
        chance_per_item(matrix.scenarios),
        full,
        aggregate=read_aggregate(paths.aggregate_csv(board, config.aggregate_csv)),
        n_voters=config.n_voters,
        per_family=config.per_family,
        eval_fraction=config.eval_fraction,
        reference=config.reference or None,
        guesser_z=config.guesser_z,
        seed=config.seed,
        balanced=config.balanced,
    )
    result, export, _ = search(setup, config)
    mt = magi_tables(setup, result, export, config, board)
    db.replace_partition(mt.tables, board, column="leaderboard")
    text = json.dumps(
        subset_artifact(board, keys, split, setup, result, export, texts, config), indent=1, default=float
    )
    path = atomic_write(Path(paths.artifacts_dir()) / board / "magi_subset.json", lambda tmp: tmp.write_text(text))
    meta = magi_metadata(setup, result, export, mt, config, path)
    meta["magi_subset"]["seconds"] = round(time.perf_counter() - t0, 1)
    if "unscored_trials" in meta["magi_subset"]:
        context.log.warning(f"{board}: {meta['magi_subset']['unscored_trials'].data} {UNSCORED_NOTE}")
    for name in MAGI_ASSETS:
        yield dg.MaterializeResult(asset_key=name, metadata=meta[name])


@dg.asset(
    name="parallel_forms",
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=leaderboard_partitions,
    deps=[dg.AssetDep("binarized_responses", partition_mapping=dg.AllPartitionMapping())],
    **card(
        "Parallel test forms",
        "Two non-overlapping stratified parallel forms (subscenario x difficulty bucket) "
        "with counts, proportions, L1 distances to each other and to the pool, and the A-vs-B correlation of "
        "every model's score.",
    ),
)
def parallel_forms_asset(
    context: dg.AssetExecutionContext, config: FormsConfig, store: StoreResource
) -> dg.MaterializeResult:
    db = store.get()
    board = context.partition_key
    inputs, why = magi_inputs(db, board, config.scenarios, config.item_split)
    if inputs is None:
        return dg.MaterializeResult(metadata={"skipped": why})
    matrix, _, _, keys, split = inputs
    if config.difficulty == "irt":
        import torch  # loads when an IRT difficulty is asked for

        torch.set_num_threads(max(1, env_torch_threads(2)))
    try:
        forms = matrix_forms(
            matrix, config.difficulty, config.form_size, config.n_buckets, config.exclude_subscenarios, config.seed
        )
    except ValueError as e:
        raise dg.Failure(str(e)) from e
    db.replace_partition(forms_tables(forms, config.form_size), board, column="leaderboard")
    return dg.MaterializeResult(
        metadata={
            "scenarios": dg.MetadataValue.json(keys),
            "item_split": split,
            "form_size": len(forms.form_a),
            "requested_size": config.form_size,
            "overlap": len(set(forms.form_a) & set(forms.form_b)),
            "l1_distances": dg.MetadataValue.json({k: round(v, 4) for k, v in forms.distances.items()}),
            "a_vs_b_correlation": dg.MetadataValue.json(forms.correlation),
            "strata": dg.MetadataValue.md(forms.summary.head(60).round(3).to_markdown(index=False)),
        }
    )


leaderboard_assets = [magi_subset_assets, parallel_forms_asset]
