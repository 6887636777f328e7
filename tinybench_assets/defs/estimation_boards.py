"""The estimation assets' two kinds of leaderboard behind one interface, so that no asset branches on board size.

:func:`board_for` picks the kind once per run from the number of models; each kind answers the same four calls::

    fit(db, board, matrix, full, groups)      -> Fitted: the predictor, its tables (anchors, gpirt_lambdas,
                                                 estimator_selection, estimator_validation) and both assets' metadata
    estimates(pred, db, board, matrix, full)  -> (the estimates table, models estimated)
    backtest(log, db, board, matrix, full, groups, model_store, t0) -> estimation_backtest's MaterializeResult
    export(pred, board, n, folder, **texts)   -> (the tiny-benchmark dict, the budgets file or None)

:class:`BigBoard` (``min_models`` models or more): one ``AnchorPredictor`` fitted on model_split's training models,
estimates for its test models, a multi-split backtest of its own splits (:mod:`.estimation_big`), one exported budget.
:class:`SmallBoard` (``min_small_models`` to ``min_models`` - 1): one ``SmallBoardPredictor`` on every model,
leave-family-out figures, every prepared budget exported (:mod:`.estimation_small`).
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets.defs import estimation_big as big
from tinybench_assets.defs import estimation_small as small

__all__ = ["Fitted", "BigBoard", "SmallBoard", "board_for"]


@dataclass
class Fitted:
    """What ``fit`` gives the anchor_sets asset: the predictor to save, the tables to write and the metadata of
    anchor_sets and gpirt_lambdas."""

    predictor: object
    tables: dict
    anchor_meta: dict
    lambda_meta: dict


class BigBoard:
    """A leaderboard with models to hold out: AnchorPredictor on model_split's training models."""

    def __init__(self, config, device: str):
        self.config, self.device = config, device

    def fit(self, db, board: str, matrix, full: pd.DataFrame, groups: np.ndarray, log=None) -> Fitted:
        """``log``: optional callable taking a line, said as each of the predictor's steps ends."""
        # lazy: loads torch and scikit-learn (~2.5 s)
        from tinybench_assets.core.estimation.predictor import AnchorPredictor

        split = db.model_split(board)
        train = np.array([split.get(m) == "train" for m in matrix.models])
        said = None if log is None else (lambda n, s, k, t: log(f"predictor step {n} done in {s:.1f} s ({k} of {t})"))
        pred = AnchorPredictor(**big.predictor_params(self.config, self.device), n_jobs=self.config.n_jobs).fit(
            matrix, full, np.flatnonzero(train), groups=groups, progress=said
        )
        anchors, lambdas, selection = pred.anchor_table(), pred.lambdas, pred.selection
        tables = {
            "anchors": anchors[["scenario", "clustering", "n", "n_anchors", "item", "item_index", "weight"]],
            "gpirt_lambdas": lambdas[
                ["scenario", "clustering", "n", "fit", "lambda_tutorial", "lambda_validation", "b", "v"]
            ],
            "estimator_selection": selection[
                ["scenario", "n", "selector", "clustering_t1", "estimator_t1", "clustering_t2", "estimator_t2"]
            ],
            "estimator_validation": pred.validation[
                ["scenario", "clustering", "n", "estimator", "val_mae_t1", "val_mae_t2", "n_val"]
            ],
        }
        n30 = anchors[anchors.n == (30 if 30 in self.config.n_values else self.config.n_values[0])]
        sums = anchors.groupby(["clustering", "n", "scenario"])["weight"].sum()
        split, irt = pred.named_steps["split"], pred.named_steps["irt"]
        meta = {
            "anchor_rows": len(anchors),
            "scenarios": dg.MetadataValue.json(pred.layout.scenarios),
            "train_models": int(train.sum()),
            "fit_models": split.n_fit_,
            "validation_models": split.n_val_,
            "dims": dg.MetadataValue.json({k: int(v.best_dim) for k, v in irt.dim_selection_.items()}),
            "weights_sum_per_scenario": dg.MetadataValue.json(
                {f"{c}/{n}/{s}": round(float(w), 9) for (c, n, s), w in sums.items() if n == n30["n"].iloc[0]}
            ),
        }
        lam = lambdas[(lambdas.fit == "sep") & (lambdas.clustering == "correctness")]
        return Fitted(
            pred,
            tables,
            meta,
            {
                "lambdas": dg.MetadataValue.md(lam.round(4).to_markdown(index=False)),
                "selected_estimators": dg.MetadataValue.md(selection.to_markdown(index=False)),
            },
        )

    def estimates(self, pred, db, board: str, matrix, full: pd.DataFrame) -> tuple[pd.DataFrame, int]:
        """model_split's test models, from their anchor answers, against T1 and T2."""
        split = db.model_split(board)
        test = np.flatnonzero([split.get(m) == "test" for m in matrix.models])
        models = np.asarray(matrix.models, dtype=object)[test]
        Y = matrix.scores[test]
        df = pred.estimate(Y, models, include_random=True)
        t1 = pred.pool_accuracy(Y)
        t1.index = models
        truth = t1.stack().rename("truth_t1").to_frame()
        truth.index.names = ["model", "scenario"]
        t2 = full.rename(columns={"full_benchmark_score": "truth_t2"}).set_index(["model", "scenario"])["truth_t2"]
        truth = truth.join(t2, how="left").reset_index()
        return df.merge(truth, on=["model", "scenario"], how="inner"), len(test)

    def backtest(self, log, db, board: str, matrix, full: pd.DataFrame, groups: pd.Series, model_store, t0: float):
        return big.big_backtest(log, self.config, self.device, db, board, matrix, full, groups, t0)

    def export(self, pred, board: str, n: int, folder, **kw) -> tuple[dict, None]:
        # lazy: loads torch and scikit-learn (~2.5 s)
        from tinybench_assets.core.tiny_benchmark import export_tiny_benchmark

        return export_tiny_benchmark(pred, leaderboard=board, n=n, **kw), None


