"""Routing: questions -> the model most likely to answer them correctly.

Pure numpy / scikit-learn / torch (through the IRT engine); no Dagster or DuckDB here.

- :mod:`.knn` -- cosine nearest neighbours in embedding space and KNN imputation of item parameters.
- :mod:`.routers` -- small fit/predict routers (best single model, KNN vote, shrunk KNN, KNN-IRT,
  per-model logistic regression, matrix factorization, ensemble) that output P(correct) per (question, model).
- :mod:`.calibrated` -- per-model Platt calibration composed onto any router.
- :mod:`.saved` -- routers written to and read from .npz files.
- :mod:`.select` -- cross-validation of router families on training questions only.
- :mod:`.cost` -- serving policies priced at expected costs, the zero router, AIQ, the cost objectives.
- :mod:`.metrics` -- routing decisions (argmax with tie-break), accuracy figures, paired bootstrap,
  cost-aware routing and the accuracy-cost curve.
"""

from .knn import impute_item_params, nearest, normalize_rows
from .metrics import evaluate_routing, paired_bootstrap_ci, route, route_with_cost
from .routers import BestSingleRouter, EnsembleRouter, KNNIRTRouter, KNNVoteRouter, LogisticRouter
from .saved import router_from_state
from .select import RouterSelection, select_router

__all__ = [
    "impute_item_params",
    "nearest",
    "normalize_rows",
    "evaluate_routing",
    "paired_bootstrap_ci",
    "route",
    "route_with_cost",
    "BestSingleRouter",
    "EnsembleRouter",
    "KNNIRTRouter",
    "KNNVoteRouter",
    "LogisticRouter",
    "router_from_state",
    "RouterSelection",
    "select_router",
]
