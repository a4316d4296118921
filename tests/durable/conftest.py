"""Fixtures of the durable-run tests: a run store location, SQLite or PostgreSQL."""

from collections.abc import Iterator

import pytest
from postgres_server import (
    create_database,
    drop_database,
)


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request, tmp_path) -> Iterator[str]:
    """Where a test's runs are stored: an SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield str(tmp_path / "runs.db")
        return
    server = request.getfixturevalue("postgres_server")
    dsn = create_database(server)
    yield dsn
    drop_database(server, dsn)
