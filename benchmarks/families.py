"""Coverage of 90 % intervals per held-out family (issue 58: "at least .75 for every held-out family").

A family with few (model, scenario) pairs can fall below 0.75 by chance alone: with 4 pairs and intervals that cover
exactly 90 % of the time, 2 misses happen to about 5 % of families. So beside the count of families below 0.75 the
figures carry how many would be expected there if every pair were covered independently with probability 0.9
(binomial), the yardstick a count of misses is read against.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import binom

FLOOR = 0.75
NOMINAL = 0.9


def coverage_by_family(hit, fam) -> dict:
    """hit : (P,) whether each (model, scenario[, budget, split]) pair's interval covered the truth; fam : (P,) its
    family. Returns {"families", "below_075", "expected_below_075", "min_coverage", "worst": [family, coverage,
    pairs]}."""
    per = pd.Series(np.asarray(hit, dtype=float)).groupby(np.asarray(fam)).agg(["mean", "size"])
    worst = per["mean"].idxmin()
    expected = sum(binom.cdf(math.ceil(FLOOR * k) - 1, k, NOMINAL) for k in per["size"])
    return {
        "families": int(len(per)),
        "below_075": int((per["mean"] < FLOOR).sum()),
        "expected_below_075": round(float(expected), 2),
        "min_coverage": round(float(per["mean"].min()), 4),
        "worst": [str(worst), round(float(per.loc[worst, "mean"]), 4), int(per.loc[worst, "size"])],
    }
