"""Manual edits of ``memfold.edits``: add, edit and delete facts by hand."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from memfold.apply import ApplyContext, apply
from memfold.edits import ORIGINAL_SOURCE_KEY, add_fact, delete_fact, edit_fact
from memfold.errors import DuplicateFactError, FactNotFoundError
from memfold.extract.base import ChangeSet, FactRemoval, NewFact
from memfold.model import (
    MANUAL_SOURCE,
    Fact,
    MemoryDocument,
    Scope,
    Signals,
    document_from_dict,
    document_to_dict,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NOW_ISO = "2026-11-30T12:00:00Z"
EARLIER = "2026-01-01T00:00:00Z"


def fact(
    fact_id: str,
    content: str,
    *,
    confidence: float = 0.8,
    source: str | None = "t0",
    extra: dict[str, object] | None = None,
) -> Fact:
    return Fact(
        id=fact_id, content=content, confidence=confidence, created_at=EARLIER,
        updated_at=EARLIER, source=source, extra=extra or {},
    )  # fmt: skip


def doc(*facts: Fact) -> MemoryDocument:
    return MemoryDocument(revision=3, generation=1, last_updated=EARLIER, facts=facts)


def contents(document: MemoryDocument) -> list[str]:
    return [f.content for f in document.facts]


def remove(document: MemoryDocument, fact_id: str, *, correction: bool) -> MemoryDocument:
    """What an extractor's removal of ``fact_id`` does to the document."""
    context = ApplyContext(now=NOW, thread_id="t9", signals=Signals(correction=correction))
    return apply(document, ChangeSet(removals=(FactRemoval(fact_id),)), context).document


# --- moved from test_apply.py ---------------------------------------------------------


def test_add_fact_creates_a_manual_fact() -> None:
    document, added = add_fact(doc(), " Is vegetarian ", category="Preference", now=NOW)
    assert added in document.facts
    assert added.source == MANUAL_SOURCE
    assert added.is_manual
    assert (added.content, added.category, added.confidence) == ("Is vegetarian", "preference", 0.9)
    assert document.last_updated == NOW_ISO


def test_add_fact_rejects_a_duplicate() -> None:
    base = doc(fact("fact_00000001", "Is vegetarian."))
    with pytest.raises(DuplicateFactError) as info:
        add_fact(base, "is  VEGETARIAN", now=NOW)
    assert info.value.existing_id == "fact_00000001"


