"""The MemoryStore contract, run against every backend in ``conftest.BACKENDS``."""

from __future__ import annotations

import dataclasses
import hashlib
import threading

import pytest

from memfold.errors import ConflictError
from memfold.model import (
    Fact,
    MemoryDocument,
    Scope,
    Summary,
    Watermark,
    document_from_dict,
    document_to_dict,
)
from memfold.store.base import MemoryStore

ALICE = Scope("alice")


def _fact(n: int, content: str | None = None) -> Fact:
    return Fact(id=f"fact_{n:08x}", content=content or f"fact {n}", category="preference")


def add_fact_with_retry(store: MemoryStore, scope: Scope, fact: Fact) -> int:
    """Reload and re-apply on conflict, as Memory does; returns how many conflicts it hit."""
    conflicts = 0
    while True:
        doc = store.load(scope)
        try:
            store.commit(
                scope, doc.with_changes(facts=(*doc.facts, fact)), expected_revision=doc.revision
            )
        except ConflictError:
            conflicts += 1
            continue
        return conflicts


RICH = {
    "version": "1.0",
    "lastUpdated": "2026-11-30T12:00:00Z",
    "customTopLevel": {"nested": [1, 2, {"k": "v"}]},
    "user": {
        "workContext": {"summary": "Builds compilers", "updatedAt": "2026-11-01", "note": "x"},
        "personalContext": {"summary": "Lives in Lyon", "updatedAt": ""},
        "topOfMind": {"summary": "", "updatedAt": ""},
        "moodBoard": {"summary": "unknown section", "updatedAt": ""},
    },
    "history": {
        "recentMonths": {"summary": "Shipped v2", "updatedAt": "2026-10-01"},
        "earlierContext": {"summary": "", "updatedAt": ""},
        "longTermBackground": {"summary": "用户是工程师", "updatedAt": ""},
    },
    "facts": [
        {
            "id": "fact_00000001",
            "content": "Prefers concise answers",
            "category": "preference",
            "confidence": 0.9,
            "createdAt": "2026-11-30T12:00:00Z",
            "updatedAt": "2026-11-30T12:00:00Z",
            "source": "t1",
            "sourceError": None,
            "tags": ["style"],
        },
        {
            "id": "fact_00000002",
            "content": "Said X, meant Y",
            "category": "correction",
            "confidence": 0.97,
            "createdAt": "",
            "updatedAt": "",
            "source": "manual",
            "sourceError": "assumed X",
        },
    ],
    "watermarks": {"t1": {"messageKey": "id:m42", "updatedAt": "2026-11-30T12:00:00Z"}},
}


def test_load_of_unknown_scope_is_empty_at_revision_zero(store: MemoryStore) -> None:
    doc = store.load(Scope("nobody", "agent"))
    assert (doc.revision, doc.generation, doc.facts, dict(doc.watermarks)) == (0, 0, (), {})
    assert doc.is_empty


def test_round_trip_keeps_facts_summaries_watermarks_and_unknown_fields(store: MemoryStore) -> None:
    doc = document_from_dict(RICH)
    returned = store.commit(ALICE, doc, expected_revision=0)
    loaded = store.load(ALICE)
    assert loaded == returned
    assert loaded.revision == 1
    expected = {**document_to_dict(doc), "revision": 1}
    assert document_to_dict(loaded) == expected
    assert document_to_dict(loaded)["customTopLevel"] == RICH["customTopLevel"]
    assert loaded.fact("fact_00000001") is not None
    assert loaded.watermarks["t1"] == Watermark("id:m42", "2026-11-30T12:00:00Z")


