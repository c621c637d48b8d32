"""Reads per model call on every store: load + render when nothing changed, cold load.

.venv/bin/python benchmarks/run.py doc_cache

A 200-fact document (``bench_store``'s) in one scope. "Per model call" is
``Memory.context()`` (store load, then the cached block), which an agent calls before
every model call; nothing changed in between. "Cold load" reads and parses the stored
document with nothing cached: the row (SQLite, PostgreSQL) or the file (JSON), the strict
JSON parse and the document model. Targets: <= 0.1 ms per call, <= 0.5 ms cold, on every
store. The JSON parse alone is measured beside it (``json.loads`` of the same text).
The reference system's cached load is 2.6 ms (REFERENCE.md, a deep copy per call).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from _table import row
from bench_sql import _postgres_server
from bench_store import _document, _median_ms

from memfold import Memory
from memfold.model import Scope
from memfold.store._sql import BaseSqlStore
from memfold.store.base import MemoryStore, encode_document
from memfold.store.jsonfile import JsonFileStore
from memfold.store.sqlite import SqliteStore

SCOPE = Scope("alice")
#: The issue's own figures on its run: 0.5 ms allowed where json.loads took 0.16 ms. The
#: ratio reads the same on a machine running at a different speed.
RATIO_TARGET = "<= 3.1x (0.5 / 0.16 ms)"


def _store_rows(
    kind: str, store: MemoryStore, cold: Any, repeat: int, parse_ms: float
) -> list[dict[str, Any]]:
    store.commit(SCOPE, _document(), expected_revision=0)
    with Memory(store=store, start_workers=False) as mem:
        mem.context(user_id="alice")
        per_call = _median_ms(lambda: mem.context(user_id="alice"), repeat * 20)
        cold_ms = _median_ms(cold, repeat)
    return [
        row(f"{kind}: load + render per model call, nothing changed", per_call, "ms", "<= 0.1 ms",
             "2.6 ms cached load alone (REFERENCE.md)"),
        row(f"{kind}: cold load, 200 facts (read + parse)", cold_ms, "ms", "<= 0.5 ms",
            "243 ms (REFERENCE.md)"),
        row(f"{kind}: cold load / json.loads alone, same run", cold_ms / parse_ms, "x",
            RATIO_TARGET),
    ]  # fmt: skip


def _sql_cold(store: BaseSqlStore) -> Any:
    def cold() -> None:
        store._parsed_rows = type(store._parsed_rows)()  # nothing cached
        store.load(SCOPE)

    return cold


def run(quick: bool) -> list[dict[str, Any]]:
    repeat = 30 if quick else 300
    text = encode_document(SCOPE, _document())
    parse_ms = _median_ms(lambda: json.loads(text), repeat)
    rows = [row("json.loads of the 200-fact document alone", parse_ms, "ms")]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        rows += _store_rows(
            "json", JsonFileStore(home / "json"),
            lambda: JsonFileStore(home / "json").load(SCOPE), repeat, parse_ms,
        )  # fmt: skip
        sqlite = SqliteStore(home / "memfold.sqlite3")
        rows += _store_rows("sqlite", sqlite, _sql_cold(sqlite), repeat, parse_ms)
        with _postgres_server(home) as dsn:
            if dsn is not None:
                from memfold.store.postgres import PostgresStore

                postgres = PostgresStore(dsn)
                try:
                    with postgres._connection() as conn:
                        conn.execute("DELETE FROM memfold_documents")
                    rows += _store_rows("postgres", postgres, _sql_cold(postgres), repeat, parse_ms)
                finally:
                    postgres.close()
    return rows
