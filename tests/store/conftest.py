"""Fixtures of the run store tests: the conformance suite runs against SQLite and PostgreSQL.

The PostgreSQL half uses a throwaway server started once per session (`postgres_server`) and a
fresh database per test; it is skipped when the server cannot start, unless
JIANMU_REQUIRE_POSTGRES=1 (then it fails).
"""

from collections.abc import Callable, Iterator

import pytest
from postgres_server import create_database, drop_database

from jianmu_bt.store import PostgresStore, RunStore, open_store

TEMPLATE = "jianmu_store_template"


@pytest.fixture(scope="session")
def postgres_store_template(postgres_server: str) -> str:
    """The name of a database holding empty run store tables, copied for each test."""
    PostgresStore(create_database(postgres_server, TEMPLATE)).close()
    return TEMPLATE


@pytest.fixture
def postgres_dsn(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database (no tables) for one test."""
    dsn = create_database(postgres_server)
    yield dsn
    drop_database(postgres_server, dsn)


@pytest.fixture
def postgres_store_dsn(postgres_server: str, postgres_store_template: str) -> Iterator[str]:
    """A fresh database holding empty run store tables, for one test."""
    dsn = create_database(postgres_server, template=postgres_store_template)
    yield dsn
    drop_database(postgres_server, dsn)


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path) -> str:
    """Where the test's store lives: a new SQLite file path or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "store" / "runs.db")
    return request.getfixturevalue("postgres_store_dsn")


@pytest.fixture
def connect(location: str) -> Iterator[Callable[[], RunStore]]:
    """Open a (further) store on the test's location; every one is closed at teardown."""
    opened: list[RunStore] = []

    def open_one() -> RunStore:
        opened.append(open_store(location))
        return opened[-1]

    yield open_one
    for one in opened:
        one.close()


@pytest.fixture
def store(connect: Callable[[], RunStore]) -> RunStore:
    """The store under test (SQLite or PostgreSQL)."""
    return connect()