@pytest.mark.parametrize(
    ("content", "confidence", "message"),
    [("", 0.9, "content=''"), ("Ok", 1.5, "confidence=1.5"), ("Ok", math.nan, "confidence=nan")],
)
def test_add_fact_rejects_invalid_values(content: str, confidence: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        add_fact(doc(), content, confidence=confidence, now=NOW)


def test_add_fact_at_the_cap_evicts_the_least_trusted_automatic_fact() -> None:
    base = doc(
        fact("fact_00000001", "Weak", confidence=0.7),
        fact("fact_00000002", "Manual", confidence=0.1, source=MANUAL_SOURCE),
    )
    document, added = add_fact(base, "New", now=NOW, max_facts=2)
    assert contents(document) == ["Manual", "New"]
    assert added.content == "New"


def test_add_fact_when_all_facts_are_manual_asks_to_raise_max_facts() -> None:
    base = doc(fact("fact_00000001", "Manual", source=MANUAL_SOURCE))
    with pytest.raises(ValueError, match="raise max_facts"):
        add_fact(base, "Another", now=NOW, max_facts=1)


def test_edit_fact_changes_fields_and_sets_updated_at() -> None:
    base = doc(fact("fact_00000001", "Likes tea"), fact("fact_00000002", "Uses Go"))
    document, edited = edit_fact(
        base, "fact_00000001", content="Likes green tea", category="Preference",
        confidence=1, now=NOW,
    )  # fmt: skip
    assert edited == document.facts[0]
    assert (edited.content, edited.category, edited.confidence) == (
        "Likes green tea",
        "preference",
        1.0,
    )
    assert (edited.created_at, edited.updated_at) == (EARLIER, NOW_ISO)
    assert edited.source == MANUAL_SOURCE  # was "t0": an edited fact becomes manual
    assert edited.extra[ORIGINAL_SOURCE_KEY] == "t0"
    assert document.facts[1] == base.facts[1]


def test_edit_fact_without_a_real_change_returns_the_document_unchanged() -> None:
    base = doc(fact("fact_00000001", "Likes tea"))
    document, edited = edit_fact(base, "fact_00000001", content="Likes tea", now=NOW)
    assert document is base
    assert edited == base.facts[0]


def test_edit_fact_into_a_duplicate_of_another_fact_is_rejected() -> None:
    base = doc(fact("fact_00000001", "Likes tea"), fact("fact_00000002", "Uses Go"))
    with pytest.raises(DuplicateFactError):
        edit_fact(base, "fact_00000001", content="uses go.", now=NOW)


def test_edit_and_delete_of_unknown_fact_raise_not_found_with_scope() -> None:
    with pytest.raises(FactNotFoundError) as info:
        edit_fact(doc(), "fact_missing", content="x", now=NOW, scope="alice")
    assert info.value.scope == "alice"
    with pytest.raises(FactNotFoundError, match="fact_missing"):
        delete_fact(doc(), "fact_missing")


def test_delete_fact_removes_manual_and_automatic_facts() -> None:
    base = doc(fact("fact_00000001", "A", source=MANUAL_SOURCE), fact("fact_00000002", "B"))
    document = delete_fact(base, "fact_00000001")
    document = delete_fact(document, "fact_00000002", now=NOW)
    assert document.facts == ()
    assert document.last_updated == NOW_ISO


# --- an edited fact becomes manual --------------------------------------------------------


def test_edited_extracted_fact_is_protected_from_removal_without_a_correction() -> None:
    base = doc(fact("fact_00000001", "Likes tea"), fact("fact_00000002", "Uses Go"))
    assert contents(remove(base, "fact_00000001", correction=False)) == ["Uses Go"]
    document, _ = edit_fact(base, "fact_00000001", content="Likes green tea", now=NOW)
    assert contents(remove(document, "fact_00000001", correction=False)) == [
        "Likes green tea",
        "Uses Go",
    ]
    assert contents(remove(document, "fact_00000001", correction=True)) == ["Uses Go"]


def test_editing_only_the_confidence_also_makes_the_fact_manual() -> None:
    base = doc(fact("fact_00000001", "Likes tea", source=None))
    _, edited = edit_fact(base, "fact_00000001", confidence=0.6, now=NOW)
    assert edited.is_manual
    assert ORIGINAL_SOURCE_KEY in edited.extra
    assert edited.extra[ORIGINAL_SOURCE_KEY] is None


def test_editing_a_manual_fact_keeps_it_manual_without_an_original_source() -> None:
    document, added = add_fact(doc(), "Likes tea", now=NOW)
    later = datetime(2026, 12, 1, tzinfo=UTC)
    document, edited = edit_fact(document, added.id, content="Likes green tea", now=later)
    assert edited.source == MANUAL_SOURCE
    assert ORIGINAL_SOURCE_KEY not in edited.extra
    assert (edited.created_at, edited.updated_at) == (NOW_ISO, "2026-12-01T00:00:00Z")


def test_edit_without_a_real_change_leaves_an_extracted_fact_automatic() -> None:
    base = doc(fact("fact_00000001", "Likes tea"))
    _, edited = edit_fact(base, "fact_00000001", content=" Likes tea ", now=NOW)
    assert edited.source == "t0"
    assert ORIGINAL_SOURCE_KEY not in edited.extra


def test_original_source_is_stored_beside_other_unknown_keys_and_read_back() -> None:
    base = doc(fact("fact_00000001", "Likes tea", extra={"mood": "calm"}))
    document, _ = edit_fact(base, "fact_00000001", content="Likes green tea", now=NOW)
    stored = document_to_dict(document)["facts"][0]
    assert (stored["source"], stored[ORIGINAL_SOURCE_KEY], stored["mood"]) == (
        MANUAL_SOURCE,
        "t0",
        "calm",
    )
    reread = document_from_dict(document_to_dict(document)).facts[0]
    assert reread.is_manual
    assert reread.extra[ORIGINAL_SOURCE_KEY] == "t0"


def test_edited_fact_is_evicted_only_after_automatic_ones() -> None:
    base = doc(fact("fact_00000001", "Weak", confidence=0.1), fact("fact_00000002", "Strong"))
    document, _ = edit_fact(base, "fact_00000001", content="Weak but vouched for", now=NOW)
    context = ApplyContext(now=NOW, thread_id="t9", max_facts=2)
    result = apply(document, ChangeSet(new_facts=(NewFact("New", "context", 0.9),)), context)
    assert contents(result.document) == ["Weak but vouched for", "New"]


# --- messages and compatibility ------------------------------------------------------------


def test_duplicate_errors_name_the_scope_the_existing_fact_and_the_fix() -> None:
    base = doc(fact("fact_00000001", "Likes tea"), fact("fact_00000002", "Uses Go"))
    scope = Scope("alice", "coder")
    with pytest.raises(DuplicateFactError) as added:
        add_fact(base, "likes tea", now=NOW, scope=scope)
    with pytest.raises(DuplicateFactError) as edited:
        edit_fact(base, "fact_00000002", content="Likes tea.", now=NOW, scope=scope)
    for info in (added, edited):
        message = str(info.value)
        assert "user 'alice', agent 'coder'" in message
        assert "fact_00000001" in message
        assert "edit or delete fact_00000001" in message
        assert info.value.existing_id == "fact_00000001"


def test_duplicate_error_without_a_scope_still_names_the_fix() -> None:
    with pytest.raises(DuplicateFactError, match=r"exists: fact_00000001 .*edit or delete"):
        add_fact(doc(fact("fact_00000001", "Likes tea")), "Likes tea", now=NOW)
