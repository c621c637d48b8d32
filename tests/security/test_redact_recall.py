"""Redaction at recall: text that was stored unredacted (imported from another system,
or written before a pattern existed) is redacted in ``context()`` and in exports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memfold import Memory, MemoryConfig
from memfold.inject import ContextRenderer
from memfold.model import Fact, MemoryDocument, Scope, Summary
from memfold.redact import Redactor, redact_document

GROQ = "gsk_" + "o69aH2lz8APjGnRx2zbjTIdvvBEaBgnJnTzUjqNzmulA8Rns37mb"
PASSWORD = "Sommer2024!"


def _v1_memory() -> dict[str, Any]:
    """A memory.json another system wrote, with secrets it never redacted."""
    return {
        "version": "1.0",
        "lastUpdated": "2024-05-01T10:00:00Z",
        "user": {
            "workContext": {"summary": f"Deploys with GROQ_API_KEY={GROQ}", "updatedAt": ""},
            "personalContext": {"summary": "Lives in Lisbon", "updatedAt": ""},
            "topOfMind": {"summary": "", "updatedAt": ""},
        },
        "history": {
            "recentMonths": {"summary": "", "updatedAt": ""},
            "earlierContext": {"summary": "", "updatedAt": ""},
            "longTermBackground": {"summary": "", "updatedAt": ""},
        },
        "facts": [
            {"id": "fact_1", "content": f"Mein Passwort ist {PASSWORD}", "category": "context",
             "confidence": 0.9, "createdAt": "2024-05-01T10:00:00Z", "source": "import"},
            {"id": "fact_2", "content": "Prefers tabs over spaces", "category": "preference",
             "confidence": 0.9, "createdAt": "2024-05-01T10:00:00Z", "source": "import"},
            {"id": "fact_3", "content": "Uses Django", "category": "correction",
             "confidence": 0.9, "createdAt": "2024-05-01T10:00:00Z", "source": "import",
             "sourceError": f"said its key was {GROQ}"},
        ],
    }  # fmt: skip


def _memory(tmp_path: Path, **config: Any) -> Memory:
    return Memory(MemoryConfig(home=tmp_path, **config), start_workers=False)


def test_imported_secrets_are_redacted_in_the_context_block(tmp_path: Path) -> None:
    with _memory(tmp_path) as mem:
        mem.import_document(_v1_memory(), user_id="u")
        block = mem.context(user_id="u")
    assert GROQ not in block
    assert PASSWORD not in block
    assert "[REDACTED:groq_api_key]" in block
    assert "[REDACTED:password]" in block
    assert "Lives in Lisbon" in block
    assert "Prefers tabs over spaces" in block


def test_export_redacts_and_raw_export_keeps_the_stored_text(tmp_path: Path) -> None:
    with _memory(tmp_path) as mem:
        mem.import_document(_v1_memory(), user_id="u")
        exported = json.dumps(mem.export(user_id="u"))
        raw = json.dumps(mem.export(user_id="u", redact=False))
        stored = mem.get(user_id="u")
    assert GROQ not in exported
    assert PASSWORD not in exported
    assert "Prefers tabs over spaces" in exported
    assert GROQ in raw  # the store is not rewritten (DESIGN rule 7); a backup is exact
    assert any(PASSWORD in fact.content for fact in stored.facts)


def test_recall_redaction_follows_the_switch(tmp_path: Path) -> None:
    with _memory(tmp_path, redact_secrets=False) as mem:
        mem.import_document(_v1_memory(), user_id="u")
        assert GROQ in mem.context(user_id="u")
        assert GROQ in json.dumps(mem.export(user_id="u"))


def test_redact_document_returns_the_same_document_when_nothing_is_secret() -> None:
    document = MemoryDocument(facts=(Fact("f1", "Lives in Lisbon"),))
    assert redact_document(document, Redactor()) is document
    assert redact_document(document, None) is document


def test_redact_document_covers_facts_corrections_and_summaries() -> None:
    document = MemoryDocument(
        facts=(Fact("f1", f"key {GROQ}", source_error=f"old {GROQ}"),),
        summaries={"workContext": Summary(f"uses {GROQ}")},
    )
    clean = redact_document(document, Redactor())
    assert GROQ not in clean.facts[0].content
    assert clean.facts[0].source_error is not None
    assert GROQ not in clean.facts[0].source_error
    assert GROQ not in clean.summary("workContext")
    assert document.facts[0].content == f"key {GROQ}"  # the input is untouched


def test_renderer_scrubs_on_a_miss_and_serves_the_cached_block_after() -> None:
    calls: list[str] = []

    def scrub(text: str) -> str:
        calls.append(text)
        return Redactor().redact(text)

    renderer = ContextRenderer(len, max_tokens=2_000, scrub=scrub)
    document = MemoryDocument(revision=1, facts=(Fact("f1", f"key {GROQ}"),))
    first = renderer.render(Scope("u", None), document)
    scrubbed = len(calls)
    again = renderer.render(Scope("u", None), document)
    assert GROQ not in first
    assert again == first
    assert len(calls) == scrubbed  # a cached block is not redacted again
    renderer.render(Scope("u", None), document.with_changes(revision=2))
    assert len(calls) == scrubbed  # same texts in the next revision: memoised


def test_search_results_are_redacted_like_the_context_block(tmp_path: Path) -> None:
    with _memory(tmp_path) as mem:
        mem.import_document(_v1_memory(), user_id="u")
        hits = mem.search("Passwort", user_id="u")
        plain = mem.search("tabs", user_id="u")
    assert hits
    assert all(PASSWORD not in hit.fact.content for hit in hits)
    assert "[REDACTED:password]" in hits[0].fact.content
    assert plain[0].fact.content == "Prefers tabs over spaces"
