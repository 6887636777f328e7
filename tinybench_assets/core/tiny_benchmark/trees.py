"""The learned estimators' regressors without pickle: a fitted ``HistGradientBoostingRegressor`` as plain numeric
arrays (:func:`hgb_arrays`, :func:`pack`), the artifact's tree file read safely (:func:`read_tree_file`, no
``np.load``, no pickle, every size checked before anything is allocated), and a pure-numpy evaluator
(:class:`TreeEnsemble`) whose ``predict`` equals ``est.predict`` bit for bit.

sklearn's prediction (``_hist_gradient_boosting/_predictor.pyx``, ``gradient_boosting.py``), which
:class:`TreeEnsemble` repeats: per tree, from the root, a NaN feature value goes to ``left`` if
``missing_go_to_left`` else ``right``, any other value goes left iff ``x <= num_threshold``; at a leaf the
tree's output is the leaf ``value``; the raw prediction is ``baseline`` plus the trees' outputs added one tree
at a time in iteration order (float64), and a squared-error regressor's link is the identity. Categorical
splits, several trees per iteration and non-identity links are refused at export.

Tree file layout (little-endian 1-d arrays in a zip of ``.npy`` members, the ``np.savez_compressed`` layout;
K models, T trees, N nodes; node indices are local to their tree, 0 is the root)::

    baseline (K,) f8, n_trees (K,) i8, n_nodes (T,) i8,
    value (N,) f8 [leaves], feature (N,) i4, threshold (N,) f8, missing_left (N,) u1, left (N,) i4,
    right (N,) i4 [internal nodes], is_leaf (N,) u1

A valid tree has, for every internal node i, ``i < left, right < n_nodes`` (children point forward, so every
path ends at a leaf within n_nodes steps: no cycle can exist) and ``0 <= feature < n_features``.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np

from ...atomic import atomic_write
from .format import ArtifactError

#: the tree file's arrays: name -> (dtype, length: per "model", "tree" or "node")
ARRAYS = {
    "baseline": ("<f8", "model"),
    "n_trees": ("<i8", "model"),
    "n_nodes": ("<i8", "tree"),
    "value": ("<f8", "node"),
    "feature": ("<i4", "node"),
    "threshold": ("<f8", "node"),
    "missing_left": ("|u1", "node"),
    "left": ("<i4", "node"),
    "right": ("<i4", "node"),
    "is_leaf": ("|u1", "node"),
}
#: the answer bank's arrays (``bank_joint``, :mod:`..estimation.bank`): optional members, both present exactly when the
#: JSON's ``learned.bank`` is; F bank models x A anchors (every scenario's, in scenario order) soft answers in [0, 1],
#: F x S scenarios accuracy on the scenario's non-anchor items (NaN: the model never ran it), row-major
BANK_ARRAYS = {"bank_answers": "<f4", "bank_values": "<f8"}
MAX_FILE_BYTES = 256 << 20  # the tree file on disk, and its members uncompressed (openllm n=30: 1.2 / 4.6 MB)
MAX_NODES_PER_TREE = 1 << 24


# ====================================================================== export
def hgb_arrays(est, n_features: int) -> dict:
    """One fitted regressor as {baseline: float, n_nodes: (T,), value, feature, threshold, missing_left, left, right,
    is_leaf: (N,)}; only the fields a prediction reads are kept (leaf fields of internal nodes and split fields
    of leaves are zeroed, which compresses better). Raises ArtifactError for what :class:`TreeEnsemble` cannot
    reproduce (categorical features, a non-identity link, several trees per iteration)."""
    name = type(est).__name__
    if name != "HistGradientBoostingRegressor" or not hasattr(est, "_predictors"):
        raise ArtifactError(f"a learned estimator is a {name}, not a fitted HistGradientBoostingRegressor")
    cat = getattr(est, "is_categorical_", None)
    if getattr(est, "_preprocessor", None) is not None or (cat is not None and np.any(cat)):
        raise ArtifactError("a learned regressor has categorical features: the artifact stores numeric splits only")
    link = type(getattr(getattr(est, "_loss", None), "link", None)).__name__
    if link != "IdentityLink":
        raise ArtifactError(f"a learned regressor's link is {link}, not the identity (use loss='squared_error')")
    if int(est.n_features_in_) != int(n_features):
        raise ArtifactError(
            f"a learned regressor takes {est.n_features_in_} features, the artifact gives it {n_features}"
        )
    nodes = []
    for it in est._predictors:
        if len(it) != 1:
            raise ArtifactError("a learned regressor has several trees per iteration")
        if it[0].nodes["is_categorical"].any():
            raise ArtifactError("a learned regressor has categorical splits")
        nodes.append(it[0].nodes)
    if not nodes:
        raise ArtifactError("a learned regressor has no trees")
    nd = np.concatenate(nodes)
    leaf = nd["is_leaf"].astype(bool)
    split = ~leaf
    return {
        "baseline": float(np.asarray(est._baseline_prediction, dtype=float).ravel()[0]),
        "n_nodes": np.array([len(x) for x in nodes], dtype="<i8"),
        "value": np.where(leaf, nd["value"], 0.0).astype("<f8"),
        "feature": np.where(split, nd["feature_idx"], 0).astype("<i4"),
        "threshold": np.where(split, nd["num_threshold"], 0.0).astype("<f8"),
        "missing_left": np.where(split, nd["missing_go_to_left"], 0).astype("u1"),
        "left": np.where(split, nd["left"], 0).astype("<i4"),
        "right": np.where(split, nd["right"], 0).astype("<i4"),
        "is_leaf": leaf.astype("u1"),
    }


def pack(models: list[dict]) -> dict[str, np.ndarray]:
    """The tree file's arrays (:data:`ARRAYS`) of several :func:`hgb_arrays` models, in order."""
    out = {
        "baseline": np.array([m["baseline"] for m in models], dtype="<f8"),
        "n_trees": np.array([len(m["n_nodes"]) for m in models], dtype="<i8"),
        "n_nodes": np.concatenate([np.zeros(0, "<i8"), *(m["n_nodes"] for m in models)]).astype("<i8"),
    }
    for k, (dt, kind) in ARRAYS.items():
        if kind == "node":
            out[k] = np.concatenate([np.zeros(0, dt), *(m[k] for m in models)]).astype(dt)
    return out


