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
        # a second set, the view then changed to take them (finer tool slots, slots
        # weighted by rarity): 6 of these 18 were out of view before
        ("Has a dog named Max", "Max passed away last week, I'm thinking about adopting a cat"),
        ("Is 29 years old", "I turned 30 yesterday!"),
        ("Uses VS Code as their editor", "I switched to Neovim last week"),
        ("Is single", "I got married in June!"),
        ("Lives in Stockholm", "We relocated to Berlin in the spring"),
        ("Works as a nurse", "I quit nursing and became a teacher"),
        ("喜欢喝咖啡", "我现在不喝咖啡了，改喝茶"),
        ("Prefers Python for scripting", "I've moved all my scripts to Go"),
        ("Lives in Paris", "I'm now based in Lyon"),
        ("Is a student at MIT", "I graduated last month and started at Google"),
        ("Drives a Tesla", "I sold my car and bike everywhere now"),
        ("Has two kids", "We just had our third child"),
        ("Speaks Spanish at a beginner level", "I'm fluent in Spanish now after a year in Madrid"),
        ("住在上海", "我现在住杭州"),
        ("是一名程序员", "我转行做设计师了"),
        ("Wants short answers", "Actually, give me detailed explanations from now on"),
        ("Lives in New York", "Moved to the Bay Area for a new job"),
        ("Works at Google", "I left Google and joined a startup"),
    ],
)
def test_a_contradicted_fact_is_in_view_among_100(old: str, turn: str) -> None:
    assert in_view(old, turn)


def in_view(old: str, turn: str) -> bool:
    contradicted = fact(9_000, old, "context", 0.75)
    facts = memory_of(contradicted)
    shown = select_facts(facts, user(turn), max_facts=40, max_tokens=1_000)
    assert len(shown) <= 40
    return contradicted in shown


#: Written before the view's second change and scored once after it, never tuned on:
#: 9 of 14 were out of view before the change, 5 after.
HELD_OUT_CONTRADICTIONS = (
    ("Lives in Toronto with a roommate", "Just signed a lease in Montreal, moving next week"),
    ("Works remotely for a bank in London", "Got laid off yesterday, updating my CV"),
    ("Uses a Windows laptop for work", "My new MacBook arrived today, how do I set up Homebrew?"),
    ("Is allergic to cats", "Turns out it was dust, not cats — the allergy test was negative"),
    ("Is a junior developer", "I got promoted to senior engineer this week"),
    ("在杭州读大学", "我毕业了，现在在上海工作"),
    ("不吃辣", "最近开始能吃一点辣了"),
    ("Has a golden retriever", "We had to rehome our dog, so no pets for now"),
    ("Writes backend code in Java", "Our team rewrote everything in Kotlin last month"),
    ("Prefers dark mode everywhere", "I've gone back to light themes, easier on my eyes"),
    ("Commutes by train", "I bought an e-bike so I ride to the office now"),
    ("Is 41", "Celebrated my 42nd last weekend"),
    ("Uses Emacs", "I finally gave in and installed VS Code"),
    ("正在学日语", "日语放弃了，改学韩语"),
)


def test_held_out_contradictions_stay_in_view_as_measured() -> None:
    missed = [old for old, turn in HELD_OUT_CONTRADICTIONS if not in_view(old, turn)]
    assert len(missed) <= 5, missed


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
