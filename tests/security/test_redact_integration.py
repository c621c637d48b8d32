"""Redaction inside ``Memory``: secrets never reach the extractor nor the store."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memfold import Memory, MemoryConfig
from memfold.apply import ApplyContext, apply
from memfold.extract.base import ChangeSet, NewFact, SummaryUpdate
from memfold.model import Fact, MemoryDocument
from memfold.redact import Redactor
from memfold.testing import ScriptedChatModel

GITHUB = "ghp_" + "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
CHAT = [
    {"role": "user", "content": f"My GitHub token is {GITHUB}; I deploy with it daily."},
    {"role": "assistant", "content": "Please rotate that token; I won't store it."},
    {"role": "user", "content": "My password is Hunter2hunter2 and I live in Lisbon."},
    {"role": "assistant", "content": "Noted that you live in Lisbon."},
]


def _reply(*facts: str, summary: str = "") -> str:
    data: dict[str, Any] = {
        "user": {"workContext": {"shouldUpdate": bool(summary), "summary": summary,
                                 "scope": "user", "durability": "durable"}},
        "newFacts": [
            {"content": f, "category": "context", "confidence": 0.9, "scope": "user",
             "durability": "durable"}
            for f in facts
        ],
        "factsToRemove": [],
    }  # fmt: skip
    return json.dumps(data)


def _memory(tmp_path: Path, model: ScriptedChatModel, **config: Any) -> Memory:
    return Memory(MemoryConfig(home=tmp_path, **config), chat_model=model, start_workers=False)


def _stored_text(tmp_path: Path) -> str:
    return "\n".join(p.read_text("utf-8") for p in tmp_path.rglob("memory.json"))


def test_recorded_secrets_never_reach_the_model_prompt(tmp_path: Path) -> None:
    model = ScriptedChatModel([_reply("Lives in Lisbon")])
    with _memory(tmp_path, model) as mem:
        assert mem.record(CHAT, thread_id="t1", user_id="u")
        assert mem.flush(timeout=10)
        assert mem.status().processed == 1
    prompt = "\n".join(m.content for m in model.calls[0])
    assert GITHUB not in prompt
    assert "Hunter2hunter2" not in prompt
    assert "[REDACTED:github_token]" in prompt
    assert "[REDACTED:password]" in prompt


def test_a_model_echoing_a_secret_stores_the_redacted_form(tmp_path: Path) -> None:
    model = ScriptedChatModel(
        [_reply(f"Deploys with GitHub token {GITHUB}", summary=f"Billing key {STRIPE}")]
    )
    with _memory(tmp_path, model) as mem:
        result = mem.update(CHAT, thread_id="t1", user_id="u")
        doc = mem.get(user_id="u")
    assert result.committed
    assert [f.content for f in doc.facts] == ["Deploys with GitHub token [REDACTED:github_token]"]
    assert doc.summary("workContext") == "Billing key [REDACTED:stripe_key]"
    assert GITHUB not in _stored_text(tmp_path)
    assert STRIPE not in _stored_text(tmp_path)


def test_manual_add_and_edit_are_redacted(tmp_path: Path) -> None:
    with _memory(tmp_path, ScriptedChatModel()) as mem:
        fact = mem.add_fact(f"CI token {GITHUB}", user_id="u")
        assert fact.content == "CI token [REDACTED:github_token]"
        edited = mem.edit_fact(
            fact.id, content=f"Bills customers through Stripe with {STRIPE}", user_id="u"
        )
        assert edited.content == "Bills customers through Stripe with [REDACTED:stripe_key]"
    assert GITHUB not in _stored_text(tmp_path)
    assert STRIPE not in _stored_text(tmp_path)


def test_redaction_can_be_switched_off(tmp_path: Path) -> None:
    with _memory(tmp_path, ScriptedChatModel(), redact_secrets=False) as mem:
        assert mem.add_fact(f"CI token {GITHUB}", user_id="u").content == f"CI token {GITHUB}"


def test_emails_are_redacted_only_when_configured(tmp_path: Path) -> None:
    with _memory(tmp_path, ScriptedChatModel(), redact_emails=True) as mem:
        assert mem.add_fact("Sends reports to ann@example.org", user_id="u").content == (
            "Sends reports to [REDACTED:email]"
        )
    with _memory(tmp_path / "b", ScriptedChatModel()) as mem:
        fact = mem.add_fact("Sends reports to ann@example.org", user_id="u")
        assert fact.content == "Sends reports to ann@example.org"


def test_apply_scrubs_new_items_and_leaves_stored_ones_alone() -> None:
    old = Fact(
        id="fact_old", content=f"Legacy note {GITHUB}", category="context", confidence=0.9,
        created_at="2026-01-01T00:00:00Z", updated_at="2026-01-01T00:00:00Z", source="t0",
    )  # fmt: skip
    document = MemoryDocument(facts=(old,))
    change_set = ChangeSet(
        new_facts=(
            NewFact(
                f"Bills customers through Stripe with {STRIPE}",
                "context",
                0.9,
                scope="user",
                durability="durable",
            ),
        ),
        summaries=(SummaryUpdate("topOfMind", f"Rotating {GITHUB}"),),
    )
    context = ApplyContext(now=datetime(2026, 2, 1, tzinfo=UTC), thread_id="t1", scrub=Redactor())
    result = apply(document, change_set, context)
    contents = [f.content for f in result.document.facts]
    assert contents == [
        f"Legacy note {GITHUB}",
        "Bills customers through Stripe with [REDACTED:stripe_key]",
    ]
    assert result.document.summary("topOfMind") == "Rotating [REDACTED:github_token]"
