"""py-irt 0.7.1 ``multidim_2pl`` through its Python API, for parity checks with the torch fitter.

py-irt's model (py_irt/models/multidim_2pl.py) is::

    logit_ij = sum_d disc_jd * (theta_id - diff_jd)

with ``disc`` exported as ``exp(loc_disc)``. Expanding gives exactly our parameterization
``logit_ij = sum_d a_jd * theta_id - b_j`` with ``a = disc`` and ``b_j = sum_d disc_jd * diff_jd``.

Pure numpy / torch / pyro: no Dagster or DuckDB here.
"""

from __future__ import annotations

import math
import random
import time

import numpy as np
import torch

from .model import IRTParams, _prepare

__all__ = ["fit_pyirt", "convert_pyirt_params", "DEFAULT_LR"]

# py-irt's tutorial uses lr=0.1. Measured with 2,000 epochs (benchmarks/irt_fit.py): lr=0.1 gave
# NaN on RouterDC MMLU 7 x 2,000 (D=2 and D=5), on a synthetic 300 x 5,000 (D=2) and on
# truthfulqa (D=2); lr=0.03 gave NaN on RouterDC at D=5; lr=0.02 and 0.01 never did, and 0.01
# under-fits (held-out log-loss 0.520 vs 0.518 at 0.02 on the synthetic matrix, 0.277 vs 0.262 on
# arc). Hence 0.02: the largest rate that was stable everywhere we measured.
DEFAULT_LR = 0.02


