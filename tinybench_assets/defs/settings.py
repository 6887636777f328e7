"""What several asset modules share, so that no asset module imports another: the asset groups' names and the
routers' run config. Assets name the assets they depend on by key (``deps=["binarized_responses"]``), not by
importing them."""

import dagster as dg

from tinybench_assets.core.routing.select import DEFAULT_FAMILIES

INGEST_GROUP = "ingest"
ROUTER_GROUP = "router"


class RouterConfig(dg.Config):
    """Router selection by cross-validation on training questions (see core/routing/select.py)."""

    families: list[str] = list(DEFAULT_FAMILIES)  # add "mf" for matrix factorization, "<family>_cal" to calibrate one
    n_folds: int = 5
    seed: int = 0
    margins: list[float] = [0.0, 0.02, 0.05, 0.1]
    gate_level: float = 0.95  # serve a router only if its CV gain's one-sided lower bound is > 0; 0 = plain CV winner
    n_boot: int = 2000
    # the leaderboard router only: hashed character n-grams of each question's text appended to its embedding (the
    # wording and format that tell a leaderboard's tasks apart; core/routing/surface.py); 0 = the embedding alone
    surface_features: int = 1024
    evaluate_all: bool = (
        True  # also fit every family's CV-best router on all training questions and report its test figures
    )
    # where costs landed: what to serve (core/routing/cost.py). "auto" = quality_at_min_cost with costs, else accuracy;
    # quality_at_min_cost: the cheapest (family, lambda) whose training-CV accuracy is within `tolerance` of the best
    # single model's; max_cost / min_accuracy: targets. Chosen on training questions only.
    objective: str = "auto"
    tolerance: float = 0.01
    max_cost: float | None = None
    min_accuracy: float | None = None

    def selection(self) -> dict:
        """The keyword arguments of ``core.routing.select.select_router`` that this config sets."""
        return dict(
            families=self.families,
            n_folds=self.n_folds,
            seed=self.seed,
            margins=self.margins,
            gate_level=self.gate_level,
            n_boot=self.n_boot,
        )
