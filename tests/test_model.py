import json
from dataclasses import FrozenInstanceError

import pytest

from memfold.model import (
    DocumentError,
    Fact,
    MemoryDocument,
    Message,
    Scope,
    Signals,
    document_from_dict,
    document_to_dict,
    message_key,
)

V1_DOCUMENT = {
    "version": "1.0",
    "lastUpdated": "2026-05-01T10:00:00Z",
    "user": {
        "workContext": {"summary": "Data engineer at Acme", "updatedAt": "2026-05-01T10:00:00Z"},
        "personalContext": {"summary": "Lives in Berlin", "updatedAt": ""},
        "topOfMind": {"summary": "", "updatedAt": ""},
    },
    "history": {
        "recentMonths": {"summary": "Migrated pipelines to Airflow", "updatedAt": ""},
        "earlierContext": {"summary": "", "updatedAt": ""},
        "longTermBackground": {"summary": "", "updatedAt": ""},
    },
    "facts": [
        {
            "id": "fact_1a2b3c4d",
            "content": "Prefers concise answers",
            "category": "preference",
            "confidence": 0.9,
            "createdAt": "2026-05-01T10:00:00Z",
            "source": "thread-1",
        },
        {
            "id": "fact_deadbeef",
            "content": "Uses Python 3.12",
            "category": "knowledge",
            "confidence": 0.85,
            "createdAt": "2026-05-01T10:00:00Z",
            "source": "thread-2",
            "sourceError": None,
            "tags": ["lang"],
        },
    ],
}


def test_reference_v1_document_reads_unchanged():
    doc = document_from_dict(V1_DOCUMENT)
    assert doc.revision == 0
    assert doc.generation == 0
    assert doc.summary("workContext") == "Data engineer at Acme"
    assert doc.summary("recentMonths") == "Migrated pipelines to Airflow"
    assert [f.id for f in doc.facts] == ["fact_1a2b3c4d", "fact_deadbeef"]
    assert doc.facts[1].category == "knowledge"
    assert doc.facts[0].source == "thread-1"


def test_unknown_fields_survive_a_round_trip():
    data = json.loads(json.dumps(V1_DOCUMENT))
    data["customTopLevel"] = {"nested": [1, 2, {"x": True}]}
    data["user"]["workContext"]["mood"] = "busy"
    data["user"]["extraSection"] = {"summary": "kept"}
    out = document_to_dict(document_from_dict(data))
    assert out["customTopLevel"] == {"nested": [1, 2, {"x": True}]}
    assert out["user"]["workContext"]["mood"] == "busy"
    assert out["user"]["extraSection"] == {"summary": "kept"}
    assert out["facts"][1]["tags"] == ["lang"]
    assert document_from_dict(out) == document_from_dict(data)


def test_documents_and_their_parts_are_immutable():
    doc = document_from_dict(V1_DOCUMENT)
    with pytest.raises(FrozenInstanceError):
        doc.facts[0].content = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        doc.summaries["workContext"] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        doc.facts[1].extra["tags"] = ["x"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.update(facts={"not": "a list"}), "facts"),
        (lambda d: d["facts"][0].update(confidence="high"), "facts[0].confidence"),
        (lambda d: d["facts"][0].pop("id"), "facts[0].id"),
        (lambda d: d["facts"][1].update(id="fact_1a2b3c4d"), "duplicate id"),
        (lambda d: d.update(revision=-1), "revision"),
        (lambda d: d["user"].update(workContext="text"), "user.workContext"),
        (lambda d: d.update(facts={}), "facts: expected a list"),
        (lambda d: d.update(user=[]), "user: expected an object"),
        (lambda d: d.update(__user_extra__={"x": 1}), "__user_extra__: a reserved key"),
    ],
)
def test_malformed_document_error_names_the_field(mutate, field):
    data = json.loads(json.dumps(V1_DOCUMENT))
    mutate(data)
    with pytest.raises(DocumentError, match=field.replace("[", r"\[").replace("]", r"\]")):
        document_from_dict(data)


def test_not_an_object_is_rejected():
    with pytest.raises(DocumentError, match="expected a JSON object"):
        document_from_dict([1, 2])


def test_watermarks_round_trip():
    data = {"watermarks": {"t1": {"messageKey": "id:m5", "updatedAt": "2026-01-01T00:00:00Z"}}}
    doc = document_from_dict(data)
    assert doc.watermarks["t1"].message_key == "id:m5"
    assert document_to_dict(doc)["watermarks"] == data["watermarks"]


def test_empty_document_is_empty_and_a_fact_makes_it_not():
    doc = document_from_dict({})
    assert doc.is_empty
    assert not doc.with_changes(facts=[Fact("fact_00000000", "x")]).is_empty


def test_message_key_uses_id_else_role_and_content():
    assert message_key(Message("user", "hi", id="m1")) == "id:m1"
    a = message_key(Message("user", "hi"))
    assert a == message_key(Message("user", "hi"))
    assert a != message_key(Message("assistant", "hi"))
    assert a != message_key(Message("user", "hi!"))


def test_signals_merge_is_an_or():
    merged = Signals(correction=True).merge(Signals(reinforcement=True))
    assert merged == Signals(correction=True, reinforcement=True)
    assert not Signals()


def test_scope_prints_readably():
    assert str(Scope("alice", "coder")) == "user 'alice', agent 'coder'"
    assert str(Scope()) == "user <default user>"


def test_scope_with_a_huge_id_prints_a_short_message():
    text = str(Scope("x" * 100_000, "a" * 500))
    assert len(text) < 200
    assert text.startswith("user 'xxx")


def test_facts_read_on_the_fast_path_are_ordinary_frozen_facts() -> None:
    import dataclasses

    made = Fact("fact_1", "Likes tea", "preference", 0.8, "2026-01-01", "2026-01-02", "t1", None)
    read = document_from_dict(document_to_dict(MemoryDocument(facts=(made,)))).facts[0]
    assert read == made
    assert hash(read) == hash(made)
    assert dataclasses.replace(read, content="Likes coffee").content == "Likes coffee"
    with pytest.raises(FrozenInstanceError):
        read.content = "changed"  # type: ignore[misc]
    # a fact with an unknown field or a wrong type still takes the checked path
    odd = {**document_to_dict(MemoryDocument(facts=(made,)))}
    odd["facts"] = [{**odd["facts"][0], "confidence": 1}, {**odd["facts"][0], "id": "f2", "x": 1}]
    first, second = document_from_dict(odd).facts
    assert first.confidence == 1.0
    assert dict(second.extra) == {"x": 1}
