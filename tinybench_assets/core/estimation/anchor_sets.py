"""Anchor step of the anchor predictor: per-scenario anchor counts, KMeans anchors per (clustering, budget), and
views of the chosen anchors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..json_floats import enc, enc_list
from . import estimators as est
from .anchors import AnchorSelector


@dataclass
class AnchorSet:
    """Anchors of one scenario for one (clustering, n).

    local : (n,) item indices within the scenario; items : (n,) column indices in the full matrix;
    weights : (n,) summing to 1.
    linear : the fit models' least-squares map from the anchor answers to the pool accuracy, {"fill" (n,): the
        answer used for an unanswered anchor (its mean on the fit models), "coef" (n,), "intercept"}; its score is
        one more feature of the learned regressors (:func:`linear_score`). None: no such feature (an artifact
        without it, or a predictor fitted without learned estimators).
    """

    scenario: str
    clustering: str
    n: int
    local: np.ndarray
    items: np.ndarray
    weights: np.ndarray
    linear: dict | None = None

    def to_dict(self, item_ids: list, texts: dict) -> dict:
        """The anchors as the artifact stores them (``item_ids``: the layout's item ids; ``texts``: {id: text})."""
        lin = self.linear
        return {
            "items": [str(item_ids[j]) for j in self.items],
            "local": [int(i) for i in self.local],
            "weights": enc_list(self.weights),
            "texts": [texts.get(item_ids[j]) for j in self.items],
            "linear": None
            if lin is None
            else {"fill": enc_list(lin["fill"]), "coef": enc_list(lin["coef"]), "intercept": enc(lin["intercept"])},
        }


def fit_linear(Ya: np.ndarray, target: np.ndarray, alpha: float = 1.0) -> dict:
    """Ridge (``alpha``, intercept unpenalized) of ``target`` (M,) on anchor answers Ya (M, n), NaN answers
    replaced by the anchor's mean: {"fill", "coef", "intercept"} for :func:`linear_score`."""
    Ya = np.asarray(Ya, dtype=float)
    seen = (~np.isnan(Ya)).sum(0)
    fill = np.where(seen > 0, np.nansum(Ya, axis=0) / np.maximum(seen, 1), 0.5)  # never answered: 0.5
    X = np.where(np.isnan(Ya), fill, Ya)
    xm, ym = X.mean(0), float(np.mean(target))
    Xc = X - xm
    coef = np.linalg.solve(Xc.T @ Xc + alpha * np.eye(X.shape[1]), Xc.T @ (np.asarray(target, dtype=float) - ym))
    return {"fill": fill, "coef": coef, "intercept": float(ym - xm @ coef)}


def linear_score(A: AnchorSet, Ya: np.ndarray) -> np.ndarray | None:
    """(M,) the anchor set's linear map applied to anchor answers Ya (M, n), rounded to 8 decimals like the
    abilities (the same answers give bit-identical features whatever the batch); None without a map."""
    lin = A.linear
    if lin is None:
        return None
    X = np.where(np.isnan(Ya), lin["fill"], Ya)
    return np.round(X @ lin["coef"] + lin["intercept"], 8)


class AnchorSets:
    """Step 3: the anchors of every (clustering, budget, scenario), chosen on the fit models.

    Parameters: ``n_values`` (budgets), ``clusterings``, ``scenario_n`` / ``large_pool_items`` / ``large_pool_scale``
    (anchor counts, :meth:`n_for`), ``n_init`` (KMeans restarts), ``seed``, ``linear`` (fit each set's linear map, a
    feature of the learned regressors).

    Fitted attributes: ``sets_`` ({(clustering, n, scenario): :class:`AnchorSet`}) and ``pool_sizes_`` ({scenario:
    items in its pool}).
    """

    def __init__(
        self,
        n_values=(10, 20, 30, 50),
        clusterings=("correctness", "forward"),
        scenario_n: dict | None = None,
        large_pool_items: int = 1000,
        large_pool_scale: float = 100 / 30,
        n_init: int = 10,
        seed: int = 0,
        linear: bool = True,
    ):
        self.n_values, self.clusterings, self.scenario_n = tuple(n_values), tuple(clusterings), dict(scenario_n or {})
        self.large_pool_items, self.large_pool_scale = large_pool_items, large_pool_scale
        self.n_init, self.seed, self.linear = n_init, seed, linear

    @classmethod
    def from_dict(cls, blocks: dict, c: str, n: int, layout) -> "AnchorSets":
        """A fitted step of one (c, n) from scenario blocks ({scenario: {"anchors": :meth:`AnchorSet.to_dict`'s fields,
        decoded}}) laid out as ``layout``."""
        step = cls(n_values=(n,), clusterings=(c,))
        step.pool_sizes_ = {s: len(layout.cols[s]) for s in layout.scenarios}
        step.sets_ = {}
        for s in layout.scenarios:
            a, start = blocks[s]["anchors"], int(layout.cols[s][0])
            local = np.asarray(a["local"], dtype=int)
            step.sets_[(c, n, s)] = AnchorSet(s, c, n, local, start + local, np.asarray(a["weights"]), a["linear"])
        return step

    def to_dict(self, c: str, n: int, s: str, item_ids: list, texts: dict) -> dict:
        """The artifact's ``anchors`` block of scenario ``s`` at (c, n)."""
        return {"anchors": self.sets_[(c, n, s)].to_dict(item_ids, texts)}

    def fit(self, data, done) -> None:
        """KMeans (or forward) anchors of every (clustering, n, scenario) from ``data.Yf`` and the IRT fits."""
        lay = data.layout
        self.pool_sizes_ = {s: len(lay.cols[s]) for s in lay.scenarios}
        self.sets_ = {
            (c, n, s): self._select(data.Yf, lay, done["irt"].params_[s], c, n, s)
            for c in self.clusterings
            for n in self.n_values
            for s in lay.scenarios
        }

    def n_for(self, s: str, n: int) -> int:
        """Anchor count of scenario ``s`` at budget ``n`` (at most the scenario's pool size).

        An explicit ``scenario_n`` entry wins; else pools of at least ``large_pool_items`` items get
        ``round(n * large_pool_scale)``; else ``n``.
        """
        pool = self.pool_sizes_[s]
        override = self.scenario_n.get(s)
        if override is not None:
            count = override[n] if isinstance(override, dict) else override[self.n_values.index(n)]
        elif pool >= self.large_pool_items:
            count = round(n * self.large_pool_scale)
        else:
            count = n
        return int(max(1, min(int(count), pool)))

    def _select(self, Yf, lay, p, c, n, s) -> AnchorSet:
        """Anchors of scenario ``s`` for (clustering ``c``, budget ``n``) from the fit models Yf (F, I_all)."""
        cols = lay.cols[s]
        Ys = Yf[:, cols]
        Ys = Ys[~np.isnan(Ys).all(1)]
        sel = AnchorSelector(n_anchors=self.n_for(s, n), clustering=c, n_init=self.n_init, random_state=self.seed)
        sel.fit(Ys, lay.w[cols], a=p.a, b=p.b)
        # the fit models' linear map from these anchors' answers to the pool accuracy: a feature of the learned
        # regressors (on family-grouped openllm splits it lowered a gradient-boosted regressor's joint MAE ~6 %)
        target = est.weighted_accuracy(Ys, lay.w[cols])
        linear = fit_linear(Ys[:, sel.anchors_], target) if self.linear else None
        return AnchorSet(s, c, n, sel.anchors_, cols[sel.anchors_], sel.weights_, linear)

    def of(self, c, n) -> dict:
        """{scenario: AnchorSet} of (c, n), in scenario order."""
        return {s: A for (cc, nn, s), A in self.sets_.items() if (cc, nn) == (c, n)}

    def columns(self, c, n, scenarios) -> np.ndarray:
        """(sum of anchor counts,) column indices of every scenario's anchors for (c, n), in ``scenarios``' order."""
        return np.concatenate([self.sets_[(c, n, s)].items for s in scenarios])

    def mask(self, Y, c, n, scenarios):
        """Copy of Y with every cell but the anchors of (c, n) set to NaN: no other answer can leak in."""
        keep = self.columns(c, n, scenarios)
        out = np.full_like(Y, np.nan)
        out[:, keep] = Y[:, keep]
        return out

    def table(self, items) -> pd.DataFrame:
        """All anchors: one row per (clustering, n, scenario, anchor) with item id and weight."""
        rows = []
        for (c, n, s), A in self.sets_.items():
            for col, wt in zip(A.items, A.weights):
                rows.append(
                    {
                        "clustering": c,
                        "n": n,
                        "scenario": s,
                        "n_anchors": len(A.items),
                        "item": items[col],
                        "item_index": int(col),
                        "weight": float(wt),
                    }
                )
        return pd.DataFrame(rows)
