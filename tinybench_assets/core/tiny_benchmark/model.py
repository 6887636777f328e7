"""The artifact as a predictor: :class:`ArtifactModel` rebuilds the predictor's own steps from the JSON, each by its
``from_dict`` from the part its ``to_dict`` wrote (layout, IRT fits, anchor sets, lambdas, stacks, calibrators, served
intervals; every field checked by :mod:`.blocks`), and, when loaded, the learned regressors as
:class:`~.trees.TreeEnsemble` and the answer bank from the tree file. Estimates from an artifact therefore walk the
predictor's path (:mod:`..estimation.chain`), not a copy of it."""

from __future__ import annotations

import numpy as np

from ..estimation.anchor_sets import AnchorSets
from ..estimation.bank import AnswerBank
from ..estimation.base_estimates import feature_width
from ..estimation.calibrators import Calibrators
from ..estimation.chain import calibrated, estimates
from ..estimation.frontier import Frontier
from ..estimation.irt_fits import IRTFits
from ..estimation.lambdas import Lambdas
from ..estimation.learned import LearnedRegressors
from ..estimation.served_intervals import ServedIntervals
from ..estimation.shrinkage import SHRINKAGE, ShrinkagePrior
from ..estimation.stacks import Stacks
from ..estimation.training import Layout
from .blocks import ScenarioBlocks, json_names
from .format import LEARNED_BASE, TREES_FILE
from .schema import Reader
from .trees import bank_tables

KINDS = {"sep": "gbm", "joint": "gbm_joint"}


class _Shrinkage:
    """A small board's shrinkage prior as a step of the chain: adds shrunk and shrunk_joint of the anchor means."""

    def __init__(self, prior: ShrinkagePrior):
        self.prior = prior

    def transform(self, raw, full, scenarios) -> None:
        est = self.prior.estimate(np.column_stack([raw[(s, "anchor")] for s in scenarios]))
        for j, s in enumerate(scenarios):
            for e in SHRINKAGE:
                full[(s, e)] = est[e][:, j]


def _bank_info(r: Reader, info: dict, scenarios) -> dict | None:
    """``$.learned.bank`` checked: {models: F, eps: {scenario: eps in (0, 0.5)}}, or None (no answer bank)."""
    if info.get("bank") is None:
        return None
    b, q = r.obj(info, "bank", "$.learned"), "$.learned.bank"
    eps = r.obj(b, "eps", q)
    out = {
        "models": r.integer(b, "models", q, 1),
        "eps": {s: r.number(eps, s, f"{q}.eps", finite=True) for s in scenarios},
    }
    if not all(0 < e < 0.5 for e in out["eps"].values()):
        r.fail(f"{q}.eps", "expected numbers in (0, 0.5)")
    if b.get("fill") is not None:  # fill's ridge strength per scenario (estimation/fill.py)
        lam = r.obj(b, "fill", q)
        out["fill"] = {s: r.number(lam, s, f"{q}.fill", finite=True) for s in scenarios}
        if not all(x > 0 for x in out["fill"].values()):
            r.fail(f"{q}.fill", "expected positive numbers")
    r.text(info, "file", "$.learned", (TREES_FILE,))
    return out


def _bank(model, arrays: dict | None, source) -> dict:
    """{(c, n): bank} (the AnswerBank step's layout) from the tree file's arrays, checked by :func:`.trees.bank_tables`
    against the JSON's ``learned.bank``; {} when the artifact has no answer bank."""
    info = model.bank_info
    if info is None:
        return {}
    A = sum(len(A.items) for A in model.anchor_sets.values())
    answers, values = bank_tables(arrays or {}, info["models"], A, len(model.scenarios), source or "the tree file")
    fill = {"fill": dict(info["fill"])} if "fill" in info else {}
    return {(model.c, model.n): {"answers": answers, "values": values, "eps": dict(info["eps"]), **fill}}


