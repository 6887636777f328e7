"""IRT part of the anchor predictor: per-scenario and joint 2PL fits with D chosen on the fit models, and the
tutorial's gp-IRT inputs b (IRT validation bias) and v (item variance).

:class:`IRTFitMixin` reads ``scenarios_``, ``cols_``, ``w_`` and the parameters ``dim_candidates``,
``joint_dim_candidates``, ``seed``, ``device``, ``irt_options``; it sets ``dim_selection_`` ({scenario | "joint":
:class:`~tinybench_assets.core.irt.select.DimensionSelection`}), ``irt_`` ({scenario | "joint": fitted 2PL}),
``b_`` ({(fit, scenario): float}, fit in {"sep", "joint"}) and ``v_`` ({scenario: float}).
"""
from __future__ import annotations

import numpy as np

from .. import estimators as est
from ..irt import estimate_ability, fit_irt, item_curve, select_dimension
from ..parallel import run_tasks


def select_and_fit(Y, candidates, seed, device, irt_options):
    """D chosen by :func:`select_dimension` on Y (M, I), then a 2PL at that D on all of Y: (selection, params)."""
    sel = select_dimension(Y, candidates=candidates, seed=seed, device=device, **irt_options)
    return sel, fit_irt(Y, dim=sel.best_dim, seed=seed, device=device, **irt_options)


class IRTFitMixin:
    """Per-scenario and joint IRT fits, D selection, and the tutorial's b and v."""

    def _fit_irt_models(self, Yf, pool=None) -> None:
        """Per scenario and jointly over all scenarios, choose D and fit a 2PL on the fit models Yf (F, I_all).

        The fits are independent tasks: with a ``pool`` (:func:`~tinybench_assets.core.parallel.worker_pool`)
        they run in its worker processes, the joint fit and the largest scenarios first; the same seeds give
        the same fits either way."""
        tasks, keys = [], []
        for s in self.scenarios_:
            Ys = Yf[:, self.cols_[s]]
            tasks.append((Ys[~np.isnan(Ys).all(1)], self.dim_candidates, self.seed, self.device, self.irt_options))
            keys.append(s)
        if len(self.scenarios_) > 1:
            tasks.append((Yf, self.joint_dim_candidates, self.seed, self.device, self.irt_options))
            keys.append("joint")
        done = run_tasks(select_and_fit, tasks, pool, first=lambda k: (keys[k] != "joint", -tasks[k][0].size))
        self.dim_selection_, self.irt_ = {}, {}
        for k in range(len(tasks)):  # scenarios in order, then joint
            self.dim_selection_[keys[k]], self.irt_[keys[k]] = done[k]
        if len(self.scenarios_) == 1:  # one scenario: the joint fit is the per-scenario fit
            self.dim_selection_["joint"] = self.dim_selection_[self.scenarios_[0]]
            self.irt_["joint"] = self.irt_[self.scenarios_[0]]

    def _fit_bias_variance(self, Yf, Yv) -> None:
        """The tutorial's b (IRT validation bias, from Yv (V, I_all)) and v (item variance, from Yf (F, I_all))."""
        self.b_, self.v_ = self._irt_bias(Yv), {}
        for s in self.scenarios_:
            self.v_[s] = est.mean_item_variance(Yf[:, self.cols_[s]][~np.isnan(Yf[:, self.cols_[s]]).all(1)])

    def _irt_bias(self, Yv) -> dict:
        """Tutorial b: validation MAE of the IRT-predicted balance-weighted accuracy on a random half of items.

        For validation models, abilities are estimated from a seeded random half of every scenario's
        items and the predicted accuracy on the other half is compared with the actual one.
        Returns {(fit, scenario): b} with fit in {"sep", "joint"}.
        """
        rng = np.random.default_rng(self.seed + 11)
        seen = {s: np.sort(rng.permutation(self.cols_[s])[: len(self.cols_[s]) // 2]) for s in self.scenarios_}
        unseen = {s: np.setdiff1d(self.cols_[s], seen[s]) for s in self.scenarios_}
        out = {}
        allseen = np.concatenate([seen[s] for s in self.scenarios_])
        pj = self.irt_["joint"]
        thj = estimate_ability(Yv[:, allseen], pj.a[allseen], pj.b[allseen], device=self.device)
        for s in self.scenarios_:
            has = ~np.isnan(Yv[:, self.cols_[s]]).all(1)
            us = unseen[s]
            actual = est.weighted_accuracy(Yv[has][:, us], self.w_[us])
            p = self.irt_[s]
            loc = np.searchsorted(self.cols_[s], seen[s])
            uloc = np.searchsorted(self.cols_[s], us)
            th = estimate_ability(Yv[has][:, seen[s]], p.a[loc], p.b[loc], device=self.device)
            pred = est.irt_estimate(item_curve(th, p.a[uloc], p.b[uloc]), self.w_[us])
            out[("sep", s)] = float(np.mean(np.abs(pred - actual)))
            predj = est.irt_estimate(item_curve(thj[has], pj.a[us], pj.b[us]), self.w_[us])
            out[("joint", s)] = float(np.mean(np.abs(predj - actual)))
        return out
