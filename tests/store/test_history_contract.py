"""The HistoryStore contract (change history in the same commit, erasure), run against
every backend in ``conftest.BACKENDS``: json, inmemory, sqlite and postgres."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from memfold.errors import ConflictError
from memfold.history import ChangeEvent
from memfold.model import Fact, MemoryDocument, Scope
from memfold.store.base import HistoryStore, MemoryStore

if TYPE_CHECKING:
    from conftest import Backend  # tests/store/conftest.py


ALICE = Scope("alice")
AT = "2026-12-01T10:00:00Z"


def added(fact_id: str, content: str = "x") -> ChangeEvent:
    return ChangeEvent("added", AT, "manual", fact_id=fact_id, after=content)


def commit_fact(store: MemoryStore, scope: Scope, n: int) -> MemoryDocument:
    """Add fact n with its event, retrying on conflict as Memory does."""
    assert isinstance(store, HistoryStore)
    while True:
        doc = store.load(scope)
        fact = Fact(f"fact_{n:08x}", f"fact {n}")
        try:
            return store.commit(
                scope,
                doc.with_changes(facts=(*doc.facts, fact)),
                expected_revision=doc.revision,
                events=(added(fact.id, fact.content),),
            )
        except ConflictError:
            continue


def test_every_builtin_store_keeps_history(store: MemoryStore) -> None:
    assert isinstance(store, HistoryStore)
    assert store.max_history_events == 1000


def test_events_come_back_newest_first_with_their_commits_revision(store: MemoryStore) -> None:
    assert isinstance(store, HistoryStore)
    assert store.history(ALICE) == []
    first = store.commit(ALICE, MemoryDocument(), expected_revision=0, events=(added("f1"),))
    second = store.commit(ALICE, first, expected_revision=1, events=(added("f2"), added("f3", "y")))
    history = store.history(ALICE)
    assert [e.fact_id for e in history] == ["f3", "f2", "f1"]
    assert [e.revision for e in history] == [second.revision, second.revision, first.revision]
    assert store.history(ALICE, limit=2) == history[:2]
    assert store.history(Scope("alice", "coder")) == []
    assert store.history(Scope("bob")) == []


def test_a_conflicting_commit_writes_neither_the_document_nor_its_events(
    store: MemoryStore,
) -> None:
    assert isinstance(store, HistoryStore)
    store.commit(ALICE, MemoryDocument(), expected_revision=0, events=(added("f1"),))
    with pytest.raises(ConflictError):
        store.commit(ALICE, MemoryDocument(), expected_revision=0, events=(added("lost"),))
    assert [e.fact_id for e in store.history(ALICE)] == ["f1"]


def test_clear_records_its_event_and_keeps_the_history(store: MemoryStore) -> None:
    assert isinstance(store, HistoryStore)
    store.commit(ALICE, MemoryDocument(), expected_revision=0, events=(added("f1"),))
    cleared = store.clear(ALICE, events=(ChangeEvent("cleared", AT, "manual"),))
    history = store.history(ALICE)
    assert [e.kind for e in history] == ["cleared", "added"]
    assert history[0].revision == cleared.revision


def test_history_is_bounded_oldest_first_out(store_backend: Backend) -> None:
    store = store_backend.open(max_history_events=5)
    try:
        for n in range(12):
            commit_fact(store, ALICE, n)
        assert isinstance(store, HistoryStore)
        history = store.history(ALICE)
        assert [e.fact_id for e in history] == [f"fact_{n:08x}" for n in range(11, 6, -1)]
        assert store.history(ALICE, limit=100) == history
    finally:
        store.close()


def test_zero_max_history_events_keeps_no_history(store_backend: Backend) -> None:
    store = store_backend.open(max_history_events=0)
    try:
        commit_fact(store, ALICE, 1)
        assert isinstance(store, HistoryStore)
        assert store.history(ALICE) == []
        assert len(store.load(ALICE).facts) == 1
    finally:
        store.close()


def test_bad_limits_and_bounds_are_refused(store_backend: Backend) -> None:
    with pytest.raises(ValueError, match="max_history_events"):
        store_backend.open(max_history_events=-1)
    store = store_backend.open()
    try:
        assert isinstance(store, HistoryStore)
        for bad in (0, -3, True, 2.5):
            with pytest.raises(ValueError, match="limit"):
                store.history(ALICE, limit=bad)  # type: ignore[arg-type]
    finally:
        store.close()


def test_history_survives_reopening(durable_backend: Backend) -> None:
    store = durable_backend.open()
    commit_fact(store, ALICE, 1)
    store.close()
    reopened = durable_backend.open()
    try:
        assert isinstance(reopened, HistoryStore)
        assert [e.fact_id for e in reopened.history(ALICE)] == ["fact_00000001"]
    finally:
        reopened.close()


def test_concurrent_writers_get_exactly_one_event_per_commit(store: MemoryStore) -> None:
    assert isinstance(store, HistoryStore)

    def writer(base: int) -> None:
        for n in range(base, base + 8):
            commit_fact(store, ALICE, n)

    threads = [threading.Thread(target=writer, args=(100 * i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    history = store.history(ALICE)
    assert len(history) == 32
    assert sorted(e.revision for e in history) == list(range(1, 33))
    assert {e.fact_id for e in history} == {f.id for f in store.load(ALICE).facts}


@pytest.mark.parametrize("user", ["alice", None, "u" * 1500])
def test_forget_user_erases_every_scope_and_history_of_one_user_only(
    store: MemoryStore, user: str | None
) -> None:
    assert isinstance(store, HistoryStore)
    mine = [Scope(user), Scope(user, "coder"), Scope(user, "writer")]
    for scope in [*mine, Scope("bob"), Scope("bob", "coder")]:
        commit_fact(store, scope, 1)
    store.clear(Scope(user, "writer"))
    assert store.forget_user(user) == 3
    for scope in mine:
        assert store.load(scope) == MemoryDocument()
        assert store.history(scope) == []
    assert set(store.scopes()) == {Scope("bob"), Scope("bob", "coder")}
    assert len(store.history(Scope("bob"))) == 1
    assert store.forget_user(user) == 0  # idempotent
    fresh = commit_fact(store, Scope(user), 7)  # the user can start again from nothing
    assert fresh.revision == 1
    assert [e.fact_id for e in store.history(Scope(user))] == ["fact_00000007"]
