"""The stored tables of an IRT fit (the irt_model and irt_joint assets write them)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def fit_tables(
    matrix, scope: str, split, sel, params, held: dict, seed: int, fitter: str, device: str, seconds: float
) -> dict:
    """The stored rows of one IRT fit of a ResponseMatrix (``scope``: "scenario" or "joint"): ``model_splits``,
    ``irt_items`` / ``irt_models`` (item and model parameters), ``irt_dims`` (the validation error per D) and
    ``irt_fits`` (its summary). ``split``: "train" / "test" per model; ``sel``: the DimensionSelection; ``held``:
    the held-out models' scores (logloss, accuracy, score_mae, n_models)."""
    train = split == "train"
    models = np.asarray(matrix.models, dtype=object)
    return {
        "model_splits": pd.DataFrame({"model": models, "split": split, "seed": seed}),
        "irt_items": pd.DataFrame(
            {
                "item": matrix.items,
                "scenario": matrix.scenarios.astype(str),
                "subscenario": matrix.subscenarios.astype(str),
                "b": params.b,
                "a": list(params.a),
            }
        ),
        "irt_models": pd.DataFrame({"model": models[train], "theta": list(params.theta)}),
        "irt_dims": pd.DataFrame(
            {
                "dim": list(sel.errors),
                "val_error": list(sel.errors.values()),
                "val_bias": [sel.bias[d] for d in sel.errors],
                "val_error_sd": [float(np.std(sel.per_model_errors[d])) for d in sel.errors],
                "seconds": [sel.seconds.get(d) for d in sel.errors],
                "chosen": [d == sel.best_dim for d in sel.errors],
            }
        ),
        "irt_fits": pd.DataFrame(
            [
                {
                    "scope": scope,
                    "dim": sel.best_dim,
                    "n_models": int(train.sum()),
                    "n_items": len(matrix.items),
                    "loss": params.loss,
                    "heldout_logloss": held["logloss"],
                    "heldout_accuracy": held["accuracy"],
                    "heldout_score_mae": held["score_mae"],
                    "n_heldout_models": held["n_models"],
                    "val_bias": sel.bias[sel.best_dim],
                    "val_error": sel.errors[sel.best_dim],
                    "seconds": seconds,
                    "device": device,
                    "fitter": fitter,
                    "seed": seed,
                    "updated_at": pd.Timestamp.now(),
                }
            ]
        ),
    }