def convert_pyirt_params(exported: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Turn py-irt's exported ``{"ability", "diff", "disc"}`` into (a, b, theta).

    Parameters
    ----------
    exported : dict with ``ability`` (M, D), ``diff`` (I, D), ``disc`` (I, D) nested lists
        (``disc`` already exponentiated, as ``Multidim2PL.export`` returns it).

    Returns
    -------
    a : ndarray (I, D), b : ndarray (I,), theta : ndarray (M, D) with
    ``sum_d disc_jd (theta_id - diff_jd) == theta_i @ a_j - b_j``.
    """
    theta = np.asarray(exported["ability"], dtype=float)
    diff = np.asarray(exported["diff"], dtype=float)
    disc = np.asarray(exported["disc"], dtype=float)
    if theta.ndim == 1:
        theta = theta[:, None]
    if diff.ndim == 1:
        diff = diff[:, None]
    if disc.ndim == 1:
        disc = disc[:, None]
    a = disc
    b = (disc * diff).sum(axis=1)
    return a, b, theta


def _dataset(y8: np.ndarray, m: np.ndarray | None):
    from ordered_set import OrderedSet
    from py_irt.dataset import Dataset

    M, I = y8.shape
    if m is None:
        subj, item = np.divmod(np.arange(M * I), I)
    else:
        subj, item = np.nonzero(m)
    obs = y8[subj, item].astype(float)
    item_names = [str(j) for j in range(I)]
    subj_names = [str(i) for i in range(M)]
    # model_construct skips pydantic validation of the (possibly millions of) observations
    return Dataset.model_construct(
        item_ids=OrderedSet(item_names),
        subject_ids=OrderedSet(subj_names),
        item_id_to_ix={n: j for j, n in enumerate(item_names)},
        ix_to_item_id={j: n for j, n in enumerate(item_names)},
        subject_id_to_ix={n: i for i, n in enumerate(subj_names)},
        ix_to_subject_id={i: n for i, n in enumerate(subj_names)},
        observation_subjects=subj.tolist(),
        observation_items=item.tolist(),
        observations=obs.tolist(),
        training_example=[True] * len(obs),
        anchor_items=None,
    )


def _train(trainer, epochs: int, device: str, verbose: bool, what: str) -> None:
    """py-irt's training, its console quiet unless verbose; a NaN divergence raised as FloatingPointError."""
    import py_irt.anchor_utils as _au

    quiet = _au.console.quiet
    _au.console.quiet = not verbose
    try:
        trainer.train(epochs=epochs, device=device)
    except ValueError as e:  # pyro's argument validation trips on NaN parameters
        if "nan" in str(e).lower():
            raise FloatingPointError(f"py-irt multidim_2pl diverged (NaN) with {what}") from e
        raise
    finally:
        _au.console.quiet = quiet


def _final_elbo(trainer, ds, device: str) -> float:
    """The final ELBO loss, recomputed once (py-irt does not keep it)."""
    import pyro

    loss_fn = pyro.infer.Trace_ELBO()
    dev = torch.device(device)
    subjects = torch.tensor(ds.observation_subjects, dtype=torch.long, device=dev)
    items = torch.tensor(ds.observation_items, dtype=torch.long, device=dev)
    responses = torch.tensor(ds.observations, dtype=torch.float, device=dev)
    with torch.no_grad():
        return float(loss_fn.loss(trainer._pyro_model, trainer._pyro_guide, subjects, items, responses))


def _seeded_fit(
    ds, dim: int, epochs: int, lr: float, lr_decay: float, seed: int, device: str, use: str, verbose: bool
) -> tuple[dict, float, float]:
    """(exported parameters, final ELBO loss, training seconds) of py-irt's ``multidim_2pl`` trained on ``ds`` with
    pyro seeded by ``seed``; the global random, numpy and torch RNG states are restored afterwards."""
    import pyro
    from py_irt.config import IrtConfig
    from py_irt.training import IrtModelTrainer

    py_state, np_state, torch_state = random.getstate(), np.random.get_state(), torch.random.get_rng_state()
    try:
        pyro.set_rng_seed(seed)
        config = IrtConfig(
            model_type="multidim_2pl",
            epochs=epochs,
            dims=int(dim),
            lr=lr,
            lr_decay=lr_decay,
            seed=seed,
            log_every=max(1, epochs),
        )
        trainer = IrtModelTrainer(data_path=None, config=config, dataset=ds, verbose=verbose)
        t1 = time.perf_counter()
        _train(trainer, epochs, device, verbose, f"lr={lr}, D={dim}")
        t_train = time.perf_counter() - t1
        params = trainer.best_params if use == "best" else trainer.last_params
        if params is None:
            params = trainer.last_params
        return params, _final_elbo(trainer, ds, device), t_train
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        torch.random.set_rng_state(torch_state)


def fit_pyirt(
    Y,
    mask=None,
    dim: int = 2,
    *,
    epochs: int = 2000,
    lr: float = DEFAULT_LR,
    lr_decay: float = 0.9999,
    seed: int = 0,
    device: str = "cpu",
    use: str = "best",
    verbose: bool = False,
) -> IRTParams:
    """Fit py-irt's ``multidim_2pl`` (hierarchical priors, Pyro SVI, Adam) and convert it.

    Parameters
    ----------
    Y : array-like, shape (M, I) -- 0/1 responses, NaN = missing.
    mask : bool array (M, I), optional -- True = observed.
    dim : int -- dimensions D.
    epochs : int -- SVI steps (the tinyBenchmarks tutorial uses 2000).
    lr : float -- Adam learning rate (tutorial: 0.1, which diverges on several matrices; default
        0.02, see ``DEFAULT_LR``).
    lr_decay : float -- per-epoch exponential decay (py-irt default 0.9999).
    seed : int -- seeds pyro / torch / numpy / random (global RNG states restored afterwards).
    device : str -- torch device.
    use : {"best", "last"} -- the parameters at the lowest ELBO loss seen (what py-irt writes to
        best_parameters.json and tinyBenchmarks reads) or those after the last epoch.

    Returns
    -------
    IRTParams with fitter="py-irt", ``loss`` = final ELBO loss, ``n_iter`` = epochs.
    """
    y8, m = _prepare(Y, mask)
    M, I = y8.shape
    t0 = time.perf_counter()
    ds = _dataset(y8, m)
    t_data = time.perf_counter() - t0
    params, elbo, t_train = _seeded_fit(ds, dim, epochs, lr, lr_decay, seed, device, use, verbose)
    a, b, theta = convert_pyirt_params(params)
    finite = np.isfinite(a).all() and np.isfinite(b).all() and np.isfinite(theta).all()
    if not finite:
        raise FloatingPointError(f"py-irt multidim_2pl returned non-finite parameters (lr={lr}, D={dim})")
    if theta.shape != (M, int(dim)) or a.shape != (I, int(dim)):
        raise RuntimeError(f"py-irt returned shapes theta {theta.shape}, a {a.shape}")
    return IRTParams(
        a=a,
        b=b,
        theta=theta,
        loss=elbo if math.isfinite(elbo) else float("nan"),
        n_iter=int(epochs),
        seconds=time.perf_counter() - t0,
        device=str(device),
        fitter="py-irt",
        info={
            "lr": lr,
            "lr_decay": lr_decay,
            "epochs": epochs,
            "use": use,
            "finite": bool(finite),
            "train_seconds": t_train,
            "data_seconds": t_data,
            "seed": seed,
        },
    )
