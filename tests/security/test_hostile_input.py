"""Hostile arguments and text at the public API: bad ids fail at the call, text is
sanitised at capture, and no input can make a scope unreadable (findings D1, D3, D14, D15,
D17, D19)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory
from memfold.conversation import capture
from memfold.errors import InvalidDocumentError
from memfold.model import (
    MAX_ID_CHARS,
    MAX_NESTING,
    Fact,
    MemoryDocument,
    Scope,
    Summary,
    Watermark,
    check_document,
    document_from_dict,
    document_to_dict,
    validate_id,
)
from memfold.store.jsonfile import JsonFileStore
from memfold.store.sqlite import SqliteStore
from memfold.testing import InMemoryStore

CHAT = [
    {"role": "user", "content": "I live in Oslo"},
    {"role": "assistant", "content": "Nice"},
]

BAD_IDS: list[tuple[object, type[Exception], str]] = [
    (42, TypeError, "must be a string"),
    (True, TypeError, "must be a string"),
    (["t"], TypeError, "must be a string"),
    ("", ValueError, "must not be empty"),
    ("a\x00b", ValueError, "NUL"),
    ("a\ud800", ValueError, "not valid Unicode"),
    ("x" * (MAX_ID_CHARS + 1), ValueError, "characters long"),
]


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def _memory(tmp_path: Path, **kw: Any) -> Memory:
    kw.setdefault("debounce_seconds", 0)
    kw.setdefault("start_workers", False)
    return Memory(home=tmp_path / "home", **kw)


@pytest.mark.parametrize(("bad", "error", "words"), BAD_IDS)
@pytest.mark.parametrize("argument", ["thread_id", "user_id", "agent"])
def test_record_refuses_a_bad_id_at_the_call_and_queues_nothing(
    tmp_path: Path, argument: str, bad: object, error: type[Exception], words: str
) -> None:
    ids: dict[str, Any] = {"thread_id": "t", "user_id": "alice", "agent": None}
    ids[argument] = bad
    with _memory(tmp_path) as mem:
        with pytest.raises(error, match=words) as caught:
            mem.record(CHAT, **ids)
        assert argument in str(caught.value)
        assert len(str(caught.value)) < 300  # D19: a long id is cut in the message
        assert mem.status().pending == 0
        with pytest.raises(error, match=words):
            mem.update(CHAT, **ids)


@pytest.mark.parametrize(("bad", "error", "words"), BAD_IDS[:1] + BAD_IDS[3:])
def test_every_scoped_call_validates_user_id_and_agent(
    tmp_path: Path, bad: object, error: type[Exception], words: str
) -> None:
    with _memory(tmp_path) as mem:
        fact = mem.add_fact("Likes tea", user_id="alice")
        calls = [
            mem.get,
            mem.context,
            mem.export,
            lambda **ids: mem.add_fact("Likes coffee", **ids),
            lambda **ids: mem.edit_fact(fact.id, content="Likes green tea", **ids),
            lambda **ids: mem.delete_fact(fact.id, **ids),
            mem.clear,
            lambda **ids: mem.import_document({"facts": []}, **ids),
            lambda **ids: mem.search("tea", **ids),
        ]
        for call in calls:
            for argument in ("user_id", "agent"):
                with pytest.raises(error, match=words):
                    call(**{argument: bad})
        assert [f.content for f in mem.get(user_id="alice").facts] == ["Likes tea"]


def test_an_error_for_a_huge_id_with_a_nul_is_short() -> None:
    with pytest.raises(ValueError) as caught:
        validate_id("a" * 10_000 + "\x00", "user_id", max_chars=None)
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize("storage", ["json", "sqlite"])
def test_a_thread_id_that_is_not_a_string_never_makes_memory_unreadable(
    tmp_path: Path, storage: str
) -> None:
    """D1: an int thread id used to be stored as a fact's source, and the document no
    longer loaded."""
    home = tmp_path / "home"
    with Memory(home=home, storage=storage, debounce_seconds=0) as mem:
        mem.add_fact("Allergic to penicillin", user_id="alice")
        with pytest.raises(TypeError, match="thread_id"):
            mem.record(CHAT, thread_id=42, user_id="alice")  # type: ignore[arg-type]
        mem.record(CHAT, thread_id="42", user_id="alice")
        assert mem.flush()
    with Memory(home=home, storage=storage) as again:
        facts = [f.content for f in again.get(user_id="alice").facts]
        assert "Allergic to penicillin" in facts
        assert "Allergic to penicillin" in again.context(user_id="alice")


@pytest.mark.parametrize("kind", ["json", "sqlite", "memory"])
def test_every_store_refuses_to_commit_a_document_that_would_not_load_back(
    tmp_path: Path, kind: str
) -> None:
    store: Any = {
        "json": lambda: JsonFileStore(tmp_path),
        "sqlite": lambda: SqliteStore(tmp_path / "m.sqlite3"),
        "memory": InMemoryStore,
    }[kind]()
    scope = Scope("alice")
    good = MemoryDocument(facts=(Fact("f1", "Likes tea"),))
    store.commit(scope, good, expected_revision=0)
    bad_documents = [
        MemoryDocument(facts=(Fact("f2", "Lives in Oslo", source=42),)),  # type: ignore[arg-type]
        MemoryDocument(facts=(Fact("f2", "x", confidence=float("nan")),)),
        MemoryDocument(facts=(Fact("f2", "half \ud83d an emoji"),)),
        MemoryDocument(facts=(Fact("f2", "x", category=["a"]),)),  # type: ignore[arg-type]
        MemoryDocument(extra={"when": {1, 2}}),
        MemoryDocument(extra={"facts": "not a list"}),  # an extra field over a named one
        MemoryDocument(facts=(Fact("f2", "x", extra={"content": 5}),)),
        MemoryDocument(facts=(Fact("f2", "x"), Fact("f2", "y"))),
        MemoryDocument(facts=(Fact("", "x"),)),
        MemoryDocument(summaries={"workContext": Summary(summary=3)}),  # type: ignore[arg-type]
        MemoryDocument(watermarks={"t": Watermark(5)}),  # type: ignore[arg-type]
        MemoryDocument(last_updated=None),  # type: ignore[arg-type]
        MemoryDocument(extra={"deep": _deep(MAX_NESTING + 1)}),
    ]
    for bad in bad_documents:
        with pytest.raises(InvalidDocumentError, match="nothing was written"):
            store.commit(scope, bad, expected_revision=1)
    assert store.load(scope).facts == good.facts
    assert store.load(scope).revision == 1
    store.close()


def test_check_document_agrees_with_a_json_round_trip() -> None:
    """The commit-time check is the loader's rules without a round trip; both must agree."""
    good = [
        MemoryDocument(),
        MemoryDocument(facts=(Fact("f1", "x", confidence=1, extra={"tags": ["a", {"b": 1}]}),)),
        MemoryDocument(extra={"custom": _deep(MAX_NESTING - 1)}, cleared_at="2026-01-01"),
    ]
    for doc in good:
        check_document(doc)
        document_from_dict(json.loads(json.dumps(document_to_dict(doc))))
    bad = MemoryDocument(facts=(Fact("f1", "x", extra={"id": 7}),))
    with pytest.raises(ValueError):
        document_from_dict(json.loads(json.dumps(document_to_dict(bad))))
    with pytest.raises(ValueError, match="may not replace a named field"):
        check_document(bad)