class SmallBoard:
    """A leaderboard of a few dozen models: one SmallBoardPredictor on every model, cross-validated by family."""

    def __init__(self, config, device: str):
        self.config, self.device = config, device

    def fit(self, db, board: str, matrix, full: pd.DataFrame, groups: np.ndarray, log=None) -> Fitted:
        """``log`` is accepted for the big board's interface; the small board's fit logs nothing per step."""
        pred, _ = small.fit_small(matrix, full, groups, self.config, self.device)
        tables = small.anchor_tables(pred)
        meta = {
            "small_board": f"{len(matrix.models)} models: anchors, estimators and intervals chosen by "
            f"leave-family-out cross-validation ({pred.folds_.n} folds) on every model",
            "anchor_rows": len(tables["anchors"]),
            "scenarios": dg.MetadataValue.json(pred.layout_.scenarios),
            "models": len(matrix.models),
            "folds": pred.folds_.n,
            "notes": dg.MetadataValue.json(pred.notes_),
        }
        return Fitted(
            pred,
            tables,
            meta,
            {
                "lambdas": dg.MetadataValue.md(tables["gpirt_lambdas"].round(4).to_markdown(index=False)),
                "selected_estimators": dg.MetadataValue.md(tables["estimator_selection"].to_markdown(index=False)),
            },
        )

    def estimates(self, pred, db, board: str, matrix, full: pd.DataFrame) -> tuple[pd.DataFrame, int]:
        """Every model, through the served tiny benchmark (in-sample; the backtest's figures are the honest ones)."""
        return small.board_estimates(pred, matrix, full), len(matrix.models)

    def backtest(self, log, db, board: str, matrix, full: pd.DataFrame, groups: pd.Series, model_store, t0: float):
        return small.small_backtest(self.config, db, board, matrix, full, groups, self.device, t0, model_store)

    def export(self, pred, board: str, n: int, folder, **kw):
        return pred.to_artifact(board, n, **kw), small.export_budgets(pred, board, folder, **kw)


def board_for(n_models: int, config, device: str) -> BigBoard | SmallBoard:
    """The kind of leaderboard of ``n_models`` models (``config.min_models``: the smallest big board)."""
    return (SmallBoard if small.is_small(n_models, config) else BigBoard)(config, device)
