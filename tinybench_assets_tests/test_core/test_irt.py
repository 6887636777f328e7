"""Tests of the IRT engine (tinybench_assets.core.irt) and its py-irt backend."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import spearmanr

from tinybench_assets import paths
from tinybench_assets.core.irt import (
    DimensionSelection,
    IRTParams,
    estimate_ability,
    fit_irt,
    item_curve,
    select_dimension,
)
from tinybench_assets.core.irt.model import _prepare
from tinybench_assets.core.irt.objective import _Objective

torch.set_num_threads(1)

DATA = Path(paths.default_data_dir())  # ../shared/data or TINYBENCH_DEFAULT_DATA


def _synthetic(m, i, d, seed, positive_a=True):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((m, d))
    a = rng.lognormal(0.0, 0.3, (i, d)) if positive_a else rng.normal(0.0, 1.0, (i, d))
    b = rng.normal(0.0, 1.2, i)
    p = item_curve(theta, a, b)
    y = (rng.random((m, i)) < p).astype(float)
    return y, theta, a, b, p


@pytest.fixture(scope="module")
def synth1():
    return _synthetic(200, 300, 1, seed=1)


@pytest.fixture(scope="module")
def synth2():
    return _synthetic(200, 300, 2, seed=2)


# --------------------------------------------------------------------------- item_curve
def test_item_curve_matches_formula_and_tinybenchmarks_layout():
    rng = np.random.default_rng(0)
    theta, a, b = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=6)
    p = item_curve(theta, a, b)
    assert p.shape == (4, 6)
    np.testing.assert_allclose(p, expit(theta @ a.T - b), rtol=1e-12)
    np.testing.assert_allclose(item_curve(theta[1], a, b), p[1])
    params = IRTParams(a=a, b=b, theta=theta, loss=0.0, n_iter=0, seconds=0.0, device="cpu", fitter="torch")
    tb = params.to_tinybenchmarks()
    assert tb["A"].shape == (1, 3, 6) and tb["B"].shape == (1, 1, 6) and tb["Theta"].shape == (4, 3, 1)
    # tinyBenchmarks' own curve: sigmoid(sum_d clip(A*Theta - B, -30, 30))
    z = np.clip(tb["A"] * tb["Theta"] - tb["B"], -30, 30).sum(axis=1)
    np.testing.assert_allclose(expit(z), params.predict_proba(), rtol=1e-10)
    np.testing.assert_allclose(item_curve(tb["Theta"], tb["A"], tb["B"]), p, rtol=1e-10)
    assert params.dim == 3


def test_item_curve_extreme_logits_are_finite():
    p = item_curve(np.array([[1000.0], [-1000.0]]), np.array([[1.0]]), np.array([0.0]))
    assert np.all(np.isfinite(p)) and p[0, 0] == 1.0 and p[1, 0] == 0.0


# --------------------------------------------------------------------------- objective
@pytest.mark.parametrize("standardize,learn_means", [(False, False), (True, False), (True, True)])
def test_analytic_gradient_matches_autograd(standardize, learn_means):
    y, *_ = _synthetic(9, 13, 2, seed=3)
    y[0, :4] = np.nan
    for a_prior, a_mean in (("normal", 0.0), ("lognormal", 1.0)):
        y8, m = _prepare(y, None)
        obj = _Objective(
            y8,
            m,
            2,
            theta_sd=1.0,
            standardize=standardize,
            learn_means=learn_means,
            hyper_sd=5.0,
            a_prior=a_prior,
            a_mean=a_mean,
            a_sd=0.7,
            b_sd=2.0,
            chunk_cells=20,
            dtype=torch.float64,
            device="cpu",
        )  # 1-row chunks
        n = 9 * 2 + 13 * 3 + 2 + 1
        x = torch.randn(n, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
        loss, grad = obj(x)
        assert grad.shape == (n,)
        xr = x.clone().requires_grad_(True)
        phi, u, beta = obj.split(xr)
        mu_u, mu_b = obj.hyper(xr)
        center = float(np.log(a_mean)) if a_prior == "lognormal" else a_mean
        # non-centred item parameters
        a = obj.a_of(u + (mu_u if learn_means else center))
        b = beta + mu_b if learn_means else beta
        if standardize:
            mu, var = phi.mean(0), phi.var(0, unbiased=False)
            th = (phi - mu) / torch.sqrt(var + 1e-8)
            theta_prior = 0.5 * 9 * ((mu**2).sum() + ((var - 1) ** 2).sum())  # gauge of the scale
        else:
            th = phi
            theta_prior = 0.5 * (th**2).sum()
        z = th @ a.T - b
        yt, mt = torch.tensor(np.nan_to_num(y)), torch.tensor(~np.isnan(y))
        nll = (torch.nn.functional.binary_cross_entropy_with_logits(z, yt, reduction="none") * mt).sum()
        hyper = 0.5 * ((mu_u - center) ** 2).sum() / 25.0 + 0.5 * (mu_b**2).sum() / 25.0 if learn_means else 0.0
        prior = theta_prior + 0.5 * (u**2).sum() / 0.49 + 0.5 * (beta**2).sum() / 4.0 + hyper
        ref = (nll + prior) / mt.sum()
        ref.backward()
        assert loss == pytest.approx(float(ref.detach()), rel=1e-12)
        torch.testing.assert_close(grad, xr.grad, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- recovery
@pytest.mark.parametrize("dim", [1, 2])
def test_recovers_known_parameters(dim, synth1, synth2):
    y, theta, a, b, p = synth1 if dim == 1 else synth2
    fit = fit_irt(y, dim=dim, seed=0)
    assert fit.a.shape == (300, dim) and fit.b.shape == (300,) and fit.theta.shape == (200, dim)
    assert fit.info["converged"]
    assert spearmanr(fit.b, b)[0] > 0.95
    assert np.corrcoef(fit.predict_proba().ravel(), p.ravel())[0, 1] > 0.95
    if dim == 1:  # ability recovered up to the sign of the (normal-prior) discrimination
        assert abs(spearmanr(fit.theta[:, 0], theta[:, 0])[0]) > 0.95


def test_lognormal_prior_and_adam_reach_similar_fits(synth1):
    y, theta, a, b, p = synth1
    ref = fit_irt(y, dim=1, seed=0)
    ln = fit_irt(y, dim=1, seed=0, a_prior="lognormal", a_mean=1.0, a_sd=0.5)
    assert np.all(ln.a > 0)
    assert spearmanr(ln.theta[:, 0], theta[:, 0])[0] > 0.95  # positive a fixes the sign
    adam = fit_irt(y, dim=1, seed=0, optimizer="adam", max_iter=3000, tol=1e-9)
    assert adam.loss == pytest.approx(ref.loss, abs=2e-4)
    assert np.corrcoef(adam.predict_proba().ravel(), ref.predict_proba().ravel())[0, 1] > 0.999


def test_mask_equals_nan_and_chunking_does_not_change_result(synth2):
    y = synth2[0]
    rng = np.random.default_rng(5)
    hold = rng.random(y.shape) < 0.2
    y_nan = np.where(hold, np.nan, y)
    f_nan = fit_irt(y_nan, dim=2, seed=3, dtype="float64")
    f_mask = fit_irt(y, mask=~hold, dim=2, seed=3, dtype="float64")
    np.testing.assert_allclose(f_mask.b, f_nan.b, atol=1e-10)
    f_chunk = fit_irt(y_nan, dim=2, seed=3, dtype="float64", chunk_cells=1000)  # 3 rows per chunk
    np.testing.assert_allclose(f_chunk.b, f_nan.b, atol=1e-5)
    assert f_chunk.loss == pytest.approx(f_nan.loss, abs=1e-8)
    # held-out cells are predicted better than by item means
    pred = f_nan.predict_proba()[hold]
    item_mean = np.nanmean(y_nan, axis=0)[np.nonzero(hold)[1]]
    ll = lambda q: -np.mean(y[hold] * np.log(q) + (1 - y[hold]) * np.log(1 - q))  # noqa: E731
    assert ll(pred) < ll(np.clip(item_mean, 1e-3, 1 - 1e-3)) - 0.02


def test_determinism(synth2):
    y = synth2[0][:80, :120]
    f1 = fit_irt(y, dim=2, seed=7)
    f2 = fit_irt(y, dim=2, seed=7)
    f3 = fit_irt(y, dim=2, seed=8)
    assert np.array_equal(f1.a, f2.a) and np.array_equal(f1.b, f2.b) and np.array_equal(f1.theta, f2.theta)
    assert f1.loss == f2.loss
    assert not np.array_equal(f1.theta, f3.theta)


# --------------------------------------------------------------------------- stability
def test_degenerate_columns_and_rows_stay_finite():
    y, *_ = _synthetic(40, 60, 2, seed=4)
    y[:, 0] = 1.0  # everyone right
    y[:, 1] = 0.0  # everyone wrong
    y[0, :] = 1.0  # a model right on everything
    y[1, :] = 0.0  # ... and one wrong on everything
    y[2:, 2] = np.nan  # an item answered by two models only
    y[2:5, 3:] = np.nan  # models with few answers
    for d in (1, 2, 5):
        f = fit_irt(y, dim=d, seed=0)
        for arr in (f.a, f.b, f.theta):
            assert np.all(np.isfinite(arr))
        assert f.b[0] < np.median(f.b) < f.b[1]
        assert np.abs(f.theta).max() < 10 and np.abs(f.b).max() < 20
        assert item_curve(f.theta[:1], f.a, f.b).mean() > item_curve(f.theta[1:2], f.a, f.b).mean()


def _routerdc_mmlu():
    path = DATA / "routerdc" / "mmlu_train.json"
    if not path.exists():
        pytest.fail(f"real data not found at {path} (set TINYBENCH_DEFAULT_DATA)")
    recs = json.loads(path.read_text())
    models = sorted(recs[0]["scores"])
    return np.array([[float(r["scores"][m] > 0) for r in recs] for m in models])


def test_small_real_matrix_routerdc_7x2000():
    y = _routerdc_mmlu()
    assert y.shape == (7, 2000)
    losses = {}
    for d in (1, 2, 5, 10):
        f = fit_irt(y, dim=d, seed=0)
        assert np.all(np.isfinite(f.a)) and np.all(np.isfinite(f.b)) and np.all(np.isfinite(f.theta))
        assert np.isfinite(f.loss) and f.info["converged"]
        losses[d] = f.loss
        if d >= 2:  # fitted expected accuracy of each model follows its observed accuracy
            assert spearmanr(f.predict_proba().mean(1), y.mean(1))[0] > 0.9
            np.testing.assert_allclose(f.predict_proba().mean(1), y.mean(1), atol=0.01)
    # more dimensions fit the training cells at least about as well (no stalled optimization)
    assert losses[2] < losses[1] and losses[5] < losses[2] + 1e-3
    # item difficulty follows item accuracy
    assert spearmanr(f.b, -y.mean(0))[0] > 0.9


# --------------------------------------------------------------------------- ability estimation
def _scipy_map(y, w, a, b, prior_sd):
    def f(t):
        z = a @ t - b
        nll = np.sum(w * (np.logaddexp(0, z) - y * z))
        return nll + 0.5 * t @ t / prior_sd**2

    def g(t):
        z = a @ t - b
        return a.T @ (w * (expit(z) - y)) + t / prior_sd**2

    return minimize(f, np.zeros(a.shape[1]), jac=g, method="BFGS", options={"gtol": 1e-10}).x


@pytest.mark.parametrize("dim", [1, 3])
def test_estimate_ability_matches_scipy_per_model(dim):
    rng = np.random.default_rng(10 + dim)
    m, i = 25, 40
    a = rng.normal(0.8, 0.5, (i, dim))
    b = rng.normal(0, 1, i)
    theta = rng.standard_normal((m, dim))
    y = (rng.random((m, i)) < item_curve(theta, a, b)).astype(float)
    y[0] = 1.0  # all correct: finite thanks to the prior
    y[1] = 0.0
    mask = rng.random((m, i)) < 0.7
    mask[2] = False
    mask[2, :3] = True  # three answers only
    prior_sd = 1.3
    est = estimate_ability(y, a, b, mask, prior_sd=prior_sd)
    assert est.shape == (m, dim) and np.all(np.isfinite(est))
    ref = np.stack([_scipy_map(y[k], mask[k].astype(float), a, b, prior_sd) for k in range(m)])
    np.testing.assert_allclose(est, ref, atol=1e-3)
    # NaN means unanswered, same as the mask
    est_nan = estimate_ability(np.where(mask, y, np.nan), a, b, prior_sd=prior_sd)
    np.testing.assert_allclose(est_nan, est, atol=1e-12)
    # batches of 2 models give the same answer
    np.testing.assert_allclose(estimate_ability(y, a, b, mask, prior_sd=prior_sd, chunk_cells=80), est, atol=1e-12)
    # 1-d input is one model
    np.testing.assert_allclose(estimate_ability(y[3], a, b, mask[3], prior_sd=prior_sd), est[3], atol=1e-9)


def test_estimate_ability_recovers_fitted_abilities(synth1):
    y = synth1[0]
    # without standardization, theta of the joint MAP is exactly the MAP given the item parameters
    fit = fit_irt(y, dim=1, seed=0, dtype="float64", tol=1e-12, max_iter=2000, standardize=False)
    est = estimate_ability(y, fit.a, fit.b, prior_sd=1.0)
    np.testing.assert_allclose(est, fit.theta, atol=1e-3)
    # with the default (abilities standardized over the fitted models) the N(0, 1) prior matches
    # the fitted population, so re-estimated abilities stay close to the fitted ones
    fit = fit_irt(y, dim=1, seed=0)
    assert np.abs(fit.theta.mean(0)).max() < 1e-3 and np.abs(fit.theta.std(0) - 1).max() < 1e-3
    est = estimate_ability(y, fit.a, fit.b)
    assert np.corrcoef(est[:, 0], fit.theta[:, 0])[0, 1] > 0.995
    assert np.abs(est - fit.theta).mean() < 0.15


# --------------------------------------------------------------------------- choice of D
def test_select_dimension_reports_every_candidate(synth2):
    y = np.where(np.random.default_rng(0).random(synth2[0].shape) < 0.05, np.nan, synth2[0])
    sel = select_dimension(y, candidates=(1, 2, 3), seed=0)
    assert isinstance(sel, DimensionSelection)
    assert set(sel.errors) == {1, 2, 3} and sel.best_dim in (1, 2, 3)
    assert sel.errors[sel.best_dim] == min(sel.errors.values())
    n_val = len(range(0, 200, 5))
    assert np.array_equal(sel.val_models, np.arange(0, 200, 5))
    assert len(sel.seen_items) + len(sel.unseen_items) == 300
    assert not set(sel.seen_items) & set(sel.unseen_items)
    for d in (1, 2, 3):
        assert sel.per_model_errors[d].shape == (n_val,)
        np.testing.assert_allclose(sel.per_model_errors[d], np.abs(sel.signed_errors[d]))
        assert sel.errors[d] == pytest.approx(sel.per_model_errors[d].mean())
        assert sel.bias[d] == pytest.approx(sel.signed_errors[d].mean())
        assert 0 <= sel.errors[d] < 0.1  # 150 unseen items: accuracy predicted to a few points
    assert sel.best_per_model_errors is sel.per_model_errors[sel.best_dim]


# --------------------------------------------------------------------------- py-irt backend
def test_pyirt_conversion_is_exact():
    from tinybench_assets.core.irt.pyirt import convert_pyirt_params

    rng = np.random.default_rng(0)
    ability, diff, disc = rng.normal(size=(5, 3)), rng.normal(size=(7, 3)), rng.lognormal(size=(7, 3))
    a, b, theta = convert_pyirt_params({"ability": ability.tolist(), "diff": diff.tolist(), "disc": disc.tolist()})
    # py_irt/models/multidim_2pl.py: logits = (disc[items] * (ability[subjects] - diff[items])).sum(-1)
    logits = (disc[None, :, :] * (ability[:, None, :] - diff[None, :, :])).sum(-1)
    np.testing.assert_allclose(theta @ a.T - b, logits, atol=1e-12)


def test_pyirt_backend_runs_and_agrees(synth2):
    y, p = synth2[0][:60, :100], synth2[4][:60, :100]
    ours = fit_irt(y, dim=2, seed=0)
    theirs = fit_irt(y, dim=2, fitter="py-irt", seed=0, epochs=300, lr=0.05)
    assert theirs.fitter == "py-irt" and theirs.n_iter == 300
    assert theirs.a.shape == (100, 2) and theirs.b.shape == (100,) and theirs.theta.shape == (60, 2)
    assert np.all(np.isfinite(theirs.a)) and np.all(np.isfinite(theirs.b)) and np.all(np.isfinite(theirs.theta))
    r = np.corrcoef(theirs.predict_proba().ravel(), ours.predict_proba().ravel())[0, 1]
    assert r > 0.9
    assert np.corrcoef(theirs.predict_proba().ravel(), p.ravel())[0, 1] > 0.85  # both near the truth
    assert np.corrcoef(ours.predict_proba().ravel(), p.ravel())[0, 1] > 0.9


def test_pyirt_default_lr_is_stable_on_routerdc_7x2000():
    """py-irt at the tutorial's lr=0.1 diverges on this matrix; the backend's default must not (2,000 epochs, D=2)."""
    from tinybench_assets.core.irt.pyirt import DEFAULT_LR

    y = _routerdc_mmlu()
    f = fit_irt(y, dim=2, fitter="py-irt", seed=0, epochs=2000)
    assert f.info["lr"] == DEFAULT_LR and f.n_iter == 2000
    assert np.all(np.isfinite(f.a)) and np.all(np.isfinite(f.b)) and np.all(np.isfinite(f.theta))
    # its fit orders the models like their observed accuracy
    assert spearmanr(f.predict_proba().mean(1), y.mean(1))[0] > 0.9


# --------------------------------------------------------------------------- input handling
def test_input_validation_and_dtypes(synth1):
    y = synth1[0][:50, :80]
    with pytest.raises(ValueError):
        fit_irt(np.full((5, 6), 0.5), dim=1)  # scores must be binarized
    with pytest.raises(ValueError):
        fit_irt(np.full((5, 6), 2, dtype=np.int64), dim=1)
    with pytest.raises(ValueError):
        fit_irt(y, mask=np.ones((3, 3), dtype=bool), dim=1)
    with pytest.raises(ValueError):
        fit_irt(np.full((4, 5), np.nan), dim=1)  # nothing observed
    with pytest.raises(TypeError):
        fit_irt(y, dim=1, no_such_option=1)
    ref = fit_irt(y, dim=1, seed=0)
    for arr in (y.astype(np.uint8), y.astype(bool), y.astype(np.int64), y.astype(np.float32)):
        f = fit_irt(arr, dim=1, seed=0)
        np.testing.assert_array_equal(f.b, ref.b)
    y8, m = _prepare(np.array([[1.0, np.nan], [0.0, 1.0]]), np.array([[True, True], [False, True]]))
    np.testing.assert_array_equal(y8, [[1, 0], [0, 1]])
    np.testing.assert_array_equal(m, [[True, False], [False, True]])


def test_the_difficulty_prior_reaches_the_fit(synth1):
    """fit_irt's b_sd is the difficulties' prior spread in the fitted objective: a tight prior pulls them together."""
    y = synth1[0][:60, :80]
    wide, tight = fit_irt(y, dim=1, seed=0), fit_irt(y, dim=1, seed=0, b_sd=0.1)
    assert np.std(tight.b) < 0.5 * np.std(wide.b)
