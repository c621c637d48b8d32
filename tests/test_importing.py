"""``memfold.importing``: which documents are recognised and how lenient mode repairs."""

from __future__ import annotations

import pytest

from memfold.importing import check_import, merge_into
from memfold.model import DocumentError, Fact, MemoryDocument


def test_formats_are_told_apart():
    assert check_import({"facts": []}).format == "deerflow-v1"
    assert check_import({"revision": 3, "facts": []}).format == "memfold"


@pytest.mark.parametrize(
    ("data", "message"),
    [([1, 2], "not a list"), ("text", "got a JSON string"), (None, "got a JSON null"),
     (3, "got a JSON number"), ({"results": []}, "found keys: results"), ({}, "found keys: none")],
)  # fmt: skip
def test_what_is_not_a_memory_document_is_refused(data, message):
    with pytest.raises(DocumentError, match=message):
        check_import(data)


def test_deep_nesting_is_refused_not_a_recursion_error():
    deep: object = []
    for _ in range(50_000):
        deep = [deep]
    with pytest.raises(DocumentError, match="nested"):
        check_import({"facts": [{"id": "a", "content": "x", "tags": deep}]})
    with pytest.raises(DocumentError, match="nested"):
        check_import({"facts": [{"id": "a", "content": "x", "tags": deep}]}, lenient=True)


def test_out_of_range_confidence_is_refused_strictly_and_clamped_leniently():
    data = {"facts": [{"id": "a", "content": "x", "confidence": -0.5}]}
    with pytest.raises(DocumentError, match=r"facts\[0\].confidence=-0.5: must be between 0 and 1"):
        check_import(data)
    checked = check_import(data, lenient=True)
    assert checked.document.facts[0].confidence == 0.0


def test_lenient_mode_repairs_every_kind_of_bad_item():
    data = {
        "revision": -1,
        "generation": "x",
        "lastUpdated": 5,
        "user": {"workContext": "Data engineer", "personalContext": [1], "topOfMind":
                 {"summary": ["a"], "updatedAt": 3}},
        "history": "nope",
        "facts": [
            "just text",
            {"content": "No id"},
            {"id": "d", "content": "Dup one"},
            {"id": "d", "content": "Dup two"},
            {"id": "e", "content": "Odd fields", "category": 7, "createdAt": 1, "source": []},
            {"id": "f", "content": "Infinite", "confidence": float("inf")},
            {"id": "g", "content": "   "},
        ],
        "watermarks": {"t": "not an object"},
    }  # fmt: skip
    checked = check_import(data, lenient=True)
    doc = checked.document
    assert [f.content for f in doc.facts] == [
        "No id",
        "Dup one",
        "Dup two",
        "Odd fields",
        "Infinite",
    ]
    assert len({f.id for f in doc.facts}) == 5
    assert doc.summary("workContext") == "Data engineer"
    assert doc.summary("topOfMind") == ""
    assert doc.fact("f").confidence == 0.5
    assert doc.fact("e").category == "context"
    repairs = "\n".join(checked.repairs)
    expected = (
        "revision=-1", "generation='x'", "lastUpdated=5", "a bare string",
        "user.personalContext: expected an object, got an array", "topOfMind.summary: an array",
        "topOfMind.updatedAt", "history: expected an object", "facts[0]: expected an object",
        "id None missing or repeated", "id 'd' missing or repeated", ".category=7",
        "confidence=inf", "facts[6] (id 'g'): no text content", "watermarks: unreadable",
    )  # fmt: skip
    for text in expected:
        assert text in repairs, text


def test_facts_that_are_not_a_list_are_dropped_leniently():
    checked = check_import({"facts": {"a": 1}, "user": {}}, lenient=True)
    assert checked.document.facts == ()
    assert checked.repairs == ("facts: expected a list, got an object; dropped",)


def test_merge_keeps_stored_summaries_and_renames_a_taken_id():
    current = MemoryDocument(facts=(Fact("a", "Owns a cat"),)).with_changes()
    incoming = check_import({"user": {"workContext": {"summary": "Engineer"}},
                             "facts": [{"id": "a", "content": "Knows Go"}]}).document  # fmt: skip
    merged, added = merge_into(current, incoming)
    assert added == 1
    assert [f.content for f in merged.facts] == ["Owns a cat", "Knows Go"]
    assert merged.facts[1].id != "a"
    assert merged.summary("workContext") == "Engineer"
