"""PostgreSQL specifics: connection errors, refusing databases it cannot use, lock timeouts."""

import sys

import pytest
from postgres_server import _free_port
from store_helpers import entry, make_run

from jianmu_bt.store import (
    PostgresStore,
    StoreCorruptError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
    StoreNotFoundError,
    open_store,
)

psycopg = pytest.importorskip("psycopg")


def test_open_store_picks_postgres_for_urls(postgres_store_dsn):
    with open_store(postgres_store_dsn) as store:
        assert isinstance(store, PostgresStore)
    postgres_url = "postgres://" + postgres_store_dsn.split("://", 1)[1]
    with open_store(postgres_url) as store:
        assert isinstance(store, PostgresStore)


def test_creates_tables_in_an_empty_database(postgres_dsn):
    with PostgresStore(postgres_dsn) as store:
        store.create_run(make_run("r1"))
    with psycopg.connect(postgres_dsn) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
    assert version == ("2",)


def test_unreachable_server_message_has_no_password():
    port = _free_port()
    dsn = f"postgresql://jianmu:s3cret-pw@127.0.0.1:{port}/runs"
    with pytest.raises(StoreError) as caught:
        PostgresStore(dsn, connect_timeout=2)
    message = str(caught.value)
    assert message.startswith(f"cannot connect to PostgreSQL at 127.0.0.1:{port}/runs: ")
    assert "s3cret" not in message and "\n" not in message


def test_keyword_dsn_location(postgres_store_dsn):
    database = postgres_store_dsn.rsplit("/", 1)[1]
    port = postgres_store_dsn.split(":")[2].split("/")[0]
    dsn = f"host=127.0.0.1 port={port} dbname={database} user=postgres"
    with PostgresStore(dsn) as store:
        assert store.location == f"PostgreSQL at 127.0.0.1:{port}/{database}"


def test_empty_database_with_create_false(postgres_dsn):
    with pytest.raises(StoreNotFoundError, match="has no run store"):
        PostgresStore(postgres_dsn, create=False)
    with pytest.raises(StoreNotFoundError):
        open_store(postgres_dsn, create=False)
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("SELECT to_regclass('runs')").fetchone() == (None,)


def test_newer_format_is_refused(postgres_store_dsn):
    with psycopg.connect(postgres_store_dsn) as conn:
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'format_version'")
    with pytest.raises(StoreFormatError, match="store format 3; this program reads format 2"):
        PostgresStore(postgres_store_dsn)


def test_missing_tables_and_foreign_tables_are_refused(postgres_store_dsn, postgres_dsn):
    with psycopg.connect(postgres_store_dsn) as conn:
        conn.execute("DROP TABLE checkpoints")
    with pytest.raises(StoreCorruptError, match="missing tables: checkpoints"):
        PostgresStore(postgres_store_dsn)
    with psycopg.connect(postgres_dsn) as conn:
        conn.execute("CREATE TABLE runs (x int)")
    with pytest.raises(StoreCorruptError, match="no meta table"):
        PostgresStore(postgres_dsn)
    with psycopg.connect(postgres_dsn) as conn:  # nothing was added
        assert conn.execute("SELECT to_regclass('journal')").fetchone() == (None,)


def test_row_lock_held_elsewhere_raises_store_locked_error(postgres_store_dsn):
    store = PostgresStore(postgres_store_dsn, busy_timeout=0.1)
    store.create_run(make_run("r1"))
    with psycopg.connect(postgres_store_dsn) as other:
        other.execute("SELECT * FROM runs WHERE run_id = 'r1' FOR UPDATE")  # open transaction
        with pytest.raises(StoreLockedError, match="locked by another connection"):
            store.append("r1", None, [entry("a")])
        other.rollback()
    assert store.append("r1", None, [entry("a")]) == 1
    store.close()


def test_reconnects_after_the_connection_is_lost(postgres_store_dsn):
    store = PostgresStore(postgres_store_dsn)
    store.create_run(make_run("r1"))
    with psycopg.connect(postgres_store_dsn, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'jianmu-bt' AND pid <> pg_backend_pid()"
        )
    try:
        store.get_run("r1")
    except StoreError as exc:
        assert "lost the connection" in str(exc)
    assert store.get_run("r1").run_id == "r1"
    store.close()


def test_missing_psycopg_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError, match=r"pip install 'jianmu-bt\[postgres\]'"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none")
