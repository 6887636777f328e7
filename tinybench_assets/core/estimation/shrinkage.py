"""Shrinkage toward what the board's models score: normal-normal empirical Bayes for small boards.

A new model's stratified anchor estimates ``x`` (one per scenario) are noisy measurements of its accuracies
``t``; the board's models say where accuracies lie and how scenarios move together. With the prior
``t ~ N(mu, Sigma)`` (mean and covariance of the training models' accuracies, the covariance shrunk by Ledoit-Wolf
on standardized scores) and the noise ``x | t ~ N(t, diag(v))`` (``v``: the mean squared error of the anchor
estimate on the training models), the posterior mean is ``mu + Sigma (Sigma + V)^-1 (x - mu)``:

* ``shrunk``: one scenario at a time (``Sigma`` diagonal), the classic normal-normal shrinkage;
* ``shrunk_joint``: every answered scenario at once, so 30 answers on bbh also inform mmlu_pro through the
  board's correlation between them (a scenario the model did not answer is left out of the conditioning).

:class:`ShrinkagePrior` holds ``mu``, ``Sigma`` and ``v`` (fitted on training models only; they travel in the tiny
benchmark's JSON) and computes both estimates. Pure numpy / scikit-learn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ShrinkagePrior", "SHRINKAGE"]

SHRINKAGE = ("shrunk", "shrunk_joint")
MIN_VAR = 1e-6  # floor of a prior or noise variance (accuracy units squared)


@dataclass
class ShrinkagePrior:
    """Normal prior over a board's scenario accuracies and the anchor estimates' noise (module docstring).

    Attributes
    ----------
    scenarios : [S] names; mean : (S,); cov : (S, S) prior covariance; noise : (S,) noise variance per scenario.
    """

    scenarios: list
    mean: np.ndarray
    cov: np.ndarray
    noise: np.ndarray

    @classmethod
    def fit(cls, truth, estimate, scenarios) -> "ShrinkagePrior":
        """Fit on training models: ``truth`` (M, S) their accuracies, ``estimate`` (M, S) their anchor estimates
        (NaN = not answered). The covariance comes from the models that answered every scenario (Ledoit-Wolf on
        standardized scores); with fewer than three of them it is diagonal."""
        from sklearn.covariance import ledoit_wolf

        T, X = np.asarray(truth, dtype=float), np.asarray(estimate, dtype=float)
        S = T.shape[1]
        mu = np.array([np.nanmean(T[:, j]) if np.isfinite(T[:, j]).any() else 0.5 for j in range(S)])
        sd = np.array([np.nanstd(T[:, j], ddof=1) if np.isfinite(T[:, j]).sum() > 1 else 0.0 for j in range(S)])
        sd = np.sqrt(np.maximum(np.nan_to_num(sd) ** 2, MIN_VAR))
        full = np.isfinite(T).all(1)
        if full.sum() >= 3 and S > 1:
            Z = (T[full] - mu) / sd
            corr = ledoit_wolf(Z, assume_centered=True)[0]
            d = np.sqrt(np.diag(corr))
            cov = (corr / np.outer(d, d)) * np.outer(sd, sd)
        else:
            cov = np.diag(sd**2)
        ok = np.isfinite(T) & np.isfinite(X)
        noise = np.array(
            [np.mean((X[ok[:, j], j] - T[ok[:, j], j]) ** 2) if ok[:, j].any() else np.inf for j in range(S)]
        )
        return cls(list(scenarios), mu, cov, np.maximum(noise, MIN_VAR))

    def estimate(self, x) -> dict:
        """Posterior means of rows ``x`` (M, S) of anchor estimates (NaN = scenario not answered): {"shrunk",
        "shrunk_joint": (M, S)} clipped to [0, 1], NaN where the row did not answer the scenario."""
        X = np.atleast_2d(np.asarray(x, dtype=float))
        mu, C, v = self.mean, self.cov, self.noise
        var = np.diag(C)
        uni = mu + var / (var + v) * (X - mu)
        joint = np.full_like(X, np.nan)
        seen = np.isfinite(X)
        for pattern in {tuple(r) for r in seen}:
            rows, obs = (seen == pattern).all(1), np.asarray(pattern)
            if not obs.any():
                continue
            K = C[:, obs] @ np.linalg.inv(C[np.ix_(obs, obs)] + np.diag(v[obs]))
            joint[rows] = mu + (X[np.ix_(rows, obs)] - mu[obs]) @ K.T
        joint = np.where(seen, joint, np.nan)
        return {"shrunk": np.clip(uni, 0, 1), "shrunk_joint": np.clip(joint, 0, 1)}

    def to_json(self) -> dict:
        return {
            "scenarios": list(self.scenarios),
            "mean": [float(m) for m in self.mean],
            "cov": [[float(c) for c in row] for row in self.cov],
            "noise": [float(v) for v in self.noise],
        }
