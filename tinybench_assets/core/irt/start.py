"""Deterministic starting point of the fit: item intercepts from smoothed accuracies, abilities and
discriminations from a seeded randomized SVD of the centred response matrix."""

from __future__ import annotations

import numpy as np
import torch

from .objective import _Objective


def _svd_start(obj: _Objective, p_item: np.ndarray, g: np.random.Generator, oversample: int = 6, n_power: int = 1):
    """Seeded randomized SVD of the item-centred 0/1 matrix (missing cells 0), in row chunks.

    Returns theta0 (M, D) with unit-variance columns and a0 (I, D) on the logit scale
    (probability loadings divided by p_j (1 - p_j)), or (None, None) when degenerate.
    """
    M, I, D = obj.M, obj.I, obj.D
    k = min(D + oversample, M, I)
    if k < D:
        return None, None
    dt = torch.float64
    pbar = torch.tensor(p_item, dtype=dt, device=obj.device)

    def rows(r0, r1):  # centred residual block: obs * ((1 - S) / 2 - pbar)
        sc = obj.s[r0:r1].to(dt)
        return (sc != 0).to(dt) * ((1.0 - sc) / 2.0 - pbar)

    def r_times(mat):  # R @ mat, (M, k)
        return torch.cat([rows(r0, min(M, r0 + obj.rows)) @ mat for r0 in range(0, M, obj.rows)])

    def rt_times(mat):  # R.T @ mat, (I, k)
        out = torch.zeros(I, mat.shape[1], dtype=dt, device=obj.device)
        for r0 in range(0, M, obj.rows):
            r1 = min(M, r0 + obj.rows)
            out += rows(r0, r1).T @ mat[r0:r1]
        return out

    omega = torch.tensor(g.standard_normal((I, k)), dtype=dt, device=obj.device)
    q = torch.linalg.qr(r_times(omega))[0]
    for _ in range(n_power):
        q = torch.linalg.qr(rt_times(q))[0]
        q = torch.linalg.qr(r_times(q))[0]
    bt = rt_times(q)  # (I, k) = R.T Q
    ub, sv, vt = torch.linalg.svd(bt.T, full_matrices=False)
    u = (q @ ub)[:, :D]
    v = vt[:D].T
    sv = sv[:D]
    if not bool(torch.isfinite(sv).all()) or float(sv.min()) <= 1e-9:
        return None, None
    sd = u.std(0, unbiased=False).clamp_min(1e-12)
    theta0 = ((u - u.mean(0)) / sd).cpu().numpy()
    load = (v * sv * sd).cpu().numpy()  # probability loadings per unit of theta0
    a0 = load / np.clip(p_item * (1 - p_item), 0.05, None)[:, None]
    flip = np.sign(a0.mean(axis=0))
    flip[flip == 0] = 1.0
    return theta0 * flip, a0 * flip


def _init_x(obj: _Objective, y8, m, seed, dtype, device, init_scale=0.1, init="svd"):
    """Deterministic start: b from smoothed item accuracy; theta and a from a seeded randomized
    SVD of the centred response matrix (``init="svd"``) or from the model accuracies plus small
    seeded noise (``init="accuracy"``)."""
    M, I, D = obj.M, obj.I, obj.D
    if m is None:
        correct = y8.sum(axis=0, dtype=np.float64)
        count = np.full(I, float(M))
    else:
        correct = (y8 & m).sum(axis=0, dtype=np.float64)
        count = m.sum(axis=0, dtype=np.float64)
    p = (correct + 0.5) / (count + 1.0)
    b0 = -np.log(p / (1 - p))
    b0 = np.clip(b0, -3 * obj.b_sd, 3 * obj.b_sd)
    g = np.random.default_rng(seed)
    # abilities start at the (standardized) mean centred logit accuracy of each model plus noise,
    # discriminations at a positive constant plus noise, so dimension 1 starts as a "general" factor.
    if m is None:
        acc = y8.mean(axis=1, dtype=np.float64) + 1e-3
    else:
        acc = ((y8 & m).sum(axis=1, dtype=np.float64) + 0.5) / (m.sum(axis=1, dtype=np.float64) + 1.0)
    acc = np.clip(acc, 1e-3, 1 - 1e-3)
    la = np.log(acc / (1 - acc))
    la = (la - la.mean()) / (la.std() + 1e-9)
    theta0 = init_scale * g.standard_normal((M, D))
    theta0[:, 0] += la
    a0 = init_scale * g.standard_normal((I, D))
    a0[:, 0] += 1.0
    if init == "svd":
        th_s, a_s = _svd_start(obj, p, g)
        if th_s is not None:
            theta0, a0 = th_s, a_s
    if obj.a_prior == "lognormal":
        u0 = np.log(np.abs(a0) + 0.05)
    else:
        u0 = a0
    if obj.learn_means:
        mu_u0, mu_b0 = u0.mean(axis=0), np.array([b0.mean()])
    else:
        mu_u0, mu_b0 = np.full(D, obj.u_center()), np.zeros(1)
    x0 = np.concatenate([theta0.ravel(), (u0 - mu_u0).ravel(), b0 - mu_b0, mu_u0, mu_b0])
    return torch.tensor(x0, dtype=torch.float64, device=device)
