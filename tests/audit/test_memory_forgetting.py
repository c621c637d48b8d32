"""Part 4: after delete, edit, eviction or supersession nothing injected carries the old
content; summaries built from facts are rebuilt, LLM prose that mentions it is held out
until rewritten or edited (``set_summary``). Regression tests for newcomer.md B3."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from memfold import Memory

if TYPE_CHECKING:
    from conftest import MakeMemory  # tests/audit/conftest.py

from memfold.testing import ScriptedChatModel

ALICE = [
    {"role": "user", "content": "Hi, I'm Alice. I live in Berlin. I prefer concise answers."},
    {"role": "assistant", "content": "Nice to meet you, Alice."},
]


def fact_id(mem: Memory, content: str, **scope: str) -> str:
    return next(f.id for f in mem.get(**scope).facts if f.content == content)


def llm_reply(
    facts: list[str], removals: list[dict[str, object]] | None = None, **summaries: str
) -> str:
    return json.dumps(
        {
            "user": {
                name: {
                    "shouldUpdate": True,
                    "summary": text,
                    "scope": "user",
                    "durability": "durable",
                }
                for name, text in summaries.items()
            },
            "newFacts": [
                {
                    "content": c,
                    "category": "context",
                    "confidence": 0.95,
                    "scope": "user",
                    "durability": "durable",
                }
                for c in facts
            ],
            "factsToRemove": removals or [],
        }
    )


def clause_summary(mem: Memory, user: str, section: str = "personalContext") -> None:
    """A summary made of the facts' own words, as memfold 0.1.0's rule extractor wrote
    them (stored memories still hold them) and as a person may write one."""
    clauses = [f.content for f in mem.get(user_id=user).facts]
    mem.set_summary(section, "; ".join(clauses), user_id=user)


def test_deleting_a_fact_removes_it_from_a_summary_built_from_facts(make_mem: MakeMemory) -> None:
    """B3: `facts rm` of "Lives in Berlin" left "Lives in Berlin" in the Personal summary."""
    mem = make_mem()
    mem.update(ALICE, thread_id="t1", user_id="alice")
    clause_summary(mem, "alice")
    assert "Lives in Berlin" in mem.context(user_id="alice")
    mem.delete_fact(fact_id(mem, "Lives in Berlin", user_id="alice"), user_id="alice")
    block = mem.context(user_id="alice")
    assert "Berlin" not in block
    summary = mem.get(user_id="alice").summary("personalContext")
    assert summary == "Name is Alice; Prefers concise answers"  # the rest of it stays
    assert "- Personal: Name is Alice; Prefers concise answers" in block


def test_editing_a_fact_rewrites_its_clause_so_the_block_does_not_contradict_itself(
    make_mem: MakeMemory,
) -> None:
    """B3: after editing "Name is Alice" the summary still said "Name is Alice"."""
    mem = make_mem()
    mem.update(ALICE, thread_id="t1", user_id="alice")
    clause_summary(mem, "alice")
    mem.edit_fact(
        fact_id(mem, "Name is Alice", user_id="alice"), content="Name is Alice Smith",
        user_id="alice",
    )  # fmt: skip
    block = mem.context(user_id="alice")
    assert "Name is Alice;" not in block
    assert block.count("Name is Alice Smith") == 2  # in the summary and as the fact


def test_an_evicted_fact_leaves_the_summary_too(make_mem: MakeMemory) -> None:
    """B3: with max_facts=10 the summary still listed an evicted "Prefers tool5 over tool105"."""
    mem = make_mem(max_facts=3)

    def prefer(n: int) -> None:
        mem.update(
            [{"role": "user", "content": f"I prefer tool{n} over tool{n + 100}."},
             {"role": "assistant", "content": "Noted."}],
            thread_id=f"t{n}", user_id="dana",
        )  # fmt: skip

    for n in range(3):
        prefer(n)
    clause_summary(mem, "dana", "workContext")
    assert "Prefers tool0 over tool100" in mem.context(user_id="dana")
    for n in range(3, 6):
        prefer(n)
    kept = {f.content for f in mem.get(user_id="dana").facts}
    assert kept == {f"Prefers tool{n} over tool{n + 100}" for n in range(3, 6)}
    block = mem.context(user_id="dana")
    for n in range(3):
        assert f"tool{n + 100}" not in block
    evicted = [e for e in mem.history(user_id="dana") if e.kind == "evicted"]
    assert len(evicted) == 3
    assert {e.actor for e in evicted} == {"system"}


def test_llm_prose_that_mentions_a_deleted_fact_is_held_out_until_rewritten(
    make_mem: MakeMemory,
) -> None:
    model = ScriptedChatModel(
        [
            llm_reply(
                ["Lives in Berlin", "Works at Zalando"],
                personalContext="Alice lives in Berlin and loves climbing.",
                workContext="Data engineer at Zalando.",
            )
        ]
    )
    mem = make_mem(chat_model=model)
    mem.update(ALICE, thread_id="t1", user_id="alice")
    assert "Berlin" in mem.context(user_id="alice")
    mem.delete_fact(fact_id(mem, "Lives in Berlin", user_id="alice"), user_id="alice")

    block = mem.context(user_id="alice")
    assert "Berlin" not in block
    assert "climbing" not in block  # the whole section waits for its rewrite
    assert "Data engineer at Zalando" in block
    report = mem.explain_context(user_id="alice")
    held = next(item for item in report.dropped if item.id == "personalContext")
    assert held.reason == "held_out"
    assert "Lives in Berlin" in held.detail

    # the next extraction is told what was removed, and its rewrite is injected again
    model.add(llm_reply([], personalContext="Alice loves climbing."))
    mem.update(
        [{"role": "user", "content": "I went climbing again today."},
         {"role": "assistant", "content": "Fun!"}],
        thread_id="t2", user_id="alice",
    )  # fmt: skip
    prompt = model.calls[-1][-1].content
    assert "held out; it still mentions removed facts: Lives in Berlin" in prompt
    block = mem.context(user_id="alice")
    assert "Alice loves climbing." in block
    assert "Berlin" not in block
    released = mem.history(user_id="alice", limit=3)
    assert any("injected again" in e.reason for e in released if e.kind == "summary")


def test_a_rewrite_that_still_mentions_the_removed_fact_stays_held_out(
    make_mem: MakeMemory,
) -> None:
    model = ScriptedChatModel(
        [
            llm_reply(["Lives in Berlin"], personalContext="She lives in Berlin."),
            llm_reply([], personalContext="Based in Berlin, likes tea."),
        ]
    )
    mem = make_mem(chat_model=model)
    mem.update(ALICE, thread_id="t1", user_id="alice")
    mem.delete_fact(fact_id(mem, "Lives in Berlin", user_id="alice"), user_id="alice")
    mem.update(
        [{"role": "user", "content": "I like tea."}, {"role": "assistant", "content": "Ok."}],
        thread_id="t2", user_id="alice",
    )  # fmt: skip
    assert "Berlin" not in mem.context(user_id="alice")


def test_an_llm_supersession_holds_out_prose_naming_the_old_value(make_mem: MakeMemory) -> None:
    model = ScriptedChatModel(
        [llm_reply(["Works at Zalando"], workContext="Data engineer at Zalando."),
         llm_reply(["Works at Spotify"], [{"ref": "f1", "reason": "new job", "replacedBy": 0}])]
    )  # fmt: skip
    mem = make_mem(chat_model=model)
    mem.update(ALICE, thread_id="t1", user_id="alice")
    mem.update(
        [{"role": "user", "content": "I joined Spotify."}, {"role": "assistant", "content": "!"}],
        thread_id="t2", user_id="alice",
    )  # fmt: skip
    block = mem.context(user_id="alice")
    assert "Zalando" not in block
    assert "Works at Spotify" in block


def test_set_summary_corrects_a_section_and_lifts_its_hold_out(make_mem: MakeMemory) -> None:
    model = ScriptedChatModel(
        [llm_reply(["Lives in Berlin"], personalContext="She lives in Berlin, loves climbing.")]
    )
    mem = make_mem(chat_model=model)
    mem.update(ALICE, thread_id="t1", user_id="alice")
    mem.delete_fact(fact_id(mem, "Lives in Berlin", user_id="alice"), user_id="alice")
    summary = mem.set_summary("personal", "Loves climbing.", user_id="alice")
    assert summary.summary == "Loves climbing."
    assert "Personal: Loves climbing." in mem.context(user_id="alice")
    (event,) = mem.history(user_id="alice", limit=1)
    assert (event.kind, event.actor, event.section) == ("summary", "manual", "personalContext")
    assert event.reason == "edited by hand"
    assert event.before == "She lives in Berlin, loves climbing."
    mem.set_summary("personalContext", "", user_id="alice")
    assert "Personal:" not in mem.context(user_id="alice")
    with pytest.raises(ValueError, match="workContext"):
        mem.set_summary("hobbies", "x", user_id="alice")


def test_set_summary_redacts_secrets(make_mem: MakeMemory) -> None:
    mem = make_mem()
    secret = "sk-proj-" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4"
    mem.set_summary("work", f"Deploys with key {secret}", user_id="alice")
    assert secret not in json.dumps(mem.export(user_id="alice"))
    assert secret not in json.dumps([e.to_dict() for e in mem.history(user_id="alice")])
