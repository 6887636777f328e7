"""Multidimensional 2PL item response theory: fast full-batch MAP fitting, ability estimation and choice of the
number of dimensions, plus a py-irt backend for parity checks.

Modules (see docs/architecture.md)::

    model       item curve, IRTParams, response validation (numpy only)
    objective   negative log posterior and its gradient, chunked over rows
    start       seeded starting point (randomized SVD)
    optimizers  L-BFGS in blocks, Adam
    fit         fit_irt, its defaults and priors
    ability     estimate_ability: abilities of new models, items fixed
    select      select_dimension: D by validation on held-out models
    evaluate    heldout_scores: held-out log-loss / accuracy / score error
    pyirt       py-irt 0.7.1 multidim_2pl backend (depends on model only)

Every name the rest of the project imports from ``tinybench_assets.core.irt`` is re-exported here (including the
private ``_Objective`` and ``_prepare`` that the tests use). Pure numpy / torch / scipy: no Dagster or DuckDB.
"""

from __future__ import annotations

from .ability import estimate_ability
from .evaluate import heldout_scores
from .fit import A_SD_PER_DIM, fit_irt
from .model import IRTParams, item_curve
from .pyirt import DEFAULT_LR, convert_pyirt_params, fit_pyirt
from .select import DimensionSelection, select_dimension, validation_split

__all__ = [
    "item_curve",
    "IRTParams",
    "fit_irt",
    "A_SD_PER_DIM",
    "estimate_ability",
    "DimensionSelection",
    "select_dimension",
    "validation_split",
    "heldout_scores",
    "fit_pyirt",
    "convert_pyirt_params",
    "DEFAULT_LR",
]
