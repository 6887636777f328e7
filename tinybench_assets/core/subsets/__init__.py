"""MAGI subsets (rankings, voter penalty, offset padding, search) and stratified parallel forms.

Pure numpy / scipy / optuna; no Dagster or DuckDB. See docs/magi.md.
"""

from tinybench_assets.core.subsets.choice import choose_export, choose_variant
from tinybench_assets.core.subsets.forms import ParallelForms, parallel_forms
from tinybench_assets.core.subsets.rankings import METHODS, Ranking
from tinybench_assets.core.subsets.search import DEFAULTS, MagiResult, Scalarization, SearchSpace, run_magi
from tinybench_assets.core.subsets.setup import MagiSetup, SubsetParams, build_subset, measure, prepare
from tinybench_assets.core.subsets.voters import chance_per_item, read_aggregate

__all__ = [
    "DEFAULTS",
    "METHODS",
    "MagiResult",
    "MagiSetup",
    "ParallelForms",
    "Ranking",
    "Scalarization",
    "SearchSpace",
    "SubsetParams",
    "build_subset",
    "chance_per_item",
    "choose_export",
    "choose_variant",
    "measure",
    "parallel_forms",
    "prepare",
    "read_aggregate",
    "run_magi",
]