def read_learned(self, art: dict) -> None:
    """The ``learned`` entry of ``art`` into ArtifactModel ``self``: the regressors' keys and feature widths, the
    answer bank's size and eps; estimators listed without what they need fail."""
    r = self.r
    info = r.obj(art, "learned", "$")
    self.fit_learned = r.key(info, "fit_learned", "$.learned") is True
    models = r.key(info, "models", "$.learned")
    if not isinstance(models, list):
        r.fail("$.learned.models", "expected a list")
    sets, irt = self.anchor_sets, self.steps["irt"].params_
    self.model_keys, self.n_features = [], []
    for i, m in enumerate(models):
        q = f"$.learned.models[{i}]"
        s = r.text(m, "scenario", q, self.scenarios)
        kind = r.text(m, "kind", q, tuple(KINDS))
        key = (self.c, self.n, s, kind, r.text(m, "target", q, ("t1", "t2")))
        want = feature_width(sets, irt, s, kind)
        r.integer(m, "n_features", q, want, want)
        if key in self.model_keys:
            r.fail(q, "the same regressor is listed twice")
        self.model_keys.append(key)
        self.n_features.append(want)
    if models:
        r.text(info, "file", "$.learned", (TREES_FILE,))
        sha = r.key(info, "sha256", "$.learned")  # null in a fresh export's dict, until it is saved
        if sha is not None and not (isinstance(sha, str) and len(sha) == 64):
            r.fail("$.learned.sha256", "expected a hex sha256 or null")
    self.bank_info = _bank_info(r, info, self.scenarios)  # the answer bank's size and eps (arrays: tree file)
    for s in self.scenarios:
        bad = [e for e in self.estimators[s] if e not in self.learned_names(s) and e not in self.json_names(s)]
        if bad:
            r.fail(f"$.scenarios.{s}.estimators", f"{bad} need learned regressors that $.learned.models lacks")


def read_shrinkage(r: Reader, art: dict, order: list) -> ShrinkagePrior | None:
    """A small board's shrinkage prior (``$.shrinkage``: scenarios, mean, cov, noise), which the estimators shrunk and
    shrunk_joint need; None when absent."""
    d = art.get("shrinkage")
    if d is None:
        return None
    d = r.obj(art, "shrinkage", "$")
    names = r.strings(d, "scenarios", "$.shrinkage", len(order))
    if names != list(order):
        r.fail("$.shrinkage.scenarios", "expected the scenario_order")
    S = len(order)
    prior = ShrinkagePrior(
        names,
        r.vector(d, "mean", "$.shrinkage", S, finite=True),
        r.matrix(d, "cov", "$.shrinkage", S, S),
        r.vector(d, "noise", "$.shrinkage", S, finite=True),
    )
    if not np.isfinite(prior.cov).all() or (prior.noise <= 0).any() or (np.diag(prior.cov) <= 0).any():
        r.fail("$.shrinkage", "expected a finite covariance with a positive diagonal and positive noise variances")
    return prior


