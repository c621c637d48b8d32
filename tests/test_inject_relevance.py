"""Relevance-aware injection: ``context(query=...)`` and ``render(..., relevance=...)``."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memfold import Memory, MemoryConfig
from memfold.inject import render
from memfold.model import Fact, MemoryDocument, Scope
from memfold.search import Searcher
from memfold.testing import InMemoryStore
from memfold.tokens import get_counter

COUNTER = get_counter("cl100k_base")

#: Longer than any filler fact, so no room the fillers leave over can take it.
PEANUTS = "Is allergic to peanuts and carries an EpiPen everywhere"


@pytest.fixture
def memory() -> Memory:
    mem = Memory(store=InMemoryStore(), start_workers=False, max_facts=500)
    yield mem
    mem.close()


def fill(memory: Memory, count: int = 120) -> None:
    """Many confident facts that have nothing to do with pets or food, each shorter than
    the peanut fact, so no room they leave over can take it."""
    for i in range(count):
        memory.add_fact(f"Knows tool {i}", category="knowledge", confidence=0.95, user_id="u")


def test_a_relevant_low_confidence_fact_is_injected_only_with_the_query(memory: Memory) -> None:
    fill(memory)
    memory.add_fact(PEANUTS, confidence=0.71, user_id="u")

    plain = memory.context(user_id="u", max_tokens=400)
    relevant = memory.context(user_id="u", max_tokens=400, query="Is peanut butter OK?")

    assert "Is allergic to peanuts" not in plain
    assert "Is allergic to peanuts" in relevant
    assert COUNTER.count(relevant) <= 400


def test_relevant_facts_come_first_then_the_rest_by_confidence(memory: Memory) -> None:
    memory.add_fact("Likes green tea", confidence=0.75, user_id="u")
    memory.add_fact("Works in Rotterdam", confidence=0.99, user_id="u")
    memory.add_fact("Drinks black tea", confidence=0.8, user_id="u")
    memory.add_fact("Has a dog", confidence=0.9, user_id="u")

    block = memory.context(user_id="u", query="recommend a tea")
    lines = [line for line in block.splitlines() if line.startswith("- [")]

    assert [line.split("] ", 1)[1] for line in lines] == [
        "Drinks black tea",
        "Likes green tea",
        "Works in Rotterdam",
        "Has a dog",
    ]


def test_guaranteed_corrections_stay_first_whatever_the_query(memory: Memory) -> None:
    fill(memory, 60)
    memory.add_fact("Name is spelled Dana, not Dane", category="correction", user_id="u")
    memory.add_fact(PEANUTS, confidence=0.71, user_id="u")

    block = memory.context(user_id="u", max_tokens=300, query="peanuts?")
    facts = [line for line in block.splitlines() if line.startswith("- [")]

    assert facts[0].endswith("Name is spelled Dana, not Dane")
    assert facts[1].endswith(PEANUTS)


def test_an_empty_or_unmatched_query_gives_the_plain_block(memory: Memory) -> None:
    fill(memory, 50)

    plain = memory.context(user_id="u", max_tokens=300)

    assert memory.context(user_id="u", max_tokens=300, query="") == plain
    assert memory.context(user_id="u", max_tokens=300, query="   ") == plain
    assert memory.context(user_id="u", max_tokens=300, query="zebra crossing") == plain


def test_query_must_be_text(memory: Memory) -> None:
    with pytest.raises(TypeError, match="query must be a string"):
        memory.context(user_id="u", query=["peanuts"])  # type: ignore[arg-type]


def test_blocks_are_cached_per_relevance_order_not_per_message(memory: Memory) -> None:
    fill(memory, 30)
    memory.add_fact(PEANUTS, confidence=0.71, user_id="u")
    renderer = memory._renderer
    memory.context(user_id="u", max_tokens=200)
    before = renderer.cache_len()

    first = memory.context(user_id="u", max_tokens=200, query="peanuts")
    again = memory.context(user_id="u", max_tokens=200, query="Any peanuts in it?")
    other = memory.context(user_id="u", max_tokens=200, query="tool 7")

    assert first == again
    assert other != first
    assert renderer.cache_len() == before + 2


def test_a_fact_edited_away_from_the_query_is_no_longer_preferred(memory: Memory) -> None:
    fill(memory)
    fact = memory.add_fact(PEANUTS, confidence=0.71, user_id="u")
    assert "peanuts" in memory.context(user_id="u", max_tokens=400, query="peanuts")

    cats = "Is allergic to cats and keeps well away from every animal shelter"
    memory.edit_fact(fact.id, content=cats, confidence=0.71, user_id="u")

    block = memory.context(user_id="u", max_tokens=400, query="peanuts")
    assert "peanuts" not in block
    assert cats not in block


def test_acontext_passes_the_query(memory: Memory) -> None:
    fill(memory)
    memory.add_fact(PEANUTS, confidence=0.71, user_id="u")

    block = asyncio.run(memory.acontext(user_id="u", max_tokens=400, query="peanuts"))

    assert "Is allergic to peanuts" in block


def test_injection_mode_relevant_is_a_valid_setting() -> None:
    assert MemoryConfig(injection_mode="relevant").injection_mode == "relevant"


def test_render_takes_named_facts_first_and_ignores_unknown_ids() -> None:
    facts = [Fact(id=f"f{i}", content=f"fact {i}", confidence=0.9 - i / 100) for i in range(5)]
    document = MemoryDocument().with_changes(facts=facts)

    block = render(document, max_tokens=500, counter=COUNTER, relevance=["f3", "nope", "f1", "f3"])
    order = [line.rsplit(" ", 1)[1] for line in block.splitlines() if line.startswith("- [")]

    assert order == ["3", "1", "0", "2", "4"]


_words = st.sampled_from(["tea", "peanut", "dog", "run", "茶", "年糕", "Go", "tool", "&<>"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    facts=st.lists(st.lists(_words, min_size=1, max_size=8).map(" ".join), max_size=60),
    query=st.lists(_words, max_size=5).map(" ".join),
    budget=st.integers(50, 600),
)
def test_the_block_never_exceeds_the_budget_whatever_the_query(
    facts: list[str], query: str, budget: int
) -> None:
    document = MemoryDocument().with_changes(
        facts=[
            Fact(id=f"f{i}", content=text, confidence=(i % 10) / 10) for i, text in enumerate(facts)
        ]
    )
    order = Searcher().relevance(Scope("u"), document.facts, query) if query.strip() else ()
    block = render(document, max_tokens=budget, counter=COUNTER, relevance=order)

    assert COUNTER.count(block) <= budget
