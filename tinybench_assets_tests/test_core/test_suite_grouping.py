"""The test suite's own set-up: under ``--dist loadgroup`` (scripts/run_tests.sh) the tests of a module-scoped fixture
share one xdist group (conftest.py), so the fixture is built once. pytest-xdist's loadgroup stopped grouping silently
with pytest 9.2 (pytest-dev/pytest-xdist#1386; pyproject.toml pins pytest below it): this fails if it does again. Under
two workers, each worker's thread pools take one thread (conftest.py)."""

import pytest


@pytest.fixture(scope="module")
def shared():
    return object()


def test_tests_of_a_module_fixture_share_a_worker(request, shared):
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run with --dist loadgroup")
    assert request.node.nodeid.endswith("@test_suite_grouping"), (
        f"{request.node.nodeid}: pytest-xdist did not put this test in its xdist group (pytest "
        f"{pytest.__version__}); see pytest-dev/pytest-xdist#1386"
    )


def test_under_two_workers_every_thread_pool_takes_one_thread():
    """Two workers on two cores: OpenMP / BLAS pools of two threads each spun on the other worker's core (conftest.py
    sets the budget before numpy loads, and the processes a test starts inherit it)."""
    import os

    import numpy as np  # noqa: F401 - loads BLAS
    import sklearn.ensemble  # noqa: F401 - loads the OpenMP runtime
    from threadpoolctl import threadpool_info

    from tinybench_assets_tests.conftest import ONE_THREAD, USER_THREADS

    if not ONE_THREAD:
        pytest.skip("not run in two or more xdist workers")
    if USER_THREADS:
        pytest.skip(f"the thread budget was set before the run: {USER_THREADS}")
    pools = [(p["internal_api"], p["num_threads"]) for p in threadpool_info()]
    assert pools and all(n == 1 for _, n in pools), pools
    assert os.environ["TINYBENCH_TORCH_THREADS"] == "1" and os.environ["OMP_NUM_THREADS"] == "1"
