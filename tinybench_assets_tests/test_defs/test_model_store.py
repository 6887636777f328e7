"""The ModelStore resource: where saved models live, atomic saves, a clear message for a missing model, and no path
outside its root from a hand-typed partition key."""

import pickle

import pytest

from tinybench_assets.defs.resources import ModelStore
from tinybench_assets.io.model_files import (
    MissingModelError,
    OutdatedModelError,
    UnsafeNameError,
    atomic_write,
    safe_name,
)


def test_paths_and_default_root(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(tmp_path / "env_root"))
    ms = ModelStore()  # root "": the environment's artifacts folder, read when used
    assert ms.path("openllm", "predictor.pkl") == tmp_path / "env_root" / "openllm" / "predictor.pkl"
    monkeypatch.setenv("TINYBENCH_ARTIFACTS", str(tmp_path / "later"))
    assert ms.folder("openllm") == tmp_path / "later" / "openllm"
    assert ms.router_path("routerdc.mmlu") == tmp_path / "later" / "routerdc" / "router_mmlu.npz"
    assert ModelStore(root=str(tmp_path / "own")).path("b", "m.pkl") == tmp_path / "own" / "b" / "m.pkl"


def test_save_and_load_pickle_round_trip_atomically(tmp_path):
    ms = ModelStore(root=str(tmp_path))
    path = ms.save_predictor("openllm", {"weights": [1, 2, 3]})
    assert path == tmp_path / "openllm" / "predictor.pkl"
    assert ms.load_predictor("openllm") == {"weights": [1, 2, 3]}
    assert sorted(p.name for p in path.parent.iterdir()) == ["predictor.pkl"]  # no temporary file left behind

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):  # a save that fails half-way ...
        ms.save_pickle("openllm", "predictor.pkl", [1, Unpicklable()])
    assert ms.load_predictor("openllm") == {"weights": [1, 2, 3]}  # ... leaves the old model whole
    assert sorted(p.name for p in path.parent.iterdir()) == ["predictor.pkl"]
    with open(path, "rb") as fh:
        assert pickle.load(fh) == {"weights": [1, 2, 3]}


def test_atomic_write_never_shows_a_partial_file(tmp_path):
    target = tmp_path / "sub" / "model.bin"

    def write(tmp):
        tmp.write_bytes(b"half")
        assert not target.exists()  # the target appears only once the write is done
        tmp.write_bytes(b"whole")

    assert atomic_write(target, write) == target and target.read_bytes() == b"whole"


def test_missing_model_names_the_file_and_the_asset_to_materialize(tmp_path):
    ms = ModelStore(root=str(tmp_path))
    with pytest.raises(MissingModelError, match=r"predictor\.pkl.*materialize anchor_sets first"):
        ms.load_predictor("openllm")
    with pytest.raises(FileNotFoundError):  # MissingModelError is a FileNotFoundError
        ms.load_pickle("openllm", "other.pkl")


@pytest.mark.parametrize(
    "module, name",
    [
        ("tinybench_assets.core.predictor", "AnchorPredictor"),  # a module that is no longer there
        ("tinybench_assets.core.estimation.predictor", "NoSuchPredictor"),  # a class that is no longer there
    ],
)
def test_an_outdated_predictor_pickle_says_how_to_rebuild_it(tmp_path, module, name):
    """A predictor.pkl whose classes moved (the predictor pickled as tinybench_assets.core.predictor.AnchorPredictor
    before core/estimation/ held it) fails with the predictor's own rebuild message, not a raw ModuleNotFoundError."""
    from tinybench_assets.core.estimation.predictor import REBUILD

    ms = ModelStore(root=str(tmp_path))
    path = ms.path("openllm", "predictor.pkl")
    path.parent.mkdir(parents=True)
    path.write_bytes(f"c{module}\n{name}\n)\x81.".encode())  # GLOBAL, EMPTY_TUPLE, NEWOBJ: an instance of the class
    with pytest.raises(OutdatedModelError, match=rf"{path.name}.*'openllm'.*{module}\.{name}") as err:
        ms.load_predictor("openllm")
    assert REBUILD in str(err.value) and isinstance(err.value, ValueError)
    path.write_bytes(b"cno_such_package.mod\nThing\n.")  # a module outside the package: pickle's own error
    with pytest.raises(ModuleNotFoundError):
        ms.load_predictor("openllm")


def test_a_predictor_pickled_today_loads_from_core_estimation(tmp_path):
    from tinybench_assets.core.estimation.predictor import REBUILD, AnchorPredictor

    ms = ModelStore(root=str(tmp_path))
    ms.save_predictor("openllm", AnchorPredictor(n_values=(5,)))
    assert b"tinybench_assets.core.estimation.predictor" in ms.path("openllm", "predictor.pkl").read_bytes()
    loaded = ms.load_predictor("openllm")
    assert type(loaded) is AnchorPredictor and loaded.n_values == (5,)
    with pytest.raises(ValueError, match="not fitted") as err:  # unfitted: the same rebuild message
        _ = loaded.named_steps
    assert REBUILD in str(err.value)


@pytest.mark.parametrize("board", ["../evil", "a/b", "a\\b", "..", ".", "", "a\0b", "x..y"])
def test_unsafe_leaderboard_names_are_refused(tmp_path, board):
    ms = ModelStore(root=str(tmp_path / "root"))
    with pytest.raises(UnsafeNameError, match="leaderboard"):
        ms.save_predictor(board, {"x": 1})
    with pytest.raises(UnsafeNameError):
        ms.load_predictor(board)
    assert not (tmp_path / "root").exists() and list(tmp_path.iterdir()) == []  # nothing written anywhere


@pytest.mark.parametrize(
    "key", ["routerdc./../../etc", "routerdc.a/b", "../x.mmlu", "routerdc.a\0b", "routerdc...", "a/b.c"]
)
def test_unsafe_partition_keys_give_no_router_path(tmp_path, key):
    with pytest.raises(UnsafeNameError):
        ModelStore(root=str(tmp_path)).router_path(key)


def test_safe_names_pass_unchanged():
    for name in ("openllm", "router_mmlu.npz", "arc_challenge", "predictor.pkl", "a.b-c_d"):
        assert safe_name(name) == name
    with pytest.raises(UnsafeNameError, match="file name"):
        ModelStore(root="/tmp").path("openllm", "../predictor.pkl")


def test_definitions_provide_the_model_store():
    from tinybench_assets.definitions import build_defs

    assert isinstance(build_defs().resources["model_store"], ModelStore)
