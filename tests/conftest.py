"""Shared test configuration: async tests run on asyncio through anyio's pytest plugin; one
throwaway PostgreSQL server per session (per xdist worker) for the tests that need one
(`postgres_server`); the tests of one machine-wide resource kept on one worker."""

from collections.abc import Iterator

import pytest
from postgres_server import PostgresUnavailable, skip_or_fail, start_postgres

# Test files that start or look for a machine-wide resource: a local Ray cluster (its tests check
# that no Ray process is left, which another worker's cluster would break). pytest-xdist's
# `--dist loadgroup` (pyproject.toml) runs each group on one worker, one test after another.
MACHINE_WIDE = {"test_batch_ray.py": "ray", "test_batch_ray_cli.py": "ray"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = MACHINE_WIDE.get(item.path.name)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


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
