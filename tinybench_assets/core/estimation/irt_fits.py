"""IRT step of the anchor predictor: per-scenario and joint 2PL fits with D chosen on the fit models, and the
tutorial's gp-IRT inputs b (IRT validation bias) and v (item variance)."""

from __future__ import annotations

import numpy as np

from ..irt import estimate_ability, fit_irt, item_curve, select_dimension
from ..json_floats import enc, enc_list, enc_matrix
from ..parallel import run_tasks
from . import estimators as est


def select_and_fit(Y, candidates, seed, device, irt_options):
    """D chosen by :func:`select_dimension` on Y (M, I), then a 2PL at that D on all of Y: (selection, params)."""
    sel = select_dimension(Y, candidates=candidates, seed=seed, device=device, **irt_options)
    return sel, fit_irt(Y, dim=sel.best_dim, seed=seed, device=device, **irt_options)


def fit_at(Y, dim, seed, device, irt_options):
    """A 2PL at a given D on Y (M, I), no selection: (None, params)."""
    return None, fit_irt(Y, dim=int(dim), seed=seed, device=device, **irt_options)


class ItemParams:
    """Item parameters of one 2PL fit read back from an artifact: ``a`` (I, D), ``b`` (I,)."""

    def __init__(self, a, b):
        self.a, self.b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)

    @property
    def dim(self) -> int:
        return int(self.a.shape[1])


