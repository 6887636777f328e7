"""The test suite's own set-up: under ``--dist loadgroup`` (scripts/run_tests.sh) the tests of a module-scoped fixture
share one xdist group (conftest.py), so the fixture is built once. pytest-xdist's loadgroup stopped grouping silently
with pytest 9.2 (pytest-dev/pytest-xdist#1386; pyproject.toml pins pytest below it): this fails if it does again."""
import pytest


@pytest.fixture(scope="module")
def shared():
    return object()


def test_tests_of_a_module_fixture_share_a_worker(request, shared):
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run with --dist loadgroup")
    assert request.node.nodeid.endswith("@test_suite_grouping"), (
        f"{request.node.nodeid}: pytest-xdist did not put this test in its xdist group (pytest "
        f"{pytest.__version__}); see pytest-dev/pytest-xdist#1386")
