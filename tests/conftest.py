"""Shared test configuration: async tests run on asyncio through anyio's pytest plugin; one
throwaway PostgreSQL server per session (per pytest-xdist worker) for the tests that need one
(`postgres_server`)."""

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from checkout_guard import CheckoutGuard
from postgres_server import PostgresUnavailable, skip_or_fail, start_postgres


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The DSN of a throwaway PostgreSQL server's `postgres` database, for the whole session."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        skip_or_fail("psycopg is not installed (pip install 'jianmu-bt[postgres]')")
    try:
        dsn, stop = start_postgres()
    except PostgresUnavailable as exc:
        skip_or_fail(str(exc))
    try:
        yield dsn
    finally:
        stop()


def pytest_configure(config: pytest.Config) -> None:
    """Runs made without a named store (`jianmu run` in the checkout, say) go to a store in a
    temporary folder of this test process, never to `.jianmu/` of the working folder; the session
    fails if the checkout's `.jianmu/` was created or changed all the same (checkout_guard.py)."""
    folder = tempfile.mkdtemp(prefix="jianmu-tests-")
    os.environ["JIANMU_STORE"] = os.path.join(folder, "runs.db")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) checks
        config.pluginmanager.register(CheckoutGuard(config.rootpath / ".jianmu"), "checkout-guard")