class IRTFits:
    """Step 2: a 2PL per scenario and one over all scenarios ("joint"), each at the D chosen on the fit models.

    Parameters: ``dim_candidates`` / ``joint_dim_candidates`` (D tried per scenario / jointly), ``seed``, ``device``
    (torch device of the IRT engine), ``irt_options`` (extra ``fit_irt`` options), ``dims`` ({scenario | "joint": D}:
    fit at these D without choosing; the frontier probe refits at the served fits' D).

    Fitted attributes: ``dim_selection_`` ({scenario | "joint": :class:`~..irt.select.DimensionSelection`, None
    where ``dims`` gave D}),
    ``params_`` ({scenario | "joint": fitted 2PL with ``a`` (I, D) and ``b`` (I,)}), ``b_`` ({(fit, scenario):
    the tutorial's b}, fit in {"sep", "joint"}) and ``v_`` ({scenario: mean item variance}).
    """

    def __init__(
        self,
        dim_candidates=(1, 2, 5, 10),
        joint_dim_candidates=(2, 5, 10, 15),
        seed: int = 0,
        device: str = "cpu",
        irt_options: dict | None = None,
        dims: dict | None = None,
    ):
        self.dim_candidates, self.joint_dim_candidates = tuple(dim_candidates), tuple(joint_dim_candidates)
        self.seed, self.device, self.irt_options = seed, device, dict(irt_options or {})
        self.dims = None if dims is None else dict(dims)

    @classmethod
    def from_dict(cls, blocks: dict, order: list, device: str = "cpu") -> "IRTFits":
        """A fitted step from scenario blocks ({scenario: :meth:`to_dict`'s fields, decoded}) in ``order``: each
        scenario's own fit, the joint fit's rows stacked in order, the tutorial's b and v."""
        step = cls(device=device)
        step.params_ = {s: ItemParams(blocks[s]["irt"]["sep"]["a"], blocks[s]["irt"]["sep"]["b"]) for s in order}
        joint = [blocks[s]["irt"]["joint"] for s in order]
        step.params_["joint"] = ItemParams(np.vstack([j["a"] for j in joint]), np.concatenate([j["b"] for j in joint]))
        lam = {s: blocks[s]["lambdas"] for s in order}
        step.b_ = {(fit, s): float(lam[s][f"b_{fit}"]) for s in order for fit in ("sep", "joint")}
        step.v_, step.dim_selection_ = {s: float(lam[s]["v"]) for s in order}, {}
        return step

    def to_dict(self, s: str, cols) -> dict:
        """Scenario ``s``'s item parameters as the artifact stores them (``irt``: its own fit and the joint fit's rows
        ``cols``) and the tutorial's b and v that its ``lambdas`` block carries."""
        ps, pj = self.params_[s], self.params_["joint"]
        return {
            "irt": {
                "sep": {"a": enc_matrix(ps.a), "b": enc_list(ps.b)},
                "joint": {"a": enc_matrix(pj.a[cols]), "b": enc_list(pj.b[cols])},
            },
            "lambdas": {"b_sep": enc(self.b_[("sep", s)]), "b_joint": enc(self.b_[("joint", s)]), "v": enc(self.v_[s])},
        }

    def fit(self, data, done=None) -> None:
        """Choose D and fit on ``data.Yf``; b from the validation models ``data.Yv``, v from the fit models."""
        lay, Yf = data.layout, data.Yf
        tasks, keys = [], []
        for s in lay.scenarios:
            Ys = Yf[:, lay.cols[s]]
            dims = self.dim_candidates if self.dims is None else self.dims[s]
            tasks.append((Ys[~np.isnan(Ys).all(1)], dims, self.seed, self.device, self.irt_options))
            keys.append(s)
        if len(lay.scenarios) > 1:
            dims = self.joint_dim_candidates if self.dims is None else self.dims["joint"]
            tasks.append((Yf, dims, self.seed, self.device, self.irt_options))
            keys.append("joint")
        # independent tasks: in the pool's workers when there is one, the joint fit and the largest scenarios first
        fn = select_and_fit if self.dims is None else fit_at
        done_fits = run_tasks(fn, tasks, data.pool, first=lambda k: (keys[k] != "joint", -tasks[k][0].size))
        self.dim_selection_, self.params_ = {}, {}
        for k in range(len(tasks)):  # scenarios in order, then joint
            self.dim_selection_[keys[k]], self.params_[keys[k]] = done_fits[k]
        if len(lay.scenarios) == 1:  # one scenario: the joint fit is the per-scenario fit
            self.dim_selection_["joint"] = self.dim_selection_[lay.scenarios[0]]
            self.params_["joint"] = self.params_[lay.scenarios[0]]
        self.b_ = self._bias(lay, data.Yv)
        self.v_ = {
            s: est.mean_item_variance(Yf[:, lay.cols[s]][~np.isnan(Yf[:, lay.cols[s]]).all(1)]) for s in lay.scenarios
        }

    def ability(self, key: str, Ya, rows) -> np.ndarray:
        """(M, D) abilities by MAP from answers Ya (M, k) to items ``rows`` of fit ``key`` (scenario or "joint")."""
        p = self.params_[key]
        return estimate_ability(Ya, p.a[rows], p.b[rows], device=self.device)

    def _bias(self, lay, Yv) -> dict:
        """Tutorial b: validation MAE of the IRT-predicted balance-weighted accuracy on a random half of items.

        For validation models, abilities are estimated from a seeded random half of every scenario's
        items and the predicted accuracy on the other half is compared with the actual one.
        Returns {(fit, scenario): b} with fit in {"sep", "joint"}.
        """
        rng = np.random.default_rng(self.seed + 11)
        seen = {s: np.sort(rng.permutation(lay.cols[s])[: len(lay.cols[s]) // 2]) for s in lay.scenarios}
        unseen = {s: np.setdiff1d(lay.cols[s], seen[s]) for s in lay.scenarios}
        out = {}
        allseen = np.concatenate([seen[s] for s in lay.scenarios])
        pj = self.params_["joint"]
        thj = self.ability("joint", Yv[:, allseen], allseen)
        for s in lay.scenarios:
            has = ~np.isnan(Yv[:, lay.cols[s]]).all(1)
            us = unseen[s]
            actual = est.weighted_accuracy(Yv[has][:, us], lay.w[us])
            p = self.params_[s]
            loc = np.searchsorted(lay.cols[s], seen[s])
            uloc = np.searchsorted(lay.cols[s], us)
            th = self.ability(s, Yv[has][:, seen[s]], loc)
            pred = est.irt_estimate(item_curve(th, p.a[uloc], p.b[uloc]), lay.w[us])
            out[("sep", s)] = float(np.mean(np.abs(pred - actual)))
            predj = est.irt_estimate(item_curve(thj[has], pj.a[us], pj.b[us]), lay.w[us])
            out[("joint", s)] = float(np.mean(np.abs(predj - actual)))
        return out
