"""The artifact as a predictor: :class:`ArtifactModel` rebuilds the predictor's own steps (IRT fits, anchor sets,
lambdas, stacks, calibrators and, when loaded, the learned regressors as :class:`~.trees.TreeEnsemble` and the
answer bank) from the JSON, with every field checked (:mod:`.schema`). Estimates from an artifact therefore walk the
predictor's path (:mod:`..estimation.chain`), not a copy of it."""

from __future__ import annotations

import numpy as np

from ..calibration import ConformalInterval, IsotonicCalibrator
from ..estimation.anchor_sets import AnchorSet, AnchorSets
from ..estimation.bank import AnswerBank
from ..estimation.base_estimates import feature_width
from ..estimation.calibrators import Calibrators
from ..estimation.chain import calibrated, estimates
from ..estimation.irt_fits import IRTFits
from ..estimation.lambdas import Lambdas
from ..estimation.learned import LearnedRegressors
from ..estimation.names import STACKS
from ..estimation.shrinkage import SHRINKAGE, ShrinkagePrior
from ..estimation.stacks import Stacks
from ..estimation.training import Layout
from .format import JSON_BASE, LEARNED_BASE, TREES_FILE
from .schema import Reader
from .trees import bank_tables

MAX_ITEMS = 10_000_000
MAX_DIM = 1_000
KINDS = {"sep": "gbm", "joint": "gbm_joint"}


class _IRT:
    """Item parameters of one 2PL fit (what the features read: ``a`` (I, D), ``b`` (I,))."""

    def __init__(self, a, b):
        self.a, self.b = a, b


class _Shrinkage:
    """A small board's shrinkage prior as a step of the chain: adds shrunk and shrunk_joint of the anchor means."""

    def __init__(self, prior: ShrinkagePrior):
        self.prior = prior

    def transform(self, raw, full, scenarios) -> None:
        est = self.prior.estimate(np.column_stack([raw[(s, "anchor")] for s in scenarios]))
        for j, s in enumerate(scenarios):
            for e in SHRINKAGE:
                full[(s, e)] = est[e][:, j]


class _Calibration:
    """An isotonic T2 map rebuilt from its stored thresholds (same interpolation as the fitted one)."""

    def __init__(self, x, y, y_min, y_max):
        self.const = float(y[0]) if len(x) == 1 else None
        if self.const is None:
            cal = IsotonicCalibrator(y_min=y_min, y_max=y_max).fit(x, y)
            iso = cal.iso_
            if not (np.array_equal(iso.X_thresholds_, x) and np.array_equal(iso.y_thresholds_, y)):
                # refitting an isotonic sequence may move a plateau by an ulp; pin the stored thresholds exactly
                iso.X_thresholds_, iso.y_thresholds_ = x, y
                iso.X_min_, iso.X_max_ = float(x[0]), float(x[-1])
                iso._build_f(x, y)
            self.cal = cal

    def transform(self, e):
        if self.const is not None:  # a constant map
            return np.where(np.isfinite(np.asarray(e, dtype=float)), self.const, np.nan)
        return self.cal.transform(e)


def _interval(r: Reader, d: dict, path: str) -> ConformalInterval:
    ci = ConformalInterval(
        alpha=r.number(d, "alpha", path, finite=True),
        scale=r.text(d, "scale", path, ("binomial", "none")),
        floor=r.number(d, "floor", path, finite=True),
        lo=r.number(d, "lo", path, finite=True),
        hi=r.number(d, "hi", path, finite=True),
    )
    ci.q_lo_, ci.q_hi_ = r.number(d, "q_lo", path), r.number(d, "q_hi", path)
    ci.n_ = r.integer(d, "n", path, 0) if "n" in d else 0
    return ci


