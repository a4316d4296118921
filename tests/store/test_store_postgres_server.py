"""The throwaway PostgreSQL helper used by the store tests (tests/postgres_server.py)."""

import pytest
from postgres_server import REQUIRE_ENV, find_bin_dir, skip_or_fail


def test_skip_or_fail_skips_unless_postgres_is_required(monkeypatch):
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="PostgreSQL unavailable: no initdb"):
        skip_or_fail("no initdb")
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=r"required \(JIANMU_REQUIRE_POSTGRES=1\)"):
        skip_or_fail("no initdb")


def test_server_folder_and_dsn(postgres_server):
    bin_dir = find_bin_dir()
    assert bin_dir is not None and (bin_dir / "pg_ctl").exists()
    assert postgres_server.startswith("postgresql://postgres@127.0.0.1:")
    assert postgres_server.endswith("/postgres")
