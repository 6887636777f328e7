"""The MAGI set-up (who votes, who tunes, who is held out, who is burned) and the evaluation of one subset.

Models are split into roles:

* ``voter``     the voters (see voters.py); never guessers.
* ``tune``      non-voters on which the search measures top-10 spread and the weakest score (a seeded,
                name-hashed ``1 - eval_fraction`` of the non-voters);
* ``eval``      the other non-voters: never seen by any selection step; the benchmark's top-10 spread,
                Kendall tau and weakest score are measured on them.
* ``reference`` the reference model of ref_vs_voters (default: the best tune model by full score); it
                and every model of its family are flagged ``not_fair``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tinybench_assets.core.estimation.splits import model_unit
from tinybench_assets.core.subsets.padding import pad_subset, padded_penalty
from tinybench_assets.core.subsets.penalty import loo_masks, subset_scores, voter_penalty
from tinybench_assets.core.subsets.rankings import Ranking, subset_mask
from tinybench_assets.core.subsets.voters import base_family, guessers, model_families, select_voters


@dataclass
class MagiSetup:
    """Y (M, I) 0/1; models (M,); items (I,); chance (I,); full_score (M,); role (M,) in
    {voter, tune, eval}; guesser / not_fair (M,) bool; reference: row index; families: frame by model."""

    Y: np.ndarray
    models: list[str]
    items: list[str]
    scenarios: np.ndarray
    subscenarios: np.ndarray
    chance: np.ndarray
    full_score: np.ndarray
    role: np.ndarray
    guesser: np.ndarray
    not_fair: np.ndarray
    reference: int
    families: pd.DataFrame
    balanced: bool = False  # True: subset score = mean over scenarios of the accuracy on their kept items
    voters: np.ndarray = field(init=False)
    pool_accuracy: np.ndarray = field(init=False)

    def __post_init__(self):
        self.voters = np.flatnonzero(self.role == "voter")
        train = (self.role != "eval") & ~self.guesser
        self.pool_accuracy = np.nanmean(self.Y[train], axis=0) if train.any() else np.nanmean(self.Y, axis=0)

    @property
    def Yv(self) -> np.ndarray:
        return self.Y[self.voters]

    @property
    def score_groups(self) -> np.ndarray | None:
        """The scenarios when subset scores are scenario-balanced, else None (plain mean over items)."""
        return self.scenarios if self.balanced else None

    def scores(self, mask: np.ndarray) -> np.ndarray:
        """Every model's score on the subset ``mask`` (n_items,) under the setup's scoring rule, (n_models,)."""
        return subset_scores(self.Y, mask, self.score_groups)

    def group(self, name: str) -> np.ndarray:
        """Row mask of the non-voters measured by the search ("tune") or held out ("eval")."""
        return self.role == name

    def top(self, mask: np.ndarray, k: int, fair_only: bool = True) -> np.ndarray:
        """Rows of the k best models by full score within ``mask`` (not-fair models left out if asked)."""
        m = mask & (~self.not_fair if fair_only else True)
        idx = np.flatnonzero(m)
        return idx[np.argsort(-self.full_score[idx], kind="stable")[:k]]

    def top_tune(self, k: int) -> np.ndarray:
        """The k best fair tune models; on a small leaderboard whose tune models are all flagged not fair, the k best
        tune models anyway."""
        top = self.top(self.role == "tune", k)
        return top if len(top) else self.top(self.role == "tune", k, fair_only=False)


def prepare(
    Y: np.ndarray,
    models,
    items,
    scenarios,
    subscenarios,
    chance: np.ndarray,
    full_score: np.ndarray,
    *,
    aggregate: pd.DataFrame | None = None,
    n_voters: int = 60,
    per_family: int = 3,
    eval_fraction: float = 0.5,
    min_split_models: int = 40,
    reference: str | None = None,
    guesser_z: float = 2.0,
    seed: int = 0,
    balanced: bool = False,
) -> MagiSetup:
    """Roles of every model. ``full_score`` (M,) may hold NaN (then the pool accuracy stands in).
    ``balanced``: subset scores are means over scenarios of per-scenario accuracy (MagiSetup.balanced).

    Leaderboards with few models (RouterDC: 7) get at most half of the models as voters, and with fewer than
    ``min_split_models`` non-voters there is no eval split (eval figures are then the tune figures).
    """
    Y = np.asarray(Y, dtype=float)
    models = list(models)
    full = np.asarray(full_score, dtype=float).copy()
    pool = np.nanmean(Y, axis=1)
    full = np.where(np.isnan(full), pool, full)
    fams = model_families(models, aggregate)
    guess = guessers(Y, chance, guesser_z)
    n_v = min(n_voters, max(1, len(models) // 2))
    voters = select_voters(models, full, fams, guess, n_voters=n_v, per_family=per_family)
    role = np.array(["tune"] * len(models), dtype=object)
    non = np.setdiff1d(np.arange(len(models)), voters)
    if len(non) >= min_split_models and eval_fraction > 0:
        u = model_unit([models[i] for i in non], seed)
        role[non[u < eval_fraction]] = "eval"
    role[voters] = "voter"
    if reference is not None:
        if reference not in models:
            raise ValueError(f"reference model {reference!r} not in the pool")
        ref = models.index(reference)
    else:
        cand = np.flatnonzero((role == "tune") & ~guess)
        cand = cand if len(cand) else np.flatnonzero(role != "voter")
        ref = int(cand[np.argmax(full[cand])])
    family = fams.loc[models, "family"].to_numpy()
    # the reference's family, and fine-tunes whose names declare the same base and size (dolphin-2.9-llama3-8b
    # of Meta-Llama-3-8B) where the aggregate table does not group them
    bases = [base_family(m) for m in models]
    not_fair = (family == family[ref]) | (np.array([b is not None and b == bases[ref] for b in bases]))
    return MagiSetup(
        Y=Y,
        models=models,
        items=list(items),
        scenarios=np.asarray(scenarios, dtype=object),
        subscenarios=np.asarray(subscenarios, dtype=object),
        chance=np.asarray(chance, float),
        full_score=full,
        role=role,
        guesser=guess,
        not_fair=not_fair,
        reference=ref,
        families=fams,
        balanced=balanced,
    )


def scenario_validity(setup: MagiSetup, top: int = 100) -> dict:
    """Per scenario: Pearson correlation of the models' mean score on the scenario's pool items with their real
    full-benchmark score, among the ``top`` best tune non-guessers by full score (voters and eval models never
    enter). Negative = among the strongest tune models, the better ones (by the full score, a mean over
    scenarios) do worse on this scenario's items: the scenarios trade off at the top (openllm: TruthfulQA and
    the ARC sample against GSM8K and MMLU), so a subset made of them ranks the top against the full score.
    A scenario whose score does not vary among them gets 0."""
    rows = setup.top((setup.role == "tune") & ~setup.guesser, top, fair_only=False)
    scen = np.asarray(setup.scenarios).astype(str)
    out = {}
    for g in np.unique(scen):
        sc = np.nanmean(setup.Y[np.ix_(rows, np.flatnonzero(scen == g))], axis=1) if len(rows) else np.zeros(0)
        f = setup.full_score[rows]
        ok = len(rows) > 2 and np.std(sc) > 0 and np.std(f) > 0
        out[g] = float(np.corrcoef(sc, f)[0, 1]) if ok else 0.0
    return out


@dataclass
class SubsetParams:
    """One point of the search space. keep_fraction: items kept by the ranking (before padding), of the pool;
    pad_*: offset padding (padding.py); top_k: abilities averaged by irt_information."""

    keep_fraction: float = 0.2
    pad_base: int = 0
    pad_per_point: float = 0.0
    pad_acc_low: float = 0.5
    pad_acc_high: float = 1.0
    top_k: int = 10
    stratify: bool = False  # True: keep each scenario's share of the pool (the full score averages scenarios)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class SubsetEval:
    """mask (I,) final subset; base (I,) before padding; penalty_before/after (n_voters,) points; metrics."""

    mask: np.ndarray
    base: np.ndarray
    penalty_before: np.ndarray
    penalty_after: np.ndarray
    metrics: dict


def build_subset(setup: MagiSetup, ranking: Ranking, params: SubsetParams, seed: int = 0) -> SubsetEval:
    """The subset a ranking and parameters choose, with penalties before and after padding (metrics: tune)."""
    n_items = setup.Y.shape[1]
    k = max(1, int(round(params.keep_fraction * n_items)))
    # stratified: every scenario keeps its pool share (scenarios demoted by the guard get none: ranking.strata)
    groups = (setup.scenarios if ranking.strata is None else ranking.strata) if params.stratify else None
    base = subset_mask(ranking.keep, k, groups)
    Yv = setup.Yv
    without = loo_masks(ranking, k, len(setup.voters), groups)
    pen0 = voter_penalty(Yv, base, without, setup.score_groups)
    pad = pad_subset(
        Yv,
        base,
        pen0,
        setup.pool_accuracy,
        base=params.pad_base,
        per_point=params.pad_per_point,
        acc_low=params.pad_acc_low,
        acc_high=params.pad_acc_high,
        seed=seed,
    )
    pen1 = padded_penalty(Yv, base, without, pad, setup.score_groups) if pad.added.any() else pen0
    mask = base | pad.added
    ev = SubsetEval(mask=mask, base=base, penalty_before=pen0, penalty_after=pen1, metrics={})
    ev.metrics = measure(setup, mask, pen1, group="tune")
    return ev


def measure(setup: MagiSetup, mask: np.ndarray, penalty: np.ndarray | None, group: str = "tune") -> dict:
    """The issue's figures for one subset, on the models of ``group`` ("tune" or "eval").

    top10_std: std of the subset scores of the group's top 10 fair non-voters by full score ([0, 1] scale);
    top10_std_all: the same with not-fair models allowed; top10_std_voters: the top 10 voters;
    min_score: weakest non-guesser of the group (and the voters, for "tune"); guesser_advantage:
    chance score on the subset minus min_score; kendall_tau: subset score vs full score, top 50 of the group.
    """
    g = setup.group(group)
    if not g.any():
        g = setup.group("tune")
    scores = setup.scores(mask)
    chance = float(subset_scores(setup.chance[None, :], mask, setup.score_groups)[0]) if mask.any() else 0.0
    weak = (g | (setup.role == "voter") if group == "tune" else g) & ~setup.guesser
    top10 = setup.top(g, 10)
    top10_all = setup.top(g, 10, fair_only=False)
    top10_v = setup.top(setup.role == "voter", 10, fair_only=False)
    top50 = setup.top(g, 50, fair_only=False)
    from scipy.stats import kendalltau  # here, not at import (forms.py says why)

    tau = kendalltau(scores[top50], setup.full_score[top50]).statistic if len(top50) > 2 else float("nan")
    min_score = float(np.nanmin(scores[weak])) if weak.any() else float("nan")
    pen = np.zeros(0) if penalty is None else np.asarray(penalty)
    return {
        "size": int(mask.sum()),
        "fraction_of_pool": float(mask.mean()),
        "top10_std": float(np.std(scores[top10])) if len(top10) else float("nan"),
        "top10_std_all": float(np.std(scores[top10_all])) if len(top10_all) else float("nan"),
        "top10_std_voters": float(np.std(scores[top10_v])) if len(top10_v) else float("nan"),
        "mean_voter_penalty": float(pen.mean()) if len(pen) else 0.0,
        "mean_abs_voter_penalty": float(np.abs(pen).mean()) if len(pen) else 0.0,
        "max_voter_penalty": float(pen.max()) if len(pen) else 0.0,
        "min_score": min_score,
        "chance": chance,
        "guesser_advantage": chance - min_score,
        "kendall_tau_nonvoters": float(tau) if tau == tau else float("nan"),
        "reference_score": float(scores[setup.reference]),
    }
