"""Response matrices: models x items, with scenario/subscenario index, balance weights and binarization.

Pure numpy/pandas; knows nothing of Dagster or DuckDB.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass
class ResponseMatrix:
    """A models x items score matrix.

    Attributes
    ----------
    scores : ndarray, shape (n_models, n_items), float in [0, 1]; NaN marks a missing cell.
    models : list of str, length n_models.
    items : list of str, length n_items.
    scenarios : ndarray of str, shape (n_items,): the scenario of each item.
    subscenarios : ndarray of str, shape (n_items,): the subscenario (e.g. MMLU subject) of each item.
    """

    scores: np.ndarray
    models: list[str]
    items: list[str]
    scenarios: np.ndarray
    subscenarios: np.ndarray
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=float)
        self.scenarios = np.asarray(self.scenarios, dtype=object)
        self.subscenarios = np.asarray(self.subscenarios, dtype=object)
        m, i = self.scores.shape
        if len(self.models) != m or len(self.items) != i:
            raise ValueError(
                f"shape {self.scores.shape} does not match {len(self.models)} models x {len(self.items)} items"
            )
        if self.scenarios.shape != (i,) or self.subscenarios.shape != (i,):
            raise ValueError("scenarios and subscenarios need one entry per item")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_long(cls, df: pd.DataFrame) -> "ResponseMatrix":
        """Pivot a long table (model, scenario, subscenario, item, score) into a matrix.

        Models and items are sorted so the same rows give the same matrix; a (model, item) pair
        absent from the table is NaN. The table must hold at most one row per (model, item).
        """
        need = {"model", "scenario", "subscenario", "item", "score"}
        missing = need - set(df.columns)
        if missing:
            raise ValueError(f"long table lacks columns {sorted(missing)}")
        item_info = df[["item", "scenario", "subscenario"]].drop_duplicates("item").sort_values(["scenario", "item"])
        items = item_info["item"].tolist()
        models = sorted(df["model"].unique().tolist())
        row = pd.Index(models).get_indexer(df["model"])
        col = pd.Index(items).get_indexer(df["item"])
        scores = np.full((len(models), len(items)), np.nan)
        scores[row, col] = df["score"].to_numpy(dtype=float)
        return cls(
            scores=scores,
            models=models,
            items=items,
            scenarios=item_info["scenario"].to_numpy(dtype=object),
            subscenarios=item_info["subscenario"].to_numpy(dtype=object),
        )

    # ------------------------------------------------------------------ views
    @property
    def shape(self) -> tuple[int, int]:
        return self.scores.shape

    @property
    def mask(self) -> np.ndarray:
        """Observed cells, shape (n_models, n_items), bool."""
        return ~np.isnan(self.scores)

    def balance_weights(self) -> np.ndarray:
        """Per-item weights, shape (n_items,), as in the tinyBenchmarks tutorial.

        Within each scenario every subscenario gets the same total weight, and the weights
        average 1 over the scenario's items: w_j = N_scenario / (n_subscenarios * n_items_in_subscenario).
        A scenario's accuracy is then ``mean(w * y)`` over its items.
        """
        w = np.ones(len(self.items))
        for sc in pd.unique(self.scenarios):
            in_sc = self.scenarios == sc
            subs = pd.unique(self.subscenarios[in_sc])
            n_sc = int(in_sc.sum())
            for sub in subs:
                sel = in_sc & (self.subscenarios == sub)
                w[sel] = n_sc / (len(subs) * sel.sum())
        return w

    def accuracy(self, scores: np.ndarray | None = None) -> pd.DataFrame:
        """Balance-weighted accuracy per model and scenario, models x scenarios DataFrame in [0, 1]."""
        y = self.scores if scores is None else scores
        w = self.balance_weights()
        out = {}
        for sc in pd.unique(self.scenarios):
            sel = self.scenarios == sc
            yw = y[:, sel] * w[sel]
            ww = np.where(np.isnan(y[:, sel]), 0.0, w[sel])
            out[sc] = np.nansum(yw, axis=1) / np.maximum(ww.sum(axis=1), 1e-12)
        return pd.DataFrame(out, index=self.models)

    def subset(self, models=None, items=None) -> "ResponseMatrix":
        """Rows/columns by boolean mask or integer index."""
        mi = slice(None) if models is None else np.asarray(models)
        ii = slice(None) if items is None else np.asarray(items)
        return ResponseMatrix(
            scores=self.scores[mi][:, ii],
            models=list(np.asarray(self.models, dtype=object)[mi]),
            items=list(np.asarray(self.items, dtype=object)[ii]),
            scenarios=self.scenarios[ii],
            subscenarios=self.subscenarios[ii],
            meta=dict(self.meta),
        )

    def to_long(self) -> pd.DataFrame:
        """Back to a long table, observed cells only."""
        m_idx, i_idx = np.nonzero(self.mask)
        return pd.DataFrame(
            {
                "model": np.asarray(self.models, dtype=object)[m_idx],
                "scenario": self.scenarios[i_idx],
                "subscenario": self.subscenarios[i_idx],
                "item": np.asarray(self.items, dtype=object)[i_idx],
                "score": self.scores[m_idx, i_idx],
            }
        )


# ---------------------------------------------------------------------- binarization
def is_binary(scores: np.ndarray) -> bool:
    s = scores[~np.isnan(scores)]
    return bool(np.all((s == 0) | (s == 1)))


def choose_threshold(scores: np.ndarray, candidates: np.ndarray | None = None) -> float:
    """The tinyBenchmarks tutorial's binarization threshold.

    Picks c minimizing mean over models of |mean_j(Y_ij > c) - mean_j(Y_ij)|, so binarizing keeps
    every model's accuracy as close as possible. ``scores``: models x items in [0, 1], NaN = missing.
    """
    y = np.asarray(scores, dtype=float)
    obs = ~np.isnan(y)
    if candidates is None:
        vals = np.unique(y[obs])
        candidates = np.unique(np.concatenate([[0.0], (vals[:-1] + vals[1:]) / 2 if len(vals) > 1 else vals]))
        if len(candidates) > 401:
            candidates = np.quantile(y[obs], np.linspace(0, 1, 401))
    n_obs = np.maximum(obs.sum(axis=1), 1)
    mean_y = np.where(obs, y, 0).sum(axis=1) / n_obs
    best_c, best_err = float(candidates[0]), np.inf
    for c in candidates:
        mean_b = np.where(obs, y > c, False).sum(axis=1) / n_obs
        err = float(np.mean(np.abs(mean_b - mean_y)))
        if err < best_err - 1e-15:
            best_c, best_err = float(c), err
    return best_c


def binarize(
    scores: np.ndarray, rule: str = "auto", threshold: float | None = None
) -> tuple[np.ndarray, float | None, str]:
    """Binarize a models x items score matrix, keeping NaN for missing cells.

    rule: ``"auto"`` (0/1 data passes unchanged, else the tutorial threshold),
    ``"positive"`` (correct iff score > 0: RouterDC multiple choice), ``"threshold"`` (given c).
    Returns (binary matrix, threshold used or None, rule applied).
    """
    y = np.asarray(scores, dtype=float)
    nan = np.isnan(y)
    if rule == "auto":
        if is_binary(y):
            return y.copy(), None, "identity"
        threshold, rule = choose_threshold(y), "tutorial_threshold"
    elif rule == "positive":
        threshold = 0.0
    elif rule == "threshold":
        if threshold is None:
            raise ValueError("rule='threshold' needs a threshold")
    else:
        raise ValueError(f"unknown binarization rule {rule!r}")
    out = (y > threshold).astype(float)
    out[nan] = np.nan
    return out, float(threshold), rule


def concat_scenarios(matrices: list[ResponseMatrix]) -> ResponseMatrix:
    """Join several scenarios' matrices side by side (union of models; NaN where a model lacks a scenario)."""
    models = sorted(set().union(*[set(m.models) for m in matrices]))
    index = {name: i for i, name in enumerate(models)}
    blocks = []
    for m in matrices:
        block = np.full((len(models), len(m.items)), np.nan)
        block[[index[x] for x in m.models]] = m.scores
        blocks.append(block)
    return ResponseMatrix(
        scores=np.concatenate(blocks, axis=1),
        models=models,
        items=[i for m in matrices for i in m.items],
        scenarios=np.concatenate([m.scenarios for m in matrices]),
        subscenarios=np.concatenate([m.subscenarios for m in matrices]),
    )