def test_commit_returns_the_stored_document_with_next_revision(store: MemoryStore) -> None:
    first = store.commit(ALICE, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    second = store.commit(ALICE, first.with_changes(facts=(_fact(2),)), expected_revision=1)
    assert (first.revision, second.revision) == (1, 2)
    assert store.load(ALICE) == second
    assert store.load(ALICE).facts == (_fact(2),)


def test_stale_revision_raises_conflict_and_leaves_stored_document_unchanged(
    store: MemoryStore,
) -> None:
    stored = store.commit(ALICE, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    with pytest.raises(ConflictError) as caught:
        store.commit(ALICE, MemoryDocument(facts=(_fact(2),)), expected_revision=0)
    assert (caught.value.expected, caught.value.actual) == (0, 1)
    assert caught.value.scope == ALICE
    assert store.load(ALICE) == stored


def test_revision_from_the_future_is_a_conflict_too(store: MemoryStore) -> None:
    with pytest.raises(ConflictError):
        store.commit(ALICE, MemoryDocument(), expected_revision=3)
    assert store.load(ALICE).revision == 0


def test_clear_empties_and_bumps_generation_and_revision(store: MemoryStore) -> None:
    summaries = {"workContext": Summary("Builds compilers")}
    marks = {"t1": Watermark("id:m42", "2026-11-30T12:00:00Z")}
    store.commit(
        ALICE,
        MemoryDocument(facts=(_fact(1),), summaries=summaries, watermarks=marks),
        expected_revision=0,
    )
    cleared = store.clear(ALICE)
    loaded = store.load(ALICE)
    assert loaded == cleared
    assert (loaded.revision, loaded.generation) == (2, 1)
    assert loaded.is_empty
    # seen messages stay seen: a clear must not make the next update re-learn them
    assert dict(loaded.watermarks) == marks
    assert store.clear(ALICE).generation == 2


def test_commit_computed_before_clear_conflicts(store: MemoryStore) -> None:
    before = store.commit(ALICE, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    store.clear(ALICE)
    with pytest.raises(ConflictError):
        store.commit(
            ALICE, before.with_changes(facts=(_fact(2),)), expected_revision=before.revision
        )
    assert store.load(ALICE).facts == ()


def test_only_clear_changes_generation(store: MemoryStore) -> None:
    store.clear(ALICE)
    doc = store.commit(ALICE, MemoryDocument(generation=7), expected_revision=1)
    assert doc.generation == 1
    assert store.load(ALICE).generation == 1


def test_scopes_are_independent(store: MemoryStore) -> None:
    scopes = [Scope(), Scope(None, "coder"), Scope("alice"), Scope("alice", "coder"), Scope("bob")]
    for n, scope in enumerate(scopes):
        store.commit(scope, MemoryDocument(facts=(_fact(n),)), expected_revision=0)
    for n, scope in enumerate(scopes):
        assert store.load(scope).facts == (_fact(n),)


def test_scopes_lists_every_stored_scope_with_its_exact_ids(store: MemoryStore) -> None:
    wanted = {
        Scope(),
        Scope(None, "coder"),
        Scope("alice@example.com"),
        Scope("Alice@Example.com", "Research Bot"),
        Scope("用户-42", "助手"),
        Scope("😀 emoji user"),
    }
    for scope in wanted:
        store.commit(scope, MemoryDocument(facts=(_fact(1),)), expected_revision=0)
    store.load(Scope("loaded-but-never-written"))
    assert set(store.scopes()) == wanted


def _incompressible(length: int, seed: str) -> str:
    """Text PostgreSQL cannot shrink by compressing it (unlike ``"u" * 3000``)."""
    chunks = (hashlib.sha256(f"{seed}{i}".encode()).hexdigest() for i in range(length // 64 + 1))
    return "".join(chunks)[:length]


def test_very_long_ids_and_ids_that_look_like_hashed_keys_stay_distinct(
    store: MemoryStore,
) -> None:
    # PostgreSQL cannot index a key of more than ~2700 bytes; an id that long is still valid
    long_user = _incompressible(3000, "user")
    long_agent = "智" + _incompressible(1500, "agent")
    lookalike = "\x01" + hashlib.sha256(long_user.encode("utf-8")).hexdigest()
    wanted = [
        Scope(long_user),
        Scope(long_user, long_agent),
        Scope("alice", long_agent),
        Scope(lookalike),
        Scope("\x01", "\x01"),
        Scope(long_user + "x"),
    ]
    for n, scope in enumerate(wanted):
        store.commit(scope, MemoryDocument(facts=(_fact(n),)), expected_revision=0)
    for n, scope in enumerate(wanted):
        assert store.load(scope).facts == (_fact(n),)
    store.clear(Scope(long_user, long_agent))
    assert store.load(Scope(long_user, long_agent)).generation == 1
    assert store.load(Scope(long_user)).facts == (_fact(0),)
    assert sorted(store.scopes(), key=repr) == sorted(wanted, key=repr)


def test_cleared_scope_is_still_listed(store: MemoryStore) -> None:
    store.clear(Scope("carol"))
    assert list(store.scopes()) == [Scope("carol")]


def test_returned_documents_cannot_be_mutated(store: MemoryStore) -> None:
    store.commit(ALICE, document_from_dict(RICH), expected_revision=0)
    doc = store.load(ALICE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.revision = 99  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.facts[0].content = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        doc.summaries["workContext"] = Summary("changed")  # type: ignore[index]
    with pytest.raises(TypeError):
        doc.extra["customTopLevel"]["nested"] = []  # type: ignore[index]
    assert store.load(ALICE).summary("workContext") == "Builds compilers"


@pytest.mark.parametrize("bad", ["", "with\x00nul"])
def test_empty_or_nul_ids_are_rejected(store: MemoryStore, bad: str) -> None:
    with pytest.raises(ValueError, match="user_id"):
        store.load(Scope(bad))
    with pytest.raises(ValueError, match="agent"):
        store.commit(Scope("alice", bad), MemoryDocument(), expected_revision=0)


@pytest.mark.parametrize("bad", ["alice", ("alice", None), None])
def test_a_scope_that_is_not_a_scope_is_a_type_error(store: MemoryStore, bad: object) -> None:
    with pytest.raises(TypeError, match="Scope"):
        store.load(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Scope"):
        store.commit(bad, MemoryDocument(), expected_revision=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Scope"):
        store.clear(bad)  # type: ignore[arg-type]
    assert list(store.scopes()) == []


def test_eight_threads_with_reload_and_retry_lose_no_update(store: MemoryStore) -> None:
    per_thread = 5
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def writer(t: int) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                add_fact_with_retry(store, ALICE, _fact(t * 100 + i))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    final = store.load(ALICE)
    assert final.revision == 8 * per_thread
    assert {f.id for f in final.facts} == {
        _fact(t * 100 + i).id for t in range(8) for i in range(per_thread)
    }


def test_new_instance_after_close_sees_the_data(durable_backend) -> None:
    first = durable_backend.open()
    stored = first.commit(Scope("alice", "coder"), document_from_dict(RICH), expected_revision=0)
    first.close()
    first.close()
    second = durable_backend.open()
    assert second is not first
    assert second.load(Scope("alice", "coder")) == stored
    assert list(second.scopes()) == [Scope("alice", "coder")]
    second.close()


def test_close_is_idempotent_and_store_satisfies_protocol(store: MemoryStore) -> None:
    assert isinstance(store, MemoryStore)
    store.close()
    store.close()
