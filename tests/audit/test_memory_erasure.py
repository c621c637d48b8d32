"""Part 5: ``forget_user`` leaves nothing of a user on disk or in a database (the home is
grepped and the tables dumped), on every store and queue; ``users()``/``scopes()``."""

from __future__ import annotations

import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memfold import ErasureReport, Memory, MemoryConfig, Scope
from memfold.extract.base import ChangeSet, Extraction, ExtractionRequest, NewFact, Usage

if TYPE_CHECKING:
    from conftest import MakeMemory  # tests/audit/conftest.py

# Words that exist only in the erased user's data: ids, threads, facts, messages.
MARKERS = ("quetzalia", "zanzibarville", "xylophonia", "plumbusworks", "thread-qz")


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]


def fill(mem: Memory) -> None:
    """The erased user in three scopes, with history, watermarks, a pending update; and
    another user who must keep everything."""
    user = "quetzalia-user"
    mem.update(chat("I live in Zanzibarville."), thread_id="thread-qz-1", user_id=user)
    mem.update(
        chat("I work at Plumbusworks."), thread_id="thread-qz-2", user_id=user, agent="coder"
    )
    fact = mem.add_fact("Owns a parrot named Xylophonia", user_id=user, agent="writer")
    mem.edit_fact(fact.id, confidence=0.8, user_id=user, agent="writer")
    mem.set_summary("personal", "Lives in Zanzibarville with a parrot", user_id=user)
    mem.update(chat("I live in Paris."), thread_id="t-bob", user_id="bob")
    mem.record(chat("I live in Zanzibarville still."), thread_id="thread-qz-3", user_id=user)