def test_extractor_given_as_a_name_is_the_config_key(tmp_path: Path) -> None:
    """D15: ``Memory(extractor="rules")`` used to install the string as the extractor."""
    with _memory(tmp_path, extractor="rules") as mem:
        assert mem.extractor_name == "rules"
        assert mem.config.extractor == "rules"
        result = mem.update(
            [
                {"role": "user", "content": "My name is Zoe"},
                {"role": "assistant", "content": "Hi Zoe"},
            ],
            thread_id="t",
        )
        assert result.committed


def test_extractor_or_store_of_the_wrong_type_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="extractor must be an Extractor"):
        _memory(tmp_path, extractor=object())
    with pytest.raises(TypeError, match="storage='sqlite'"):
        _memory(tmp_path, store="sqlite")


def test_a_cut_emoji_does_not_poison_the_thread(tmp_path: Path, caplog: Any) -> None:
    """D3: a lone surrogate used to make every later update of the thread fail."""
    turns: list[dict[str, Any]] = json.loads(
        '[{"role":"user","content":"I live in Berlin"},{"role":"assistant","content":"Noted"}]'
    )
    with _memory(tmp_path, extractor="rules") as mem, caplog.at_level(logging.ERROR):
        assert mem.record(turns, thread_id="t", user_id="u")
        mem.flush()
        turns += json.loads(
            '[{"role":"user","content":"look \\ud83d","id":"m\\udc00"},'
            '{"role":"assistant","content":"What?"}]'
        )
        assert mem.record(turns, thread_id="t", user_id="u")
        mem.flush()
        turns += [
            {"role": "user", "content": "My name is Zoe"},
            {"role": "assistant", "content": "Got that."},
        ]
        assert mem.record(turns, thread_id="t", user_id="u")
        mem.flush()
        status = mem.status()
        assert (status.dropped, status.failed) == (0, 0)
        assert {"Lives in Berlin", "Name is Zoe"} <= {f.content for f in mem.get(user_id="u").facts}
    assert not caplog.records


