"""Model families for grouped splits, and the lockbox.

A leaderboard is full of fine-tunes and merges of the same base model. A random split of models puts
near-twins on both sides, which flatters every estimator that learns from training models. A *grouped*
split sends whole families to one side.

The family rule (:func:`model_groups`), one key per model, ``<org>|<base>``:

* ``org``: the organisation of the Hugging Face id (``0-hero`` for ``0-hero/Matter-0.1-7B``), lower-cased;
* ``base``: the architecture x size (x MoE) from the leaderboard's aggregate table (``arch``, ``size``, ``moe``:
  ``MistralForCausalLM-7b``), else the name up to its size token (``matter-0.1-7b``), as the MAGI voters'
  family (:func:`~tinybench_assets.core.subsets.voters.model_families`);
* a model whose id names no family is its own group, ``|<id>``: the ids the reader generates for a matrix without
  model names (``combine.model0``, :func:`~tinybench_assets.core.subsets.voters.own_family`);
* boards without families: when the keys above put every model of a board (two or more) in one group, each model
  is its own group, ``<org>|<id>`` (:func:`~tinybench_assets.core.subsets.voters.one_family_each` says why: one
  group leaves no grouped split and no leave-family-out fold to run, and tells nothing about near-twins).
  :func:`group_summary` reports it as ``family_rule``.

So one author's fine-tunes, DPO variants and merges of one base model (the near-twins: authors merge and
re-tune their own models) stay on one side. On the Open LLM Leaderboard (6,063 models over its four scenarios)
that is 3,091 groups, the largest 47 models (an author's Mistral-7B merges). Coarser rules were measured and rejected: the base alone
(arch x size) leaves 835 groups with one of 1,420 models (Mistral-7B, a third of the leaderboard), so a 20 %
test side would swing between 12 % and 45 %; the organisation and name stem alone splits an author's series
whenever a variant's name changes.

The lockbox (:func:`lockbox_mask`) is a fixed grouped share of the models, chosen from the group names with a
fixed key (``"lockbox"``), that development never sees: benchmarks/estimation.py removes it from every split it
tunes or reports on and tests on it once, in its final line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..subsets.voters import model_families, one_family_each
from .splits import model_unit

LOCKBOX_KEY = "lockbox"


def model_groups(models, aggregate: pd.DataFrame | None = None) -> pd.Series:
    """The family key ``<org>|<base>`` per model (the module's rule), a Series indexed by model name; one key per
    model (``<org>|<id>``) when the rule finds a single family for the whole board (then ``attrs["family_rule"]``
    says so)."""
    models = [str(m) for m in models]
    fam = model_families(models, aggregate, each=False).family
    orgs = [m.split("/")[0].lower() if "/" in m else "" for m in models]
    keys = pd.Series(
        [f"{o}|{fam.loc[m]}" for o, m in zip(orgs, models)], index=pd.Index(models, name="model"), name="group"
    )
    each = one_family_each(keys, [f"{o}|{m}" for o, m in zip(orgs, models)])
    if each is not keys:
        each.attrs["family_rule"] = (
            f"one family per model: the family rule put all {len(models)} models in {keys.iloc[0]!r}, "
            "which leaves nothing to split by family"
        )
    return each


def group_summary(groups: pd.Series, top: int = 5) -> dict:
    """Count of groups, models, and the largest groups (for the benchmark's and the asset's report)."""
    sizes = groups.value_counts()
    rule = groups.attrs.get("family_rule")
    return {
        "n_groups": int(len(sizes)),
        "n_models": int(len(groups)),
        "largest": {str(k): int(v) for k, v in sizes.head(top).items()},
        "singletons": int((sizes == 1).sum()),
        **({"family_rule": rule} if rule else {}),
    }


def grouped_test_mask(groups, test_fraction: float, seed) -> np.ndarray:
    """True for models whose whole group is in the test side: ``unit(seed:group) < test_fraction``.

    groups : str per model, shape (n_models,). Returns bool, shape (n_models,). A group's side depends only on
    (seed, group name): adding models never moves a family across, and all of a family goes one way.
    """
    groups = np.asarray(groups, dtype=object)
    uniq, inv = np.unique(groups, return_inverse=True)
    return (model_unit(uniq, seed) < test_fraction)[inv]


def lockbox_mask(groups, fraction: float = 0.1) -> np.ndarray:
    """True for the lockbox models: whole groups with ``unit("lockbox":group) < fraction``. Shape (n_models,)."""
    return grouped_test_mask(groups, fraction, LOCKBOX_KEY)
