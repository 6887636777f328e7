"""Router assets per scenario partition with question text and a train/test item split (RouterDC):
question embeddings -> KNN-imputed item parameters -> p-IRT predictions -> routers and router accuracy.

The IRT model (``irt_model``) is fitted on the training questions of a landed split; every router choice is made by
cross-validation on training questions; test questions only report. Where no split landed, the questions are split
here (core/routing/split.py: seeded, stratified by subscenario; ``question_embeddings`` records it, and every asset
after it reads the split from there); the tutorial's KNN-imputed p-IRT then sits out, since ``irt_model`` saw every
question. Partitions without question text, or with too few questions to split, are materialized with a ``skipped``
note.
"""

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets.core.routing.knn import imputed_test_params
from tinybench_assets.core.routing.routers import pirt_table
from tinybench_assets.core.routing.split import MIN_SELF_SPLIT_QUESTIONS
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.encoder_pick import pick_encoder
from tinybench_assets.defs.partitions import scenario_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, EncoderResource, StoreResource
from tinybench_assets.defs.settings import ROUTER_GROUP as GROUP
from tinybench_assets.io import plots
from tinybench_assets.io.embeddings import bf16_probe_timings, embed_cached, text_key
from tinybench_assets.io.routing_reads import irt_fit, load_embeddings, partition_questions, partition_rows
from tinybench_assets.orchestration.versions import code_version
from tinybench_assets.progress import Stopwatch

CODE_VERSION = code_version("router")


class KNNConfig(dg.Config):
    """The tutorial's imputation: each test question's a and b from its k nearest training questions."""

    k: int = 20
    weighting: str = "uniform"  # uniform (the tutorial's mean) | similarity | softmax


def routable(q: pd.DataFrame) -> str | None:
    """Why a partition cannot be routed, or None."""
    if q.empty:
        return "no items (materialize response_matrix first)"
    if q["text"].isna().all():
        return "no question text landed for this scenario"
    if q["split"].isna().all():
        return (
            f"no train/test split of questions landed (items.split) and only {int(q['text'].notna().sum())} "
            f"questions with text: tinybench splits a scenario itself from {MIN_SELF_SPLIT_QUESTIONS} questions"
        )
    if not (q["split"] == "test").any() or not (q["split"] != "test").any():
        return "no train/test split of questions (items.split)"
    return None


def _skip(reason: str) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"skipped": reason})


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=scenario_partitions,
    deps=["binarized_responses", "static_encoder"],
    **card(
        "Question embeddings",
        "Sentence embeddings of every question of a scenario with text and a test split, offline: the packaged "
        "all-MiniLM-L6-v2 or the static encoder distilled from it (static_encoder), chosen per scenario on training "
        "questions (MiniLM for few questions or where a kNN check on a training sample shows it pays; "
        "`encoder_rule` says why). Cached in the store by hash of (encoder, text): a re-run or a new drop embeds "
        "only new texts. The run's log shows texts done / to do.",
        kinds=("python", "torch", "duckdb"),
    ),
)
def question_embeddings(
    context: dg.AssetExecutionContext, store: StoreResource, encoder: EncoderResource
) -> dg.MaterializeResult:
    key, db, watch = context.partition_key, store.get(), Stopwatch()
    with watch.part("read questions"):
        q = partition_questions(db, key)
    if reason := routable(q):
        return _skip(reason)
    q = q[q["text"].notna()].reset_index(drop=True)
    q["split"] = q["split"].fillna("train")
    t_pick = watch.clock()
    pick = pick_encoder(db, key, q, encoder, log=context.log.info)
    watch.add("encoder choice (training sample)", watch.clock() - t_pick)
    enc = pick.encoder
    t_embed = watch.clock()
    E, st = embed_cached(db, enc, q["text"].tolist(), log=context.log.info)
    watch.add("encode", st["seconds"])
    watch.add("embedding cache lookup and write", watch.clock() - t_embed - st["seconds"])
    table = pd.DataFrame(
        {
            "item": q["item"],
            "split": q["split"],
            "text_key": [text_key(enc.cache_id, t) for t in q["text"]],
            "encoder": enc.encoder_id,
        }
    )
    with watch.part("store table"):
        db.replace_partition({"question_embeddings": table}, key)
    context.log.info(
        f"{key}: {st['texts']} texts with {enc.encoder_id}, {st['embedded']} embedded now, {st['cached']} from the cache"
    )
    return dg.MaterializeResult(
        metadata={
            **watch.metadata(),
            "questions": st["texts"],
            "train": int((table["split"] != "test").sum()),
            "test": int((table["split"] == "test").sum()),
            "split": "landed with the questions"
            if q["split_source"].iloc[0] == "landed"
            else "none landed: tinybench's own (seeded, stratified by subscenario, 20 % test)",
            "embedded_now": st["embedded"] + pick.embedded,
            "from_cache": st["cached"],
            "encode_seconds": round(st["seconds"] + pick.seconds, 2),
            "texts_per_s": dg.MetadataValue.float(float(st["texts_per_s"]))
            if st["embedded"]
            else dg.MetadataValue.text("n/a (all cached)"),
            "encoder": enc.encoder_id,
            **pick.metadata(),
            "precision": enc.resolved_precision(),
            "dim": int(E.shape[1]),
            "threads": enc.num_threads,
            **_probe_metadata(enc),
        }
    )


