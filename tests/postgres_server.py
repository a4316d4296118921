"""A throwaway PostgreSQL server for tests (FIELD-NOTES.md, "PostgreSQL for tests").

`start_postgres()` runs Debian's server programs (`/usr/lib/postgresql/*/bin`) in a fresh temporary
folder: `initdb` (as the `postgres` user when running as root, which the server requires), then
`pg_ctl start` on a free 127.0.0.1 port with `fsync=off`. It returns the DSN of the `postgres`
database and a `stop()` that stops the server with `-m immediate` and removes the folder.
`create_database` / `drop_database` give each test a database of its own.

Any test folder can use it: `from postgres_server import start_postgres` (pytest puts `tests/` on
`sys.path`), then call `skip_or_fail(reason)` when it raises PostgresUnavailable.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

REQUIRE_ENV = "JIANMU_REQUIRE_POSTGRES"


class PostgresUnavailable(RuntimeError):
    """The server programs are missing or the server did not start (the message says why)."""


def skip_or_fail(reason: str) -> None:
    """Skip the test, or fail it when JIANMU_REQUIRE_POSTGRES=1 (CI must not skip)."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"PostgreSQL is required ({REQUIRE_ENV}=1) but unavailable: {reason}")
    pytest.skip(f"PostgreSQL unavailable: {reason}")


def find_bin_dir() -> Path | None:
    """The newest `/usr/lib/postgresql/<version>/bin` holding initdb, else initdb's PATH folder."""

    def version(path: str) -> tuple[int, ...]:
        name = Path(path).parent.parent.name
        return tuple(int(part) for part in name.split(".") if part.isdigit())

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(command: list[str], cwd: Path, what: str) -> None:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PostgresUnavailable(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise PostgresUnavailable(f"{what} exited with {done.returncode}: {' | '.join(output)}")


def start_postgres(tmp_root: str | Path | None = None) -> tuple[str, Callable[[], None]]:
    """Start a throwaway server; return its DSN (database `postgres`) and a `stop()` function
    (which also carries `stop.halt()`, the server going down as a crash would, and
    `stop.restart()`, the same server back on its port, for fault tests).

    The server's folder is made under `tmp_root` (the system temporary folder when None); when
    running as root every folder above it must be searchable by the `postgres` user. Raises
    PostgresUnavailable with the reason when it cannot start.
    """
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise PostgresUnavailable(
            "no PostgreSQL server programs (/usr/lib/postgresql/*/bin/initdb); "
            "install Debian's postgresql package"
        )
    prefix: list[str] = []
    if os.geteuid() == 0:
        import pwd

        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresUnavailable("running as root and there is no postgres user") from None
        if shutil.which("runuser") is None:
            raise PostgresUnavailable("running as root and runuser is missing")
        prefix = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="jianmu-pg-", dir=tmp_root))
    try:
        if prefix:
            for parent in root.parents:
                if not parent.stat().st_mode & stat.S_IXOTH:
                    raise PostgresUnavailable(f"the postgres user cannot enter {parent}")
            os.chown(root, user.pw_uid, user.pw_gid)
        data, log = root / "data", root / "server.log"
        _run(
            [
                *prefix,
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
                "--no-instructions",
                "--locale=C.UTF-8",
                "-E",
                "UTF8",
            ],
            root,
            "initdb",
        )
        pg_ctl = [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data)]
        for attempt in range(3):
            port = _free_port()
            options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off"
            try:
                _run(
                    [*pg_ctl, "-l", str(log), "-o", options, "-w", "-t", "60", "start"],
                    root,
                    "pg_ctl start",
                )
                break
            except PostgresUnavailable:
                if attempt == 2:
                    raise
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise

    def stop() -> None:
        with contextlib.suppress(PostgresUnavailable):
            _run([*pg_ctl, "-m", "immediate", "-w", "stop"], root, "pg_ctl stop")
        shutil.rmtree(root, ignore_errors=True)

    def halt() -> None:  # the server goes down (as a crash would); its files stay
        _run([*pg_ctl, "-m", "immediate", "-w", "stop"], root, "pg_ctl stop")

    def restart() -> None:  # the same server back on the same port
        _run([*pg_ctl, "-l", str(log), "-o", options, "-w", "-t", "60", "start"], root, "start")

    stop.halt = halt  # type: ignore[attr-defined]
    stop.restart = restart  # type: ignore[attr-defined]
    return f"postgresql://postgres@127.0.0.1:{port}/postgres", stop


def _with_database(dsn: str, name: str) -> str:
    return dsn.rsplit("/", 1)[0] + "/" + name


def create_database(server_dsn: str, name: str | None = None, template: str | None = None) -> str:
    """Create a database on the server (empty, or a copy of `template`); return its DSN."""
    import psycopg

    name = name or f"test_{uuid.uuid4().hex[:16]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    return _with_database(server_dsn, name)


def drop_database(server_dsn: str, dsn: str) -> None:
    """Drop the database `dsn` names, closing its remaining connections."""
    import psycopg

    name = dsn.rsplit("/", 1)[1]
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