def write_tree_file(arrays: dict[str, np.ndarray], path: Path) -> None:
    """Write the arrays as a compressed ``.npz``, whole or not at all (:func:`~tinybench_assets.atomic.atomic_write`)."""

    def write(tmp: Path) -> None:
        kinds = {**{k: dt for k, (dt, _) in ARRAYS.items()}, **{k: dt for k, dt in BANK_ARRAYS.items() if k in arrays}}
        with open(tmp, "wb") as fh:  # a file object: numpy adds no ".npz" suffix
            np.savez_compressed(fh, **{k: np.ascontiguousarray(arrays[k], dtype=dt) for k, dt in kinds.items()})

    atomic_write(path, write)


# ====================================================================== safe reading
def read_tree_file(path) -> dict[str, np.ndarray]:
    """The arrays of a tree file, read without ``np.load`` and without pickle: the zip's members must be exactly
    the ``.npy`` files of :data:`ARRAYS` (and both or neither of :data:`BANK_ARRAYS`), each a 1-d array of its
    expected plain dtype, and every size (on disk, uncompressed, in the headers) is checked before the bytes are
    read. Raises ArtifactError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"{path}: no such file (the learned estimators' trees)")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ArtifactError(f"{path}: {path.stat().st_size} bytes, more than the {MAX_FILE_BYTES} a tree file may have")
    try:
        with zipfile.ZipFile(path) as zf:
            infos = {i.filename: i for i in zf.infolist()}
            kinds = {k: dt for k, (dt, _) in ARRAYS.items()}
            if any(k + ".npy" in infos for k in BANK_ARRAYS):
                kinds.update(BANK_ARRAYS)
            want = {k + ".npy" for k in kinds}
            if set(infos) != want or len(zf.infolist()) != len(want):
                extra, missing = sorted(set(infos) - want), sorted(want - set(infos))
                raise ArtifactError(
                    f"{path}: members {extra or ''} unexpected, {missing or ''} missing (or a member appears twice)"
                )
            total = sum(i.file_size for i in infos.values())
            if total > MAX_FILE_BYTES:
                raise ArtifactError(f"{path}: its members claim {total} bytes uncompressed, more than {MAX_FILE_BYTES}")
            return {k: _read_member(zf, infos[k + ".npy"], dt, path) for k, dt in kinds.items()}
    except ArtifactError:
        raise
    except (
        zipfile.BadZipFile,
        zlib.error,
        OSError,
        EOFError,
        ValueError,
        NotImplementedError,
        RuntimeError,
        SyntaxError,
    ) as e:
        raise ArtifactError(f"{path}: not a readable tree file ({type(e).__name__}: {e})") from None


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dtype: str, path: Path) -> np.ndarray:
    name = info.filename
    with zf.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dt = np.lib.format.read_array_header_1_0(fh, max_header_size=1000)
        elif version == (2, 0):
            shape, fortran, dt = np.lib.format.read_array_header_2_0(fh, max_header_size=1000)
        else:
            raise ArtifactError(f"{path}: {name}: unsupported .npy version {version}")
        if dt.str != np.dtype(dtype).str or dt.hasobject or dt.fields is not None:
            raise ArtifactError(f"{path}: {name}: dtype {dt.str}, expected {np.dtype(dtype).str}")
        if len(shape) != 1:
            raise ArtifactError(f"{path}: {name}: shape {shape}, expected a 1-d array")
        nbytes = int(shape[0]) * dt.itemsize
        if nbytes > info.file_size:
            raise ArtifactError(f"{path}: {name}: the header claims {shape[0]} values, more than the member holds")
        data = fh.read(nbytes)
    if len(data) != nbytes:
        raise ArtifactError(f"{path}: {name}: truncated ({len(data)} of {nbytes} bytes)")
    return np.frombuffer(data, dtype=dt).copy()


# ====================================================================== validation and evaluation
def _fail(path, msg):
    raise ArtifactError(f"{path}: {msg}")


def ensembles(arrays: dict[str, np.ndarray], n_features: list[int], path) -> list["TreeEnsemble"]:
    """Check the arrays of a tree file against the artifact's model list (``n_features[k]`` of model k) and
    split them into one :class:`TreeEnsemble` per model. Raises ArtifactError naming ``path`` and the problem."""
    a = arrays
    K = len(n_features)
    for k, (dt, _kind) in ARRAYS.items():
        if a[k].dtype.str != np.dtype(dt).str or a[k].ndim != 1:
            _fail(path, f"{k}: dtype {a[k].dtype.str} / {a[k].ndim}-d, expected a 1-d {dt} array")
    if len(a["baseline"]) != K or len(a["n_trees"]) != K:
        _fail(
            path, f"{len(a['baseline'])} baselines / {len(a['n_trees'])} tree counts for the {K} models the JSON lists"
        )
    if not np.isfinite(a["baseline"]).all():
        _fail(path, "baseline: not finite")
    n_trees, n_nodes = a["n_trees"], a["n_nodes"]
    if (n_trees < 1).any() or (n_trees > len(n_nodes)).any() or int(n_trees.sum()) != len(n_nodes):
        _fail(path, f"n_trees: counts must be >= 1 and sum to the {len(n_nodes)} entries of n_nodes")
    if (n_nodes < 1).any() or (n_nodes > MAX_NODES_PER_TREE).any():
        _fail(path, f"n_nodes: every tree must have 1..{MAX_NODES_PER_TREE} nodes")
    N = int(n_nodes.sum())
    for k, (_, kind) in ARRAYS.items():
        if kind == "node" and len(a[k]) != N:
            _fail(path, f"{k}: {len(a[k])} entries, the trees have {N} nodes")
    for k in ("is_leaf", "missing_left"):
        if (a[k] > 1).any():
            _fail(path, f"{k}: values other than 0 / 1")
    leaf = a["is_leaf"].astype(bool)
    split = ~leaf
    tree_of = np.repeat(np.arange(len(n_nodes)), n_nodes)
    start = np.concatenate([[0], np.cumsum(n_nodes)[:-1]])
    local = np.arange(N) - start[tree_of]
    size = n_nodes[tree_of]
    for k in ("left", "right"):
        c = a[k].astype(np.int64)
        bad = split & ~((c > local) & (c < size))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            _fail(
                path,
                f"{k}: node {local[i]} of tree {tree_of[i]} points to {c[i]}: children must lie after their "
                f"node and inside the tree's {size[i]} nodes",
            )
    model_of_tree = np.repeat(np.arange(K), n_trees)
    nf = np.asarray(n_features, dtype=np.int64)[model_of_tree[tree_of]]
    bad = split & ~((a["feature"] >= 0) & (a["feature"] < nf))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        _fail(
            path,
            f"feature: node {local[i]} of tree {tree_of[i]} splits on feature {a['feature'][i]}, the model "
            f"has {nf[i]} features",
        )
    if np.isnan(a["threshold"][split]).any():
        _fail(path, "threshold: NaN in a split")
    if not np.isfinite(a["value"][leaf]).all():
        _fail(path, "value: a leaf value is not finite")
    out, t0 = [], 0
    for m in range(K):
        t1 = t0 + int(n_trees[m])
        lo, hi = int(start[t0]), int(start[t1 - 1] + n_nodes[t1 - 1])
        out.append(
            TreeEnsemble(
                float(a["baseline"][m]),
                int(n_features[m]),
                start[t0:t1] - lo,
                {k: a[k][lo:hi] for k in ("value", "feature", "threshold", "missing_left", "left", "right", "is_leaf")},
                int(n_nodes[t0:t1].max()),
            )
        )
        t0 = t1
    return out


def bank_tables(arrays: dict[str, np.ndarray], F: int, A: int, S: int, path) -> tuple[np.ndarray, np.ndarray]:
    """The answer bank's (answers (F, A), values (F, S)) from a tree file's arrays, checked against the JSON's sizes:
    answers finite in [0, 1], values NaN or in [0, 1], every scenario with at least one value. Raises ArtifactError."""
    for k, dt in BANK_ARRAYS.items():
        if k not in arrays:
            _fail(path, f"{k}: missing, but the JSON's learned.bank lists an answer bank")
        if arrays[k].dtype.str != np.dtype(dt).str or arrays[k].ndim != 1:
            _fail(path, f"{k}: dtype {arrays[k].dtype.str} / {arrays[k].ndim}-d, expected a 1-d {dt} array")
    ans, val = arrays["bank_answers"], arrays["bank_values"]
    if len(ans) != F * A or len(val) != F * S:
        _fail(
            path,
            f"bank_answers / bank_values: {len(ans)} / {len(val)} values, the JSON's bank needs {F} models x "
            f"{A} anchors / x {S} scenarios",
        )
    if not (np.isfinite(ans).all() and (ans >= 0).all() and (ans <= 1).all()):
        _fail(path, "bank_answers: values outside [0, 1]")
    val = val.reshape(F, S)
    fin = np.isfinite(val)
    if np.isinf(val).any() or (val[fin] < 0).any() or (val[fin] > 1).any() or not fin.any(0).all():
        _fail(path, "bank_values: values outside [0, 1], or a scenario without any")
    return ans.reshape(F, A), val


class TreeEnsemble:
    """One boosted regressor from arrays checked by :func:`ensembles` (build it through that function):
    ``predict(X)`` equals sklearn's ``est.predict(X)`` exactly."""

    def __init__(self, baseline: float, n_features: int, roots: np.ndarray, nodes: dict, max_nodes: int):
        self.baseline, self.n_features, self.max_nodes = baseline, n_features, max_nodes
        self.roots = np.asarray(roots, dtype=np.int64)
        leaf = nodes["is_leaf"].astype(bool)
        here = np.arange(len(leaf))
        tree_start = np.repeat(self.roots, np.diff(np.append(self.roots, len(leaf))))
        self.leaf, self.value, self.threshold = leaf, nodes["value"], nodes["threshold"]
        self.feature = np.where(leaf, 0, nodes["feature"]).astype(np.int64)
        self.missing_left = nodes["missing_left"].astype(bool)
        # global child indices; a leaf points to itself
        self.left = np.where(leaf, here, tree_start + nodes["left"]).astype(np.int64)
        self.right = np.where(leaf, here, tree_start + nodes["right"]).astype(np.int64)

    def predict(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X has shape {X.shape}, the regressor takes {self.n_features} features")
        M = X.shape[0]
        node = np.broadcast_to(self.roots, (M, len(self.roots))).copy()
        rows = np.arange(M)[:, None]
        for _ in range(self.max_nodes):  # every step moves forward inside its tree: at most max_nodes steps
            if self.leaf[node].all():
                break
            x = X[rows, self.feature[node]]
            go_left = np.where(np.isnan(x), self.missing_left[node], x <= self.threshold[node])
            node = np.where(go_left, self.left[node], self.right[node])
        # sklearn: raw = 0 + baseline, then += each tree's output in order (a sequential float64 sum)
        parts = np.concatenate([np.full((M, 1), self.baseline), self.value[node]], axis=1)
        return np.cumsum(parts, axis=1)[:, -1] if M else np.zeros(0)
