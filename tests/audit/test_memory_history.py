"""Parts 1-3 through the public API on every store: change history, provenance
(``explain``) and supersession, with the rule extractor and an LLM."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from memfold import ChangeEvent, FactNotFoundError, FactProvenance, Memory, MemoryConfig
from memfold.model import message_key
from memfold.testing import InMemoryStore, ScriptedChatModel

if TYPE_CHECKING:
    from conftest import MakeMemory  # tests/audit/conftest.py

BERLIN = [
    {"role": "user", "content": "Hi, I'm Alice. I live in Berlin and work at Zalando.", "id": "m1"},
    {"role": "assistant", "content": "Nice to meet you, Alice.", "id": "m2"},
]
PARIS = [
    {"role": "user", "content": "Big news: I live in Paris now.", "id": "m3"},
    {"role": "assistant", "content": "Congratulations on the move!", "id": "m4"},
]


def fact_id(mem: Memory, content: str, **scope: str) -> str:
    found = [f.id for f in mem.get(**scope).facts if f.content == content]
    assert found, f"{content!r} not in {[f.content for f in mem.get(**scope).facts]}"
    return found[0]


def test_extraction_events_say_who_when_and_from_which_words(make_mem: MakeMemory) -> None:
    mem = make_mem()
    mem.update(BERLIN, thread_id="t1", user_id="alice")
    berlin = fact_id(mem, "Lives in Berlin", user_id="alice")
    events = mem.history(user_id="alice", fact_id=berlin)
    assert [e.kind for e in events] == ["added"]
    added = events[0]
    assert (added.actor, added.extractor, added.thread_id) == ("extraction", "rules", "t1")
    assert added.after == "Lives in Berlin"
    assert added.message_keys == ("id:m1",)
    assert added.excerpt == BERLIN[0]["content"]
    assert added.revision == mem.get(user_id="alice").revision
    assert added.at.endswith("Z")


def test_a_persons_edits_clears_and_imports_are_all_in_the_history(
    make_mem: MakeMemory,
) -> None:
    mem = make_mem()
    fact = mem.add_fact("Owns a cat", user_id="bob")
    mem.edit_fact(fact.id, content="Owns two cats", confidence=0.8, user_id="bob")
    mem.delete_fact(fact.id, user_id="bob")
    mem.add_fact("Plays chess", user_id="bob")
    exported = mem.export(user_id="bob")
    mem.clear(user_id="bob")
    mem.import_document(exported, user_id="bob")
    kinds = [(e.kind, e.actor) for e in reversed(mem.history(user_id="bob"))]
    assert kinds == [
        ("added", "manual"),
        ("edited", "manual"),
        ("removed", "manual"),
        ("added", "manual"),
        ("cleared", "manual"),
        ("imported", "import"),
        ("imported", "import"),
    ]
    edited = mem.history(user_id="bob", fact_id=fact.id)
    assert [e.kind for e in edited] == ["removed", "edited", "added"]  # newest first
    assert (edited[1].before, edited[1].after) == ("Owns a cat", "Owns two cats")
    assert "confidence 0.90 → 0.80" in edited[1].reason
    assert edited[0].before == "Owns two cats"
    assert mem.history(user_id="bob", limit=2) == mem.history(user_id="bob")[:2]
    cleared = next(e for e in mem.history(user_id="bob") if e.kind == "cleared")
    assert cleared.reason == "cleared 1 facts and 0 summaries"


@pytest.mark.parametrize("storage", ["json", "sqlite", "postgres"], indirect=True)
def test_history_survives_a_new_memory_on_the_same_store(make_mem: MakeMemory) -> None:
    first = make_mem()
    first.add_fact("Owns a cat", user_id="bob")
    first.close()
    assert [e.after for e in make_mem().history(user_id="bob")] == ["Owns a cat"]


def test_history_is_bounded_by_max_history_events(make_mem: MakeMemory) -> None:
    mem = make_mem(max_history_events=3)
    for n in range(6):
        mem.add_fact(f"Fact number {n}", user_id="bob")
    assert [e.after for e in mem.history(user_id="bob", limit=None)] == [
        "Fact number 5",
        "Fact number 4",
        "Fact number 3",
    ]


def test_a_new_home_city_supersedes_the_old_one_and_both_are_explained(
    make_mem: MakeMemory,
) -> None:
    mem = make_mem()
    mem.update(BERLIN, thread_id="t1", user_id="alice")
    berlin = fact_id(mem, "Lives in Berlin", user_id="alice")
    result = mem.update(PARIS, thread_id="t2", user_id="alice")
    assert result.count("superseded") == 1
    paris = fact_id(mem, "Lives in Paris", user_id="alice")
    assert mem.get(user_id="alice").fact(berlin) is None
    assert "Berlin" not in mem.context(user_id="alice")

    old = mem.explain(berlin, user_id="alice")
    assert isinstance(old, FactProvenance)
    assert (old.status, old.content, old.fact) == ("superseded", "Lives in Berlin", None)
    assert old.superseded_by is not None
    assert (old.superseded_by.fact_id, old.superseded_by.content) == (paris, "Lives in Paris")
    assert old.origin is not None
    assert (old.origin.thread_id, old.origin.extractor) == ("t1", "rules")
    assert "I live in Berlin" in (old.origin.excerpt or "")
    assert [e.kind for e in old.changes] == ["added", "superseded"]

    new = mem.explain(paris, user_id="alice")
    assert new.status == "live"
    assert new.fact is not None
    assert [(r.fact_id, r.content) for r in new.supersedes] == [(berlin, "Lives in Berlin")]
    assert new.origin is not None
    assert new.origin.message_keys == ("id:m3",)
    assert new.origin.replaces == (berlin,)
    json.dumps(new.to_dict())  # JSON-ready for the REST and MCP faces


def test_an_llm_replacement_is_recorded_as_superseded_with_its_reason(
    make_mem: MakeMemory,
) -> None:
    first = (
        '{"newFacts": [{"content": "Works at Zalando", "category": "context", "confidence": 0.95,'
        ' "scope": "user", "durability": "durable"}], "factsToRemove": []}'
    )
    second = (
        '{"newFacts": [{"content": "Works at Spotify", "category": "context", "confidence": 0.95,'
        ' "scope": "user", "durability": "durable"}],'
        ' "factsToRemove": [{"ref": "f1", "reason": "changed jobs", "replacedBy": 0}]}'
    )
    mem = make_mem(chat_model=ScriptedChatModel([first, second]))
    mem.update(BERLIN, thread_id="t1", user_id="alice")
    zalando = fact_id(mem, "Works at Zalando", user_id="alice")
    mem.update(
        [{"role": "user", "content": "I started at Spotify this week."},
         {"role": "assistant", "content": "Congrats!"}],
        thread_id="t2", user_id="alice",
    )  # fmt: skip
    (event,) = [e for e in mem.history(user_id="alice", fact_id=zalando) if e.kind != "added"]
    assert event.kind == "superseded"
    assert (event.actor, event.extractor) == ("extraction", "llm")
    assert event.after == "Works at Spotify"
    assert "changed jobs" in event.reason
    assert mem.explain(zalando, user_id="alice").superseded_by is not None


def test_explain_of_an_unknown_fact_is_a_clear_error(make_mem: MakeMemory) -> None:
    mem = make_mem()
    with pytest.raises(FactNotFoundError, match="fact_nope"):
        mem.explain("fact_nope", user_id="alice")


def test_a_fact_stored_before_history_existed_is_explained_from_itself(
    make_mem: MakeMemory,
) -> None:
    mem = make_mem(max_history_events=0)
    mem.update(BERLIN, thread_id="t1", user_id="alice")
    berlin = fact_id(mem, "Lives in Berlin", user_id="alice")
    assert mem.history(user_id="alice") == []
    found = mem.explain(berlin, user_id="alice")
    assert (found.status, found.complete, found.thread_id, found.origin) == (
        "live",
        False,
        "t1",
        None,
    )


def test_a_store_without_history_still_works(tmp_path) -> None:
    class PlainStore:
        """Only the MemoryStore methods (a third-party store written for 0.1)."""

        def __init__(self) -> None:
            self.inner = InMemoryStore()

        def load(self, scope):  # type: ignore[no-untyped-def]
            return self.inner.load(scope)

        def commit(self, scope, document, *, expected_revision):  # type: ignore[no-untyped-def]
            return self.inner.commit(scope, document, expected_revision=expected_revision)

        def clear(self, scope):  # type: ignore[no-untyped-def]
            return self.inner.clear(scope)

        def scopes(self):  # type: ignore[no-untyped-def]
            return self.inner.scopes()

        def close(self) -> None:
            pass

    with Memory(MemoryConfig(home=tmp_path, extractor="rules"), store=PlainStore()) as mem:
        mem.update(BERLIN, thread_id="t1", user_id="alice")
        mem.delete_fact(fact_id(mem, "Lives in Berlin", user_id="alice"), user_id="alice")
        mem.clear(user_id="alice")
        assert mem.history(user_id="alice") == []
        with pytest.raises(Exception, match="cannot erase a user"):
            mem.forget_user("alice")


def test_change_events_are_redacted(make_mem: MakeMemory) -> None:
    mem = make_mem()
    secret = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
    mem.update(
        [{"role": "user", "content": f"I live in Berlin. My key is {secret}"},
         {"role": "assistant", "content": "Noted."}],
        thread_id="t1", user_id="alice",
    )  # fmt: skip
    text = json.dumps([e.to_dict() for e in mem.history(user_id="alice")])
    assert "Berlin" in text
    assert secret not in text


def test_event_keys_name_messages_without_ids_by_content_hash(make_mem: MakeMemory) -> None:
    from memfold.model import Message

    mem = make_mem()
    mem.update(
        [("user", "I live in Lisbon."), ("assistant", "Lovely city.")], thread_id="t1", user_id="u"
    )
    (added,) = [e for e in mem.history(user_id="u") if e.kind == "added"]
    assert added.message_keys == (message_key(Message("user", "I live in Lisbon.")),)
    assert isinstance(added, ChangeEvent)


@pytest.mark.parametrize("storage", ["json"], indirect=True)
@pytest.mark.parametrize(
    ("before", "after", "old", "new"),
    [
        ("I work at Zalando.", "I work at Spotify now.", "Works at Zalando", "Works at Spotify"),
        ("I'm a teacher.", "I'm a nurse.", "Is a teacher", "Is a nurse"),
        ("My name is Alice.", "My name is Alicia.", "Name is Alice", "Name is Alicia"),
        ("I love Python.", "I hate Python.", "Likes Python", "Dislikes Python"),
        (
            "I prefer short answers.",
            "I prefer detailed answers.",
            "Prefers short answers",
            "Prefers detailed answers",
        ),
    ],
)
def test_rule_slots_and_opposite_preferences_supersede_their_old_value(
    make_mem: MakeMemory, before: str, after: str, old: str, new: str
) -> None:
    mem = make_mem()
    mem.update([("user", before), ("assistant", "Ok.")], thread_id="t1", user_id="u")
    old_id = fact_id(mem, old, user_id="u")
    mem.update([("user", after), ("assistant", "Ok.")], thread_id="t2", user_id="u")
    assert [f.content for f in mem.get(user_id="u").facts] == [new]
    found = mem.explain(old_id, user_id="u")
    assert found.status == "superseded"
    assert found.superseded_by is not None
    assert found.superseded_by.content == new
    assert old not in mem.context(user_id="u")


@pytest.mark.parametrize("storage", ["json"], indirect=True)
@pytest.mark.parametrize("limit", [0, -1, True, "5"])
def test_a_bad_history_limit_is_a_clear_error(make_mem: MakeMemory, limit: object) -> None:
    mem = make_mem()
    mem.add_fact("Owns a cat", user_id="bob")
    for fact_id_ in (None, "fact_x"):
        with pytest.raises(ValueError, match="limit"):
            mem.history(user_id="bob", fact_id=fact_id_, limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("storage", ["json", "sqlite"], indirect=True)
def test_text_stored_unredacted_is_redacted_when_history_and_reports_are_read(
    make_mem: MakeMemory,
) -> None:
    """Events and facts written before a pattern existed (or by another tool) are
    redacted at recall, like context() and export()."""
    from memfold.model import Fact, MemoryDocument, Scope

    secret = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6"
    mem = make_mem()
    store = mem._store  # write around Memory, as an older memfold or a script would
    event = ChangeEvent(
        "added", "2026-01-01T00:00:00Z", "manual", fact_id="fact_1",
        after=f"Key is {secret}", excerpt=f"my key is {secret}",
    )  # fmt: skip
    doc = MemoryDocument(facts=(Fact("fact_1", f"Key is {secret}"),))
    store.commit(Scope("eve"), doc, expected_revision=0, events=(event,))  # type: ignore[call-arg]
    text = json.dumps([e.to_dict() for e in mem.history(user_id="eve")])
    assert secret not in text
    assert "Key is" in text
    assert secret not in json.dumps(mem.explain("fact_1", user_id="eve").to_dict())
    report = mem.explain_context(user_id="eve")
    assert report.text == mem.context(user_id="eve")
    assert secret not in json.dumps(report.to_dict())