def _calibration(r: Reader, d: dict, path: str) -> _Calibration:
    x = r.vector(d, "x", path, finite=True)
    y = r.vector(d, "y", path, n=len(x), finite=True)
    if not len(x) or (np.diff(x) <= 0).any():
        r.fail(f"{path}.x", "expected a non-empty increasing list (the isotonic map's thresholds)")
    try:
        return _Calibration(x, y, r.number(d, "y_min", path, finite=True), r.number(d, "y_max", path, finite=True))
    except ValueError as e:  # an ArtifactError is one too
        r.fail(path, f"not an isotonic map ({e})")


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
    return {(model.c, model.n): {"answers": answers, "values": values, "eps": dict(info["eps"])}}


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
    names listed}), ``served`` ({scenario: the served estimator's selection-aware T1 interval}), ``trees`` (the
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
        self.stacks_all, self.estimators, self.served, self.anchor_sets = {}, {}, {}, {}
        parts = self._read_scenarios(art, order)
        self.layout = Layout(parts["items"], order, np.concatenate(parts["w"]), parts["cols"])
        irt = {**parts["irt"], "joint": _IRT(np.vstack(parts["ja"]), np.concatenate(parts["jb"]))}
        self.steps = {
            "irt": IRTFits.from_params(irt),
            "anchors": AnchorSets.from_sets(
                {(self.c, self.n, s): A for s, A in self.anchor_sets.items()},
                {s: len(c) for s, c in parts["cols"].items()},
            ),
            "learned": LearnedRegressors.from_models({}, enabled=False),
            "bank": AnswerBank.from_banks({}),
            "lambdas": Lambdas.from_lambdas(parts["lambdas"]),
            "stacks": Stacks.from_stacks(self._stacks(learned=False)),
            "calibrators": Calibrators.from_fitted(parts["int_t1"], parts["t2_cal"], parts["int_t2"]),
        }
        if self.shrinkage is not None:
            self.steps["shrinkage"] = _Shrinkage(self.shrinkage)
        read_learned(self, art)
        self.trees = None

    # ------------------------------------------------------------------ reading
    def _read_scenarios(self, art: dict, order: list) -> dict:
        """Every scenario's block: items, weights, IRT, anchors, lambdas, estimators (into the parts of the steps)."""
        r, c, n = self.r, self.c, self.n
        dims = r.obj(art, "irt_dims", "$")
        dj = r.integer(dims, "joint", "$.irt_dims", 1, MAX_DIM)
        scs = r.obj(art, "scenarios", "$")
        parts = {
            "items": [],
            "w": [],
            "cols": {},
            "irt": {},
            "ja": [],
            "jb": [],
            "lambdas": {},
            "int_t1": {},
            "t2_cal": {},
            "int_t2": {},
        }
        start, seen = 0, set()
        for s in order:
            p = f"$.scenarios.{s}"
            d = r.obj(scs, s, "$.scenarios")
            N = r.integer(d, "n_items", p, 1, MAX_ITEMS)
            items = r.strings(d, "items", p, N)
            parts["items"] += list(items)
            parts["cols"][s] = np.arange(start, start + N)
            parts["w"].append(r.vector(d, "balance_weights", p, N, finite=True))
            irt = r.obj(d, "irt", p)
            sep, joint = r.obj(irt, "sep", f"{p}.irt"), r.obj(irt, "joint", f"{p}.irt")
            D = r.integer(dims, s, "$.irt_dims", 1, MAX_DIM)
            parts["irt"][s] = _IRT(
                r.matrix(sep, "a", f"{p}.irt.sep", N, D), r.vector(sep, "b", f"{p}.irt.sep", N, finite=True)
            )
            parts["ja"].append(r.matrix(joint, "a", f"{p}.irt.joint", N, dj))
            parts["jb"].append(r.vector(joint, "b", f"{p}.irt.joint", N, finite=True))
            self.anchor_sets[s] = self._read_anchors(r.obj(d, "anchors", p), s, p, items, start, seen)
            lam = r.obj(d, "lambdas", p)
            for fit in ("sep", "joint"):
                lf = r.obj(lam, fit, f"{p}.lambdas")
                parts["lambdas"][(c, n, s, fit)] = {
                    k: r.number(lf, k, f"{p}.lambdas.{fit}") for k in ("tutorial", "validation")
                }
            self._read_estimators(d, s, p, parts)
            start += N
        return parts

    def _read_anchors(self, a: dict, s: str, p: str, items: list, start: int, seen: set) -> AnchorSet:
        r = self.r
        ids = r.strings(a, "items", f"{p}.anchors")
        if not ids:
            r.fail(f"{p}.anchors.items", "no anchor")
        local = r.indices(a, "local", f"{p}.anchors", len(ids), len(items))
        if any(items[j] != it for j, it in zip(local, ids)):
            r.fail(f"{p}.anchors", "items and local (pool indices) disagree")
        if seen & set(ids):
            r.fail(f"{p}.anchors.items", "an anchor appears in two scenarios")
        seen |= set(ids)
        if "texts" in a and a["texts"] is not None:
            r.strings(a, "texts", f"{p}.anchors", len(ids), nullable=True)
        linear = None
        if a.get("linear") is not None:  # the anchors' linear map (a regressor feature); optional
            lin, q = r.obj(a, "linear", f"{p}.anchors"), f"{p}.anchors.linear"
            linear = {
                "fill": r.vector(lin, "fill", q, len(ids), finite=True),
                "coef": r.vector(lin, "coef", q, len(ids), finite=True),
                "intercept": r.number(lin, "intercept", q, finite=True),
            }
        return AnchorSet(
            s,
            self.c,
            self.n,
            local,
            start + local,
            r.vector(a, "weights", f"{p}.anchors", len(ids), finite=True),
            linear,
        )

    def _read_estimators(self, d: dict, s: str, p: str, parts: dict) -> None:
        r, key = self.r, (self.c, self.n, s)
        self.stacks_all[s] = {}
        for name, st in r.obj(d, "stacks", p).items():
            q = f"{p}.stacks.{name}"
            if name not in STACKS:
                r.fail(q, "unknown stack")
            members = r.names(st, "members", q, STACKS[name])
            if not members:
                r.fail(f"{q}.members", "empty")
            self.stacks_all[s][name] = {
                "members": members,
                "w_t1": r.vector(st, "w_t1", q, len(members), finite=True),
                "w_t2": r.vector(st, "w_t2", q, len(members), finite=True),
            }
        known = {*JSON_BASE, *SHRINKAGE, *LEARNED_BASE, *self.stacks_all[s]}
        self.estimators[s] = []
        for e, ed in r.obj(d, "estimators", p).items():
            q = f"{p}.estimators.{e}"
            if e not in known:
                r.fail(q, "unknown estimator (not a base estimator, a learned one or a stack of this scenario)")
            if not isinstance(ed, dict):
                r.fail(q, "expected an object")
            parts["int_t1"][(*key, e)] = _interval(r, r.obj(ed, "interval_t1", q), f"{q}.interval_t1")
            cal = r.obj(ed, "calibration_t2", q, nullable=True)
            if cal is not None:
                parts["t2_cal"][(*key, e)] = _calibration(r, cal, f"{q}.calibration_t2")
                parts["int_t2"][(*key, e)] = _interval(r, r.obj(ed, "interval_t2", q), f"{q}.interval_t2")
            self.estimators[s].append(e)
        if not self.estimators[s]:
            r.fail(f"{p}.estimators", "no estimator")
        if set(self.estimators[s]) & set(SHRINKAGE) and self.shrinkage is None:
            r.fail("$.shrinkage", f"scenario {s} lists shrunk estimators but the artifact has no prior")
        rl = r.obj(d, "recommended_learned", p)
        if rl.get("interval_t1") is not None:  # the served estimator's selection-aware T1 interval
            q = f"{p}.recommended_learned.interval_t1"
            self.served[s] = _interval(r, r.obj(rl, "interval_t1", f"{p}.recommended_learned"), q)
        for rec in ("recommended", "recommended_learned"):
            rd = r.obj(d, rec, p)
            for t in ("t1", "t2"):
                r.text(
                    rd,
                    t,
                    f"{p}.{rec}",
                    self.estimators[s]
                    if rec == "recommended_learned"
                    else [e for e in self.estimators[s] if e in self.json_names(s)],
                )

    # ------------------------------------------------------------------ what can be computed
    def _gbm_available(self, s: str, name: str) -> bool:
        if name == "bank_joint":
            return self.bank_info is not None
        kind = "sep" if name == "gbm" else "joint"
        has_t1 = (self.c, self.n, s, kind, "t1") in self.model_keys
        return has_t1 or (self.fit_learned and len(self.anchor_sets[s].local) >= len(self.layout.cols[s]))

    def json_names(self, s: str) -> set[str]:
        """Estimators of scenario ``s`` computed from the JSON alone."""
        base = {*JSON_BASE, *(SHRINKAGE if self.shrinkage is not None else ())}
        return {*base, *(k for k, st in self.stacks_all[s].items() if set(st["members"]) <= base)}

    def learned_names(self, s: str) -> set[str]:
        """Estimators of scenario ``s`` computed with the tree file."""
        base = {*self.json_names(s), *(g for g in LEARNED_BASE if self._gbm_available(s, g))}
        return base | {k for k, st in self.stacks_all[s].items() if set(st["members"]) <= base}

    def _stacks(self, learned: bool) -> dict:
        ok = self.learned_names if learned else self.json_names
        return {
            (self.c, self.n, s, k): st for s in self.scenarios for k, st in self.stacks_all[s].items() if k in ok(s)
        }

    def with_trees(self, ensembles: list, arrays: dict | None = None, source=None) -> "ArtifactModel":
        """Attach the learned regressors (a TreeEnsemble per ``model_keys`` entry) and the answer bank, if any."""
        if len(ensembles) != len(self.model_keys):
            self.r.fail(
                "$.learned.models", f"{len(self.model_keys)} regressors listed, the tree file holds {len(ensembles)}"
            )
        self.steps["bank"] = AnswerBank.from_banks(_bank(self, arrays, source))
        self.steps["learned"] = LearnedRegressors.from_models(dict(zip(self.model_keys, ensembles)), self.fit_learned)
        self.trees = ensembles
        self.steps["stacks"] = Stacks.from_stacks(self._stacks(learned=True))
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
