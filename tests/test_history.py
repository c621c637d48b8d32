"""Change events (shape, JSON), their construction from apply/edits, and provenance."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memfold import _events, edits
from memfold.apply import ApplyContext, apply
from memfold.extract.base import ChangeSet, FactRemoval, NewFact
from memfold.history import ChangeEvent, events_for_fact, provenance, stamp
from memfold.model import Fact, MemoryDocument, Message, Summary, message_key

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
AT = "2026-12-01T10:00:00Z"


def test_an_event_round_trips_through_json_and_drops_empty_fields() -> None:
    event = ChangeEvent(
        kind="superseded", at=AT, actor="extraction", revision=7, fact_id="fact_1",
        before="Lives in Berlin", after="Lives in Paris", reason="moved",
        extractor="rules", thread_id="t1", message_keys=("id:m1",), replaced_by="fact_2",
    )  # fmt: skip
    data = event.to_dict()
    assert next(iter(data)) == "revision"  # the JSON store reads it without parsing the rest
    assert "replaces" not in data
    assert "excerpt" not in data
    assert ChangeEvent.from_dict(json.loads(json.dumps(data))) == event


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"kind": "exploded", "actor": "manual"}, "kind"),
        ({"kind": "added", "actor": "robot"}, "actor"),
        ({"kind": "added", "actor": "manual", "revision": -1}, "revision"),
        ({"kind": "added", "actor": "manual", "messageKeys": "m1"}, "messageKeys"),
        ({"kind": "added", "actor": "manual", "before": 3}, "before"),
    ],
)
def test_a_malformed_event_names_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ChangeEvent.from_dict(data)


def test_stamp_sets_the_commit_revision() -> None:
    events = (ChangeEvent("added", AT, "manual"), ChangeEvent("removed", AT, "manual", revision=4))
    assert [e.revision for e in stamp(events, 4)] == [4, 4]


def test_extraction_events_carry_the_users_words_and_link_a_supersession() -> None:
    old = Fact("fact_old", "Lives in Berlin", created_at="2026-01-01T00:00:00Z", source="t0")
    document = MemoryDocument(revision=3).with_changes(facts=[old])
    change_set = ChangeSet(
        new_facts=(NewFact("Lives in Paris", "context", 0.9),),
        removals=(FactRemoval("fact_old", "moved", replaced_by=0),),
    )
    result = apply(
        document, change_set, ApplyContext(now=NOW, thread_id="t9", new_id=lambda: "fact_new")
    )
    turns = (
        Message("user", "Some unrelated chatter about the weather today", "m1"),
        Message("assistant", "Sure."),
        Message("user", "Big news: I moved to Paris last month!", "m2"),
    )
    events = _events.from_changes(
        result.changes, at=AT, extractor="rules", thread_id="t9", turns=turns
    )
    by_kind = {e.kind: e for e in events}
    superseded, added = by_kind["superseded"], by_kind["added"]
    assert (superseded.fact_id, superseded.replaced_by) == ("fact_old", "fact_new")
    assert (superseded.before, superseded.after) == ("Lives in Berlin", "Lives in Paris")
    assert added.replaces == ("fact_old",)
    assert added.message_keys == (message_key(turns[2]),)
    assert added.excerpt == "Big news: I moved to Paris last month!"
    assert (added.actor, added.extractor, added.thread_id) == ("extraction", "rules", "t9")


def test_a_fact_with_no_word_in_common_names_every_user_turn() -> None:
    changes = apply(
        MemoryDocument(),
        ChangeSet(new_facts=(NewFact("Lives in Beijing", "context", 0.9),)),
        ApplyContext(now=NOW, thread_id="t1"),
    ).changes
    turns = (Message("user", "我住在北京"), Message("assistant", "好"), Message("user", "对"))
    (event,) = _events.from_changes(changes, at=AT, extractor="llm", thread_id="t1", turns=turns)
    assert event.message_keys == (message_key(turns[0]), message_key(turns[2]))
    assert event.excerpt == "对"


def test_a_long_message_is_quoted_around_the_facts_words_and_redacted() -> None:
    text = (
        "filler " * 80
        + "my api key is sk-proj-abcdefghijklmnopqrstuvwx1234 and I use Rust daily "
        + "tail " * 80
    )
    changes = apply(
        MemoryDocument(),
        ChangeSet(new_facts=(NewFact("Uses Rust daily", "knowledge", 0.9),)),
        ApplyContext(now=NOW, thread_id="t1"),
    ).changes
    (event,) = _events.from_changes(
        changes, at=AT, extractor="rules", thread_id="t1", turns=(Message("user", text),),
        scrub=lambda s: s.replace("sk-proj-abcdefghijklmnopqrstuvwx1234", "[REDACTED]"),
    )  # fmt: skip
    assert event.excerpt is not None
    assert "Rust" in event.excerpt
    assert len(event.excerpt) <= _events.EXCERPT_CHARS + 2
    assert event.excerpt.startswith("…")
    assert event.excerpt.endswith("…")
    assert "sk-proj" not in event.excerpt


def test_a_diff_describes_edits_removals_evictions_and_summaries() -> None:
    doc, kept = edits.add_fact(MemoryDocument(), "Name is Alice", now=NOW)
    doc = doc.with_changes(
        summaries={**doc.summaries, "personalContext": Summary("Name is Alice; Likes tea")}
    )
    edited, _ = edits.edit_fact(
        doc, kept.id, content="Name is Alice Smith", confidence=0.8, now=NOW
    )
    (edit_event, summary_event) = sorted(
        _events.from_diff(doc, edited, at=AT, actor="manual"), key=lambda e: e.kind
    )
    assert edit_event.kind == "edited"
    assert (edit_event.before, edit_event.after) == ("Name is Alice", "Name is Alice Smith")
    assert "confidence 0.90 → 0.80" in edit_event.reason
    assert summary_event.section == "personalContext"
    assert summary_event.after == "Name is Alice Smith; Likes tea"
    removed = edits.delete_fact(edited, kept.id, now=NOW)
    (gone, summary) = sorted(
        _events.from_diff(edited, removed, at=AT, actor="manual", gone=("evicted", "cap")),
        key=lambda e: e.kind,
    )
    assert (gone.kind, gone.actor, gone.reason) == ("evicted", "system", "cap")
    assert summary.after == "Likes tea"


def _ev(kind: str, fact_id: str | None, revision: int, **fields: object) -> ChangeEvent:
    return ChangeEvent(
        kind=kind,
        at=f"2026-12-0{revision}T00:00:00Z",
        actor="extraction",  # type: ignore[arg-type]
        revision=revision,
        fact_id=fact_id,
        **fields,
    )  # type: ignore[arg-type]


def test_provenance_of_a_superseded_fact_names_its_origin_and_successor() -> None:
    events = [
        _ev("added", "f1", 1, after="Lives in Berlin", thread_id="t1", excerpt="I live in Berlin"),
        _ev("added", "f2", 2, after="Lives in Paris", replaces=("f1",)),
        _ev(
            "superseded",
            "f1",
            2,
            before="Lives in Berlin",
            after="Lives in Paris",
            replaced_by="f2",
        ),
    ]
    old = provenance("f1", events, None)
    assert old is not None
    assert (old.status, old.content, old.thread_id) == ("superseded", "Lives in Berlin", "t1")
    assert old.origin is not None
    assert old.origin.excerpt == "I live in Berlin"
    assert old.superseded_by is not None
    assert old.superseded_by.fact_id == "f2"
    new = provenance("f2", events, Fact("f2", "Lives in Paris"))
    assert new is not None
    assert new.status == "live"
    assert [ref.fact_id for ref in new.supersedes] == ["f1"]
    assert json.loads(json.dumps(new.to_dict()))["supersedes"][0]["content"] == "Lives in Berlin"
    assert [e.kind for e in events_for_fact(events, "f2")] == ["added", "superseded"]


def test_provenance_after_a_clear_and_of_a_fact_older_than_the_history() -> None:
    events = [_ev("added", "f1", 1, after="x"), _ev("cleared", None, 2)]
    cleared = provenance("f1", events, None)
    assert cleared is not None
    assert cleared.status == "cleared"
    assert cleared.changes[-1].kind == "cleared"
    legacy = provenance("f9", [], Fact("f9", "Old", created_at="2025-01-01T00:00:00Z", source="t0"))
    assert legacy is not None
    assert (legacy.complete, legacy.thread_id, legacy.created_at) == (
        False,
        "t0",
        "2025-01-01T00:00:00Z",
    )
    assert provenance("nope", events, None) is None