def test_capture_replaces_lone_surrogates_in_content_and_ids() -> None:
    kept = capture(
        [
            {"role": "user", "content": "look \ud83d here", "id": "id\udc00"},
            {"role": "assistant", "content": "ok \ud83d\ude00 fine"},  # a pair is one emoji
        ]
    )
    assert kept[0].content == "look \ufffd here"
    assert kept[0].id == "id\ufffd"
    assert kept[1].content == "ok \U0001f600 fine"
    for message in kept:
        message.content.encode("utf-8")


def test_capture_reads_nested_parts_and_assistants_api_text_and_refuses_non_text() -> None:
    kept = capture(
        [
            {"role": "user", "content": [[{"type": "text", "text": "I live"}], "in Rome"]},
            {"role": "assistant", "content": [{"type": "text", "text": {"value": "Noted"}}]},
        ]
    )
    assert [m.content for m in kept] == ["I live\nin Rome", "Noted"]
    with pytest.raises(TypeError, match=r"messages\[0\].*'text' must be a string"):
        capture([{"role": "user", "content": [{"type": "text", "text": 5}]}])
    deep: Any = "hi"
    for _ in range(20):
        deep = [deep]
    with pytest.raises(TypeError, match="nested more than"):
        capture([{"role": "user", "content": deep}])


def test_deeply_nested_documents_are_refused_with_a_clear_error(tmp_path: Path) -> None:
    """D17: a 100,000-deep value used to raise RecursionError out of import_document."""
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    data = {"facts": [{"id": "f1", "content": "Likes tea", "notes": deep}]}
    with pytest.raises(ValueError, match="nested more than"):
        document_from_dict(data)
    with _memory(tmp_path) as mem:
        mem.add_fact("Kept", user_id="u")
        with pytest.raises(ValueError, match=r"cannot import: facts\[0\].*nested more than"):
            mem.import_document(data, user_id="u")
        assert [f.content for f in mem.get(user_id="u").facts] == ["Kept"]
    with pytest.raises(ValueError, match="nested more than"):
        document_from_dict({"custom": deep})


SECRET_CATEGORY = "creds AKIAI2V7ICB4WTCBE4ET Tr0ub4dor&3xyz"


def test_a_secret_in_an_extracted_category_or_removal_reason_is_never_stored(
    tmp_path: Path,
) -> None:
    """D6: the category of a new fact was neither redacted nor restricted."""
    from memfold.extract.base import ChangeSet, Extraction, FactRemoval, NewFact

    class Leaky:
        name = "leaky"

        def propose(self, request: Any) -> Extraction:
            old = [f.id for f in request.document.facts]
            return Extraction(
                ChangeSet(
                    new_facts=(NewFact("Uses Postgres", SECRET_CATEGORY, 0.95),),
                    removals=tuple(
                        FactRemoval(fid, reason="key AKIAI2V7ICB4WTCBE4ET leaked") for fid in old
                    ),
                )
            )

    with _memory(tmp_path, extractor=Leaky()) as mem:
        mem.update(CHAT, thread_id="t1", user_id="u")
        fact = mem.get(user_id="u").facts[0]
        assert fact.category == "context"
        result = mem.update(
            [*CHAT, *CHAT[:1], {"role": "assistant", "content": "Sure"}],
            thread_id="t1",
            user_id="u",
        )
        block = mem.context(user_id="u")
        stored = json.dumps(mem.export(user_id="u"))
    for text in (block, stored, repr(result.changes)):
        assert "akiai2v7icb4wtcbe4et" not in text.lower()
        assert "tr0ub4dor" not in text.lower()


@pytest.mark.parametrize(
    "category",
    [SECRET_CATEGORY, "vpn Tr0ub4dor&3xyz", "password hunter2x9", "a b c d", "x" * 40],
)
def test_a_person_cannot_store_text_or_a_secret_as_a_category(
    tmp_path: Path, category: str
) -> None:
    with _memory(tmp_path) as mem:
        fact = mem.add_fact("Uses the staging VPN", user_id="u")
        with pytest.raises(ValueError, match="category") as caught:
            mem.add_fact("Uses the prod VPN", category=category, user_id="u")
        assert "tr0ub4dor" not in str(caught.value).lower()
        with pytest.raises(ValueError, match="category"):
            mem.edit_fact(fact.id, category=category, user_id="u")
        assert [f.category for f in mem.get(user_id="u").facts] == ["context"]
        assert mem.add_fact("Works nights", category="Work Schedule", user_id="u").category == (
            "work schedule"
        )