def grep_home(home: Path) -> str:
    found = subprocess.run(
        ["grep", "-rali", *[arg for m in MARKERS for arg in ("-e", m)], str(home)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return found.stdout


def dump_sqlite(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return repr([conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables])
    finally:
        conn.close()


def dump_postgres(dsn: str) -> str:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchall()
        ]
        return repr([conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables])


def test_users_and_scopes_list_what_is_stored(make_mem: MakeMemory) -> None:
    mem = make_mem()
    assert mem.users() == []
    mem.add_fact("x", user_id="zed", agent="coder")
    mem.add_fact("y", user_id="amy")
    mem.add_fact("z")
    mem.add_fact("w", user_id="amy", agent="b")
    mem.add_fact("v", user_id="amy", agent="a")
    assert mem.users() == [None, "amy", "zed"]
    assert mem.scopes() == [
        Scope(None), Scope("amy"), Scope("amy", "a"), Scope("amy", "b"), Scope("zed", "coder"),
    ]  # fmt: skip
    assert mem.scopes("amy") == [Scope("amy"), Scope("amy", "a"), Scope("amy", "b")]
    assert mem.scopes(None) == [Scope(None)]
    assert mem.scopes("nobody") == []


def test_forget_user_erases_every_scope_history_and_queued_update(make_mem: MakeMemory) -> None:
    mem = make_mem()
    fill(mem)
    report = mem.forget_user("quetzalia-user")
    assert report == ErasureReport("quetzalia-user", 3, 1)
    assert report.to_dict() == {"userId": "quetzalia-user", "scopes": 3, "queuedUpdates": 1}
    assert mem.users() == ["bob"]
    assert mem.scopes("quetzalia-user") == []
    for agent in (None, "coder", "writer"):
        assert mem.get(user_id="quetzalia-user", agent=agent).revision == 0
        assert mem.history(user_id="quetzalia-user", agent=agent) == []
        assert mem.context(user_id="quetzalia-user", agent=agent) == ""
    assert mem.flush(timeout=10)  # the dropped update does not bring anything back
    assert mem.users() == ["bob"]
    assert "Paris" in mem.context(user_id="bob")
    assert mem.forget_user("quetzalia-user") == ErasureReport("quetzalia-user", 0, 0)


@pytest.mark.parametrize(
    ("storage", "queue"),
    [("json", "memory"), ("json", "sqlite"), ("sqlite", "sqlite"), ("sqlite", "memory")],
    indirect=["storage"],
)
def test_nothing_of_an_erased_user_is_left_in_the_files(
    make_mem: MakeMemory, tmp_path: Path, storage: str, queue: str
) -> None:
    mem = make_mem(queue=queue)
    fill(mem)
    home = tmp_path / "home"
    assert grep_home(home)  # the markers are there before ...
    mem.forget_user("quetzalia-user")
    assert grep_home(home) == ""  # ... and in no file afterwards, WAL and free pages included
    for database in home.glob("*.sqlite3"):
        dump = dump_sqlite(database)
        assert not any(m in dump.casefold() for m in MARKERS)
    assert "Paris" in mem.context(user_id="bob")


@pytest.mark.parametrize("storage", ["postgres"], indirect=True)
def test_nothing_of_an_erased_user_is_left_in_the_postgres_tables(
    make_mem: MakeMemory, postgres_dsn: str
) -> None:
    mem = make_mem(queue="postgres")
    fill(mem)
    assert any(m in dump_postgres(postgres_dsn).casefold() for m in MARKERS)
    mem.forget_user("quetzalia-user")
    dump = dump_postgres(postgres_dsn).casefold()
    assert not any(m in dump for m in MARKERS)
    assert "paris" in dump


class _Gate:
    """An extractor that waits inside ``propose`` until the test lets it go on."""

    name = "gate"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.on_enter: Any = None

    def propose(self, request: ExtractionRequest) -> Extraction:
        self.entered.set()
        if self.on_enter is not None:
            self.on_enter()
        assert self.release.wait(10)
        fact = NewFact("Lives in Zanzibarville", "context", 0.9)
        return Extraction(ChangeSet(new_facts=(fact,)), Usage())


def test_an_update_running_during_the_erasure_writes_nothing(
    make_mem: MakeMemory, tmp_path: Path, storage: str
) -> None:
    gate = _Gate()
    mem = make_mem(extractor=gate)
    mem.record(chat("I live in Zanzibarville."), thread_id="thread-qz", user_id="quetzalia-user")
    flusher = threading.Thread(target=mem.flush, kwargs={"timeout": 20})
    flusher.start()
    assert gate.entered.wait(10)
    mem.forget_user("quetzalia-user")
    gate.release.set()
    flusher.join(20)
    assert mem.users() == []
    if storage in ("json", "sqlite"):
        assert grep_home(tmp_path / "home") == ""


def test_an_erasure_by_another_process_is_not_undone_by_a_running_update(tmp_path: Path) -> None:
    """The revision went backwards under the update: it discards its result."""
    config = MemoryConfig(home=tmp_path / "home", extractor="rules")
    gate = _Gate()
    with Memory(config, extractor=gate, start_workers=False) as mem, Memory(config) as other:
        mem.add_fact("Owns a parrot named Xylophonia", user_id="quetzalia-user")
        gate.on_enter = lambda: other.forget_user("quetzalia-user")
        gate.release.set()
        result = mem.update(
            chat("I live in Zanzibarville."), thread_id="thread-qz", user_id="quetzalia-user"
        )
        assert not result.committed
        assert result.skipped == "user erased during update"
        assert mem.users() == []
    assert grep_home(tmp_path / "home") == ""


def test_cached_blocks_of_an_erased_user_are_dropped(make_mem: MakeMemory) -> None:
    mem = make_mem()
    mem.add_fact("Owns a parrot named Xylophonia", user_id="quetzalia-user")
    assert "Xylophonia" in mem.context(user_id="quetzalia-user")
    mem.forget_user("quetzalia-user")
    mem.add_fact("Likes tea", user_id="quetzalia-user")  # revision 1 again, new content
    block = mem.context(user_id="quetzalia-user")
    assert "Likes tea" in block
    assert "Xylophonia" not in block


def test_forget_the_default_user(make_mem: MakeMemory) -> None:
    mem = make_mem()
    mem.add_fact("Default user fact")
    mem.add_fact("Agent fact", agent="coder")
    mem.add_fact("Bob fact", user_id="bob")
    assert mem.forget_user(None).scopes == 2
    assert mem.users() == ["bob"]
