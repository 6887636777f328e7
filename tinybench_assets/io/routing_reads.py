"""Reads of the router assets' stored inputs, shared by the scenario routers, the leaderboard router and the
benchmarks: a partition's questions and their split, its stored embeddings, IRT fit, 0/1 answers and costs, and a
leaderboard's routable scenarios stacked for mixed traffic.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tinybench_assets.core.routing.split import MIN_SELF_SPLIT_QUESTIONS, question_split
from tinybench_assets.io.drop_types import split_partition_key
from tinybench_assets.io.embeddings import load_cached
from tinybench_assets.io.store import Store, load_matrix


def partition_questions(db: Store, key: str) -> pd.DataFrame:
    """The partition's items in matrix order with split, text (NaN where none landed) and subscenario; where no split
    landed and there are enough questions with text, the split of core/routing/split.py (``split_source`` says which)."""
    q = db.matrix_questions(key)
    q["subscenario"] = db.matrix_items(key)["subscenario"].to_numpy() if len(q) else []
    q["split_source"] = "landed"
    has_text = q["text"].notna()
    if q["split"].isna().all() and has_text.sum() >= MIN_SELF_SPLIT_QUESTIONS:
        q.loc[has_text, "split"] = question_split(q.loc[has_text, "item"], q.loc[has_text, "subscenario"])
        q["split_source"] = "tinybench"
    return q


def partition_rows(db: Store, table: str, key: str, columns: str = "*") -> pd.DataFrame:
    """A result table's rows for one partition; empty when the table does not exist yet (no partition has written it)."""
    return db.result_rows(table, "partition_key = ?", [key], columns)


def load_embeddings(db: Store, key: str) -> tuple[pd.DataFrame, np.ndarray]:
    table = partition_rows(db, "question_embeddings", key, "item, split, text_key, encoder")
    if table.empty:
        return table, np.zeros((0, 0), dtype=np.float32)
    return table, load_cached(db, str(table["encoder"].iloc[0]), table["text_key"].tolist())


def irt_fit(db: Store, key: str) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The partition's stored IRT fit (items, models), or None when irt_model stored none (too small: its note)."""
    items, models = db.irt_items(key), db.irt_models(key)
    return None if items.empty or models.empty else (items, models)


def routing_data(db: Store, key: str):
    """Embeddings and 0/1 correctness (questions x models) of the partition's train and test questions."""
    emb, E = load_embeddings(db, key)
    matrix = load_matrix(db, key, binarized=True)
    col = {it: j for j, it in enumerate(matrix.items)}
    keep = emb["item"].isin(col).to_numpy()
    emb, E = emb[keep].reset_index(drop=True), E[keep]
    Y = matrix.scores[:, [col[i] for i in emb["item"]]].T  # (questions, models)
    test = (emb["split"] == "test").to_numpy()
    return emb, E, Y, list(matrix.models), test


def question_groups(db: Store, key: str, items) -> np.ndarray:
    """Each question's subscenario (the task families' groups), in ``items`` order."""
    sub = db.matrix_items(key).set_index("item")["subscenario"]
    return sub.reindex(list(items)).fillna("").astype(str).to_numpy()


def cost_matrix(db: Store, key: str, items, models) -> np.ndarray | None:
    """Per-(question, model) costs when the drop carried them for every test question, else None."""
    costs = db.costs(key)
    if costs.empty:
        return None
    C = costs.pivot_table(index="item", columns="model", values="cost", aggfunc="last").reindex(
        index=items, columns=models
    )
    return None if C.isna().any().any() else C.to_numpy(dtype=float)


def question_texts(db: Store, key: str, items) -> list[str]:
    """The landed texts of a scenario partition's ``items``, in their order ("" where none landed)."""
    board, scenario = split_partition_key(key)
    text = db.item_texts(board, scenario).drop_duplicates("item").set_index("item")["text"]
    return text.reindex(list(items)).fillna("").astype(str).tolist()


def board_routing_data(db: Store, board: str):
    """Every embedded scenario of a leaderboard stacked: (E, Y over the candidate models, models, scenario per
    question, test mask, the encoder the questions were embedded with, {model left out: why}, [scenarios], texts).
    Candidates answered every scenario. Where the scenarios' encoders differ (question_embeddings chooses per
    scenario) E is None and the encoder ``mixed: <ids>``: the caller embeds ``texts`` in one space."""
    parts, texts = [], []
    for key in db.partition_keys(board):
        if not partition_rows(db, "question_embeddings", key, "item").empty:
            emb, E, Y, models, test = routing_data(db, key)
            scenario = split_partition_key(key)[1]
            parts.append((scenario, emb, E, Y, models, test))
            texts.extend(question_texts(db, key, emb["item"]))
    scenarios = [p[0] for p in parts]
    everywhere = set.intersection(*[set(p[4]) for p in parts]) if parts else set()
    models = [m for m in dict.fromkeys(m for p in parts for m in p[4]) if m in everywhere]
    left_out = {
        m: f"answered {sum(m in p[4] for p in parts)} of {len(parts)} routable scenarios"
        for m in dict.fromkeys(m for p in parts for m in p[4])
        if m not in everywhere
    }
    if not parts or not models:
        return None, None, models, None, None, None, left_out, scenarios, texts
    Y = np.vstack([p[3][:, [p[4].index(m) for m in models]] for p in parts])
    encoders = list(dict.fromkeys(str(p[1]["encoder"].iloc[0]) for p in parts))
    return (
        np.vstack([p[2] for p in parts]) if len(encoders) == 1 else None,
        Y,
        models,
        np.concatenate([[p[0]] * len(p[3]) for p in parts]),
        np.concatenate([p[5] for p in parts]),
        encoders[0] if len(encoders) == 1 else "mixed: " + ", ".join(encoders),
        left_out,
        scenarios,
        texts,
    )
