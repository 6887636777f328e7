"""A throwaway PostgreSQL server (tinybench_assets/testing/pg_server.py) for the scale-out profile's tests: one
per session, always stopped and removed. No PostgreSQL binaries = the tests fail (scripts/env.sh installs them)."""

import pytest

from tinybench_assets.testing.pg_server import PostgresMissing, PostgresServer


@pytest.fixture(scope="session")
def pg_server():
    try:
        server = PostgresServer()
    except PostgresMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture()
def pg_env(monkeypatch):
    """Undo the DAGSTER_PG_* variables a test's deploy instance sets."""
    from tinybench_assets.testing.parity import PG_ENV

    for var in PG_ENV:
        monkeypatch.setenv(var, "")  # recorded, so the value before the test comes back afterwards
    yield
