"""Calibrated routers: per-model Platt scaling fitted on out-of-fold P only, composed onto any router."""

import numpy as np
import pytest

from tinybench_assets.core.routing.calibrated import CalibratedRouter, PlattCalibrator, crossfit_calibrated
from tinybench_assets.core.routing.routers import KNNIRTRouter, KNNVoteRouter
from tinybench_assets.core.routing.saved import load_router, save_router
from tinybench_assets.core.routing.select import select_router

from .test_routing import clustered


def _logloss(P, Y):
    P = np.clip(P, 1e-9, 1 - 1e-9)
    return float(-np.mean(Y * np.log(P) + (1 - Y) * np.log(1 - P)))


def test_platt_undoes_a_known_per_model_distortion():
    """Model 0 reports over-confident P, model 1 shifted-up P, model 2 the truth: the fitted map recovers the true
    probabilities (model 2's map stays near the identity) and lowers the log-loss on fresh answers."""
    g = np.random.default_rng(0)
    n = 4000
    true = g.uniform(0.05, 0.95, size=(n, 3))
    z = np.log(true / (1 - true))
    reported = 1 / (1 + np.exp(-np.column_stack([2.5 * z[:, 0], z[:, 1] + 1.5, z[:, 2]])))
    Y = (g.random(true.shape) < true).astype(float)
    cal = PlattCalibrator().fit(reported, Y)
    assert cal.slope_ == pytest.approx([0.4, 1.0, 1.0], abs=0.1)
    assert cal.intercept_ == pytest.approx([0.0, -1.5, 0.0], abs=0.15)
    Y2 = (g.random(true.shape) < true).astype(float)
    fixed = cal.transform(reported)
    assert np.abs(fixed - true).mean() < 0.03
    assert _logloss(fixed[:, :2], Y2[:, :2]) < _logloss(reported[:, :2], Y2[:, :2]) - 0.02
    # missing answers are skipped; a model with none keeps the identity map
    Ym = Y.copy()
    Ym[:, 2] = np.nan
    assert PlattCalibrator().fit(reported, Ym).slope_[2] == pytest.approx(1.0)


def test_crossfit_calibration_never_sees_the_fold_it_maps():
    """Fold f's calibrated P depend on the other folds' answers only: rewriting fold 0's answers moves nothing in it."""
    g = np.random.default_rng(1)
    P = g.uniform(0.1, 0.9, size=(300, 2))
    Y = (g.random(P.shape) < P).astype(float)
    fold = np.arange(300) % 3
    a = crossfit_calibrated(P, Y, fold)
    Y2 = Y.copy()
    Y2[fold == 0] = 1 - Y2[fold == 0]
    b = crossfit_calibrated(P, Y2, fold)
    assert np.array_equal(a[fold == 0], b[fold == 0]) and not np.allclose(a[fold != 0], b[fold != 0])


def test_calibrated_router_fits_its_own_calibrator_out_of_fold_and_saves(tmp_path):
    E, Y, _ = clustered(seed=0)
    r = CalibratedRouter(KNNVoteRouter(k=10), n_folds=3).fit(E, Y)
    assert r.calibrator.slope_.shape == (3,) and np.isfinite(r.calibrator.intercept_).all()
    Et, _, _ = clustered(seed=1)
    P = r.predict_proba(Et)
    assert P.shape == (len(Et), 3) and ((P > 0) & (P < 1)).all()
    save_router(r, tmp_path / "cal.npz", {"partition": "toy"})
    back, meta = load_router(tmp_path / "cal.npz")
    assert isinstance(back, CalibratedRouter) and meta["partition"] == "toy"
    assert np.allclose(back.predict_proba(Et), P)


def test_selection_offers_the_calibrated_knn_irt_family():
    """knn_irt_cal is scored on cross-fitted calibrated out-of-fold P of every knn_irt configuration; the router it
    makes carries the calibrator fitted on all of them, so fitting it fits only the base."""
    E, Y, _ = clustered(seed=0)
    grid = {"knn_irt": {"dim": [1], "k": [10, 20]}}
    sel = select_router(E, Y, families=["best_single", "knn_irt", "knn_irt_cal"], n_folds=3, n_boot=50, grid=grid)
    assert {"knn_irt", "knn_irt_cal"} <= set(sel.best) and {"best_single", "knn_irt", "knn_irt_cal"} <= set(
        sel.table["family"]
    )
    assert not np.allclose(sel.oof["knn_irt"], sel.oof["knn_irt_cal"])
    r = sel.make("knn_irt_cal")
    assert (
        isinstance(r, CalibratedRouter)
        and isinstance(r.base, KNNIRTRouter)
        and r.calibrator is sel.calibrators["knn_irt_cal"]
    )
    slope = r.calibrator.slope_.copy()
    r.fit(E, Y)
    assert np.array_equal(r.calibrator.slope_, slope)  # the prefitted calibrator is kept
    with pytest.raises(ValueError, match="unknown router families"):
        select_router(E, Y, families=["best_single", "knn_magic"], n_folds=3)


def test_a_calibrated_router_reuses_a_fitted_base():
    """router_accuracy composes knn_irt_cal from the knn_irt router it already fitted when their configurations match:
    the same P as fitting the calibrated router, with no second IRT fit."""
    E, Y, _ = clustered(seed=0)
    Et, _, _ = clustered(seed=1)
    sel = select_router(
        E,
        Y,
        families=["best_single", "knn_irt", "knn_irt_cal"],
        n_folds=3,
        n_boot=50,
        grid={"knn_irt": {"dim": [1], "k": [10]}},
    )
    fresh = sel.make("knn_irt_cal").fit(E, Y)
    reused = CalibratedRouter.of_fitted(sel.make("knn_irt").fit(E, Y), sel.calibrators["knn_irt_cal"], Y)
    assert np.allclose(reused.predict_proba(Et), fresh.predict_proba(Et))
