"""Small leaderboards, the fitted state of :class:`~.small_board.SmallBoardPredictor`: one small object per job::

    BoardLayout    the board as fitted: scenarios, their columns of Y, balance weights, item and model names,
                   families, subscenarios per scenario
    BoardTruth     every model's T1 (balance-weighted accuracy on the scenario's pool) and T2 (full score)
    FamilyFolds    the leave-family-out folds: fold id per model and the number of folds
    GuardDecision  the anchor design served per scenario and the guard's log excess (small_guard)
    ServedBoard    what is served, refitted on every model: the per-scenario fits, the answer bank and the shrinkage
                   priors per n, and the ArtifactModel of each n built from them (filled on first use)

Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["BoardLayout", "BoardTruth", "FamilyFolds", "GuardDecision", "ServedBoard", "scenario_subscenarios"]


@dataclass(frozen=True, eq=False)
class BoardLayout:
    """The board's layout.

    scenarios : [S] in column order; cols : {scenario: (I_s,) column indices of Y}; w : (I,) balance weights, mean 1
    per scenario; items : [I] item ids; models : [M] model names; groups : (M,) family per model (str);
    subscenarios : {scenario: (I_s,) subscenario per item, the anchors' strata, or None}.
    """

    scenarios: list
    cols: dict
    w: np.ndarray
    items: list
    models: list
    groups: np.ndarray
    subscenarios: dict


@dataclass(frozen=True, eq=False)
class BoardTruth:
    """t1 : (M, S) each model's balance-weighted accuracy per scenario (NaN where it answered none of its items);
    t2 : (M, S) its full-benchmark score (NaN where unknown). Columns in :attr:`BoardLayout.scenarios` order."""

    t1: np.ndarray
    t2: np.ndarray


@dataclass(frozen=True, eq=False)
class FamilyFolds:
    """ids : (M,) fold of each model (every family whole in one fold); n : the number of folds."""

    ids: np.ndarray
    n: int

    @classmethod
    def of(cls, ids: np.ndarray) -> FamilyFolds:
        """The folds of fold ids 0 .. K - 1 (``small_folds.family_folds``)."""
        return cls(ids, int(ids.max()) + 1)


@dataclass(frozen=True, eq=False)
class GuardDecision:
    """designs : {scenario: the anchors' design served} ("random" where the guard switched it); excess :
    {scenario: mean log(served MAE / random items' expected MAE) on every row, before the switch}, empty when the
    guard did not run."""

    designs: dict
    excess: dict


@dataclass(frozen=True, eq=False)
class ServedBoard:
    """fits : {scenario: small_folds.ScenarioFit on every model} (2PLs at the chosen D's, anchors per n, the nested
    order); bank : {(clustering, n): {"answers", "values", "eps"}} the served answer bank (BankMixin's layout);
    priors : {n: the shrinkage prior on every model}; models : {n: ArtifactModel} built from the artifact of n on
    first use (``SmallBoardPredictor.artifact_model``)."""

    fits: dict
    bank: dict
    priors: dict
    models: dict = field(default_factory=dict, repr=False)


def scenario_subscenarios(subscenarios, cols: dict, n_items: int) -> dict:
    """{scenario: (I_s,) str subscenario per item, or None} from ``subscenarios`` (I,) or None (ValueError on a
    wrong length)."""
    subs = None if subscenarios is None else np.asarray(subscenarios, dtype=object).astype(str)
    if subs is not None and subs.shape != (n_items,):
        raise ValueError(f"subscenarios needs one label per item ({n_items}), got {subs.shape}")
    return {s: (None if subs is None else subs[c]) for s, c in cols.items()}