class ArtifactModel:
    """The predictor's steps for the artifact's (clustering, n), from the JSON (and the tree file, see
    :meth:`with_trees`). Items are laid out scenario after scenario in ``scenario_order`` (each scenario's pool in its
    ``items`` order), so the layout, the anchor sets and the joint IRT rows index one matrix.

    Attributes: ``c``, ``n``, ``scenarios``, ``layout`` (:class:`~..estimation.training.Layout`), ``steps`` (the
    chain's steps, :mod:`..estimation.chain`), ``anchor_sets`` ({scenario: AnchorSet}), ``estimators`` ({scenario:
    names listed}), ``trees`` (the
    attached regressors, None before :meth:`with_trees`).
    """

    def __init__(self, art: dict, where: str = "artifact"):
        r = self.r = Reader(where)
        self.c = r.text(art, "clustering", "$")
        self.n = r.integer(art, "n", "$", 1)
        if "alpha" in art and not 0 < r.number(art, "alpha", "$", finite=True) < 1:
            r.fail("$.alpha", "expected a number in (0, 1)")
        order = r.strings(art, "scenario_order", "$")
        if not order or len(set(order)) != len(order) or "joint" in order:
            r.fail("$.scenario_order", 'expected distinct scenario names ("joint" names the joint fit)')
        self.scenarios = order
        self.shrinkage = read_shrinkage(r, art, order)
        blocks = ScenarioBlocks(r, art, order, self.shrinkage)
        self.stacks_all, self.estimators, self._blocks = blocks.stacks, blocks.estimators, blocks.blocks
        d, c, n = blocks.blocks, self.c, self.n
        self.layout = Layout.from_dict(d, order)
        self.steps = {  # each step from its part of the blocks (the to_dict of the predictor's own steps)
            "irt": IRTFits.from_dict(d, order),
            "anchors": AnchorSets.from_dict(d, c, n, self.layout),
            "learned": LearnedRegressors.from_models({}, enabled=False),
            "bank": AnswerBank.from_banks({}),
            "lambdas": Lambdas.from_dict(d, c, n),
            "stacks": Stacks.from_dict(d, c, n, keep=lambda s, name: name in self.json_names(s)),
            "calibrators": Calibrators.from_dict(d, c, n),
            "served": ServedIntervals.from_dict(d, n),
            "frontier": Frontier.from_dict(d, n),
        }
        self.anchor_sets = {s: self.steps["anchors"].sets_[(c, n, s)] for s in order}
        if self.shrinkage is not None:
            self.steps["shrinkage"] = _Shrinkage(self.shrinkage)
        read_learned(self, art)
        self.trees = None

    # ------------------------------------------------------------------ what can be computed
    def _gbm_available(self, s: str, name: str) -> bool:
        if name == "bank_joint":
            return self.bank_info is not None
        if name == "fill":
            return self.bank_info is not None and "fill" in self.bank_info
        kind = "sep" if name == "gbm" else "joint"
        has_t1 = (self.c, self.n, s, kind, "t1") in self.model_keys
        return has_t1 or (self.fit_learned and len(self.anchor_sets[s].local) >= len(self.layout.cols[s]))

    def json_names(self, s: str) -> set[str]:
        """Estimators of scenario ``s`` computed from the JSON alone."""
        return json_names(self.stacks_all[s], self.shrinkage is not None)

    def learned_names(self, s: str) -> set[str]:
        """Estimators of scenario ``s`` computed with the tree file."""
        base = {*self.json_names(s), *(g for g in LEARNED_BASE if self._gbm_available(s, g))}
        return base | {k for k, st in self.stacks_all[s].items() if set(st["members"]) <= base}

    def with_trees(self, ensembles: list, arrays: dict | None = None, source=None) -> "ArtifactModel":
        """Attach the learned regressors (a TreeEnsemble per ``model_keys`` entry) and the answer bank, if any."""
        if len(ensembles) != len(self.model_keys):
            self.r.fail(
                "$.learned.models", f"{len(self.model_keys)} regressors listed, the tree file holds {len(ensembles)}"
            )
        self.steps["bank"] = AnswerBank.from_banks(_bank(self, arrays, source))
        self.steps["learned"] = LearnedRegressors.from_models(dict(zip(self.model_keys, ensembles)), self.fit_learned)
        self.trees = ensembles
        self.steps["stacks"] = Stacks.from_dict(
            self._blocks, self.c, self.n, keep=lambda s, k: k in self.learned_names(s)
        )
        return self

    # ------------------------------------------------------------------ estimation
    def evaluate(self, Ya: dict, estimators=None) -> dict:
        """Estimates vectorized over models, by the predictor's own steps.

        Ya : {scenario: (M, n_s) anchor answers in the artifact's anchor order, NaN = unanswered} for every
        scenario (an unanswered scenario is all NaN). estimators : names to return (default every one computable:
        the JSON-evaluable ones, and the learned ones once :meth:`with_trees` attached the regressors).

        Returns {(scenario, estimator): {estimate, lower, upper, estimate_t2, lower_t2, upper_t2: (M,)}}.
        """
        Ms = {np.shape(Ya[s])[0] for s in self.scenarios}
        if len(Ms) != 1 or any(
            np.shape(Ya[s]) != (next(iter(Ms)), len(self.anchor_sets[s].items)) for s in self.scenarios
        ):
            raise ValueError("Ya must hold an (M, n_anchors) block per scenario, the same M for all")
        Y = np.full((next(iter(Ms)), len(self.layout.w)), np.nan)
        for s in self.scenarios:
            Y[:, self.anchor_sets[s].items] = np.asarray(Ya[s], dtype=float)
        full, t2raw = estimates(Y, self.layout, self.steps, self.c, self.n)
        want = {}
        for s in self.scenarios:
            ok = self.learned_names(s) if self.trees is not None else self.json_names(s)
            want.update(
                {
                    (s, e): full[(s, e)]
                    for e in self.estimators[s]
                    if e in ok and (estimators is None or e in estimators)
                }
            )
        return calibrated(want, t2raw, self.steps, self.c, self.n)