def _probe_metadata(enc) -> dict:
    """The bfloat16 probe's timings behind ``precision`` auto (empty when it did not run)."""
    t = bf16_probe_timings(enc.num_threads) if enc.precision == "auto" else None
    return {} if t is None else {"bf16_probe_ms": f"float32 {t[0] * 1e3:.1f} / bfloat16 {t[1] * 1e3:.1f}"}


NO_FIT = "no IRT fit stored for this partition (irt_model's note says why: too small, or not materialized yet)"


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=scenario_partitions,
    deps=["question_embeddings", "irt_model"],
    **card(
        "KNN-imputed item parameters",
        "Discrimination a and difficulty b of every TEST question, imputed as the "
        "(weighted) mean over its k most cosine-similar TRAINING questions' IRT parameters; stored with the "
        "neighbours' ids and similarities. Plot: fitted vs imputed difficulty and discrimination.",
        kinds=("python", "scikit-learn", "duckdb"),
    ),
)
def knn_item_params(context: dg.AssetExecutionContext, config: KNNConfig, store: StoreResource) -> dg.MaterializeResult:
    key, db = context.partition_key, store.get()
    emb, E = load_embeddings(db, key)
    if emb.empty or not (emb["split"] == "test").any():
        return _skip("no test questions embedded (see question_embeddings)")
    if (fit := irt_fit(db, key)) is None:
        return _skip(NO_FIT)
    items, _ = fit
    if items["item"].isin(emb.loc[emb["split"] == "test", "item"]).any():
        return _skip(
            "irt_model's fit saw the test questions (no split landed; the router assets split the questions "
            "themselves): the tutorial's imputation would leak them. The routers fit their own IRT per fold."
        )
    out, a_tr, b_tr, imp = imputed_test_params(items, emb, E, config.k, config.weighting)
    db.replace_partition({"knn_item_params": out}, key)
    png = plots.difficulty_vs_discrimination(
        np.concatenate([b_tr, imp.b]),
        np.vstack([a_tr, imp.a]),
        np.array(["train (fitted)"] * len(b_tr) + ["test (imputed)"] * len(imp.b)),
        title=f"{key}: fitted vs KNN-imputed (k={config.k})",
    )
    return dg.MaterializeResult(
        metadata={
            "test_questions": len(out),
            "train_questions": len(b_tr),
            "k": config.k,
            "weighting": config.weighting,
            "irt_dim": int(a_tr.shape[1]),
            "mean_top1_similarity": float(imp.sim[:, 0].mean()),
            "mean_kth_similarity": float(imp.sim[:, -1].mean()),
            "b_sd_fitted_vs_imputed": f"{np.std(b_tr):.3f} vs {np.std(imp.b):.3f}",
            "fitted_vs_imputed": dg.MetadataValue.md(plots.markdown_image(png, "fitted vs imputed parameters")),
        }
    )


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=scenario_partitions,
    deps=["knn_item_params"],
    **card(
        "p-IRT correctness predictions",
        "P(correct) = sigmoid(a_q . theta_m - b_q) for every (model, test "
        "question) from the IRT abilities and the KNN-imputed a, b; the tutorial's router routes each question "
        "to the argmax.",
    ),
)
def pirt_predictions(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    key, db = context.partition_key, store.get()
    imp = partition_rows(db, "knn_item_params", key, "item, b, a")
    if imp.empty:
        return _skip("no imputed test parameters (see knn_item_params)")
    if (fit := irt_fit(db, key)) is None:
        return _skip(NO_FIT)
    _, models = fit
    long, P = pirt_table(imp, models)
    db.replace_partition({"pirt_predictions": long}, key)
    mean_p = dict(zip(models["model"], np.round(P.mean(axis=0), 4)))
    return dg.MaterializeResult(
        metadata={
            "rows": len(long),
            "test_questions": len(imp),
            "models": len(models),
            "mean_p_by_model": dg.MetadataValue.json({k: float(v) for k, v in mean_p.items()}),
        }
    )


scenario_assets = [question_embeddings, knn_item_params, pirt_predictions]
