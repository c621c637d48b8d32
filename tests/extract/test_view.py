"""The smaller memory view above ``view_max_facts``: corrections, the facts related to the
new turns (same slot, shared terms) and the most confident rest, within a token budget;
a fact the turns contradict is always in view (issue 16, part 3)."""

from __future__ import annotations

import json
import re

import pytest

from memfold import Memory, MemoryConfig
from memfold.extract.base import ExtractionRequest
from memfold.extract.llm import LLMExtractor, compact_memory
from memfold.extract.view import select_facts, slots
from memfold.model import Fact, MemoryDocument, Message
from memfold.store.inmemory import InMemoryStore
from memfold.testing import ScriptedChatModel
from memfold.tokens import get_counter

FILLER = (
    "Prefers concise answers with the code first and the explanation after it",
    "Reviews pull requests every morning before the team's daily standup meeting",
    "Is learning Rust in the evenings to write small command-line tools for work",
    "Uses PostgreSQL 16 with logical replication for the payments service",
    "Wants error messages that say how to fix the problem, not only what failed",
    "Plans to migrate the team's CI from Jenkins to GitHub Actions this quarter",
    "Dislikes answers that repeat the question back before getting to the point",
    "Reads technical books on weekends, mostly about distributed systems design",
    "Runs a small open-source library for parsing timestamps in several formats",
    "Likes examples that use real data rather than foo and bar placeholders",
)


def fact(n: int, content: str, category: str = "preference", confidence: float = 0.8) -> Fact:
    return Fact(id=f"fact_{n:04d}", content=content, category=category, confidence=confidence)


def memory_of(*special: Fact, total: int = 100) -> tuple[Fact, ...]:
    facts = [fact(n, f"{FILLER[n % len(FILLER)]} (note {n})") for n in range(total - len(special))]
    return (*facts[: len(facts) // 2], *special, *facts[len(facts) // 2 :])


def user(text: str) -> tuple[Message, ...]:
    return (Message("user", text),)


@pytest.mark.parametrize(
    ("old", "turn"),
    [
        ("Lives in Stockholm", "I moved to Oslo last month, any tips for the winter?"),
        ("Works at Spotify as a backend engineer", "I just joined Klarna, first week!"),
        ("Is vegetarian", "I've started eating fish again, what's a quick salmon recipe?"),
        ("Prefers answers in English", "From now on please answer in German."),
        ("住在北京", "我上个月搬到深圳了，医保怎么转？"),
        ("在字节跳动做产品经理", "我换工作了，现在在腾讯上班"),
    ],
)
def test_a_contradicted_fact_is_in_view_among_100(old: str, turn: str) -> None:
    contradicted = fact(9_000, old, "context", 0.75)
    facts = memory_of(contradicted)
    shown = select_facts(facts, user(turn), max_facts=40, max_tokens=1_000)
    assert contradicted in shown
    assert len(shown) <= 40


def test_corrections_are_always_in_view_and_the_rest_by_confidence() -> None:
    corrections = [
        fact(8_000 + i, f"Do not suggest tool {i}", "correction", 0.95) for i in range(3)
    ]
    sure = fact(8_100, "Has a strong opinion about tabs", "behavior", 0.99)
    facts = (*memory_of(*corrections, sure, total=100),)
    shown = select_facts(facts, user("Thanks!"), max_facts=10, max_tokens=10_000)
    assert set(corrections) <= set(shown)
    assert sure in shown  # the most confident of the unrelated rest
    assert len(shown) == 10
    assert list(shown) == [f for f in facts if f in shown]  # document order kept


def test_the_view_holds_the_token_budget_and_every_fact_below_the_limit() -> None:
    facts = memory_of(total=100)
    count = get_counter("cl100k_base")
    shown = select_facts(facts, user("hello"), max_facts=40, max_tokens=200, count=count)
    assert sum(count(f.content) for f in shown) <= 200
    assert 0 < len(shown) < 40
    few = memory_of(total=40)
    assert select_facts(few, user("hello"), max_facts=40, max_tokens=1) == few


def test_slots_link_words_that_share_no_term() -> None:
    assert "home" in slots("I moved to Oslo") & slots("Lives in Stockholm")
    assert "work" in slots("我换工作了") & slots("在字节跳动上班")
    assert not slots("What's 2 + 2?")


def test_the_prompt_says_how_many_facts_are_shown_and_refs_name_the_right_ids() -> None:
    stockholm = fact(9_000, "Lives in Stockholm", "context", 0.75)
    doc = MemoryDocument(facts=memory_of(stockholm))
    text, refs = compact_memory(doc, user("I moved to Oslo"), max_facts=40)
    assert re.search(r"facts \((?:3\d|40) of 100:", text)
    line = next(line for line in text.splitlines() if "Stockholm" in line)
    assert refs[line.split()[0]] == stockholm.id
    whole, all_refs = compact_memory(doc)
    assert "facts (100):" in whole
    assert len(all_refs) == 100


def test_an_update_at_100_facts_replaces_the_contradicted_fact() -> None:
    stockholm = fact(9_000, "Lives in Stockholm", "context", 0.75)
    store = InMemoryStore()
    model = ScriptedChatModel()
    config = MemoryConfig(extractor="llm", llm={"model": "m"}, max_facts=200)
    with Memory(config, store=store, chat_model=model, start_workers=False) as mem:
        mem.import_document({"facts": [
            {"id": f.id, "content": f.content, "category": f.category, "confidence": f.confidence}
            for f in memory_of(stockholm)
        ]}, user_id="u")  # fmt: skip
        extractor = LLMExtractor(ScriptedChatModel(), counter=get_counter("cl100k_base"))
        turns = (Message("user", "I moved to Oslo last month."), Message("assistant", "Nice!"))
        _, refs = extractor.prompt(ExtractionRequest(mem.get(user_id="u"), turns))
        ref = next(r for r, fid in refs.items() if fid == stockholm.id)
        model.add(json.dumps({
            "newFacts": [{"content": "Lives in Oslo", "category": "context", "confidence": 0.95,
                          "scope": "user", "durability": "durable", "sourceError": None}],
            "factsToRemove": [{"ref": ref, "reason": "the user moved to Oslo", "replacedBy": 0}],
        }))  # fmt: skip
        mem.update(
            [{"role": "user", "content": "I moved to Oslo last month."},
             {"role": "assistant", "content": "Nice!"}],
            thread_id="t", user_id="u",
        )  # fmt: skip
        contents = {f.content for f in mem.get(user_id="u").facts}
    sent = model.calls[0][-1].content
    assert "Lives in Stockholm" in sent
    assert sent.count("\nf") <= 41
    assert "Lives in Oslo" in contents
    assert "Lives in Stockholm" not in contents


def test_view_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="max_facts"):
        select_facts(memory_of(total=50), user("x"), max_facts=0)
    assert MemoryConfig(view_max_facts=10).view_max_facts == 10
    with pytest.raises(Exception, match="view_max_facts"):
        MemoryConfig(view_max_facts=0)
