"""``Memory.search``: lexical ranking, ties, filters, validation, and never a stale index."""

from __future__ import annotations

import asyncio
import json

import pytest

from memfold import Memory, MemoryDocument, SearchHit
from memfold.model import Fact
from memfold.testing import InMemoryStore


@pytest.fixture
def memory() -> Memory:
    mem = Memory(store=InMemoryStore(), start_workers=False)
    yield mem
    mem.close()


def seed(memory: Memory, *facts: tuple[str, str, float], user_id: str = "u") -> list[Fact]:
    return [
        memory.add_fact(text, category=category, confidence=confidence, user_id=user_id)
        for text, category, confidence in facts
    ]


def contents(hits: list[SearchHit]) -> list[str]:
    return [hit.fact.content for hit in hits]


def test_facts_sharing_words_with_the_query_come_first_best_first(memory: Memory) -> None:
    seed(
        memory,
        ("Has a golden retriever named Biscuit", "context", 0.8),
        ("Works as a backend engineer in Rotterdam", "context", 0.9),
        ("Wants to adopt a second dog someday", "goal", 0.9),
        ("Is allergic to peanuts", "context", 0.95),
    )

    hits = memory.search("Can Biscuit eat peanut butter?", user_id="u")

    assert set(contents(hits)) == {"Has a golden retriever named Biscuit", "Is allergic to peanuts"}
    assert all(hit.score > 0 for hit in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_only_matching_facts_are_returned(memory: Memory) -> None:
    seed(memory, ("Likes jazz", "preference", 0.9), ("Runs marathons", "behavior", 0.9))

    assert contents(memory.search("jazz playlist", user_id="u")) == ["Likes jazz"]
    assert memory.search("quantum chromodynamics", user_id="u") == []


def test_chinese_query_finds_chinese_fact_without_spaces(memory: Memory) -> None:
    seed(
        memory,
        ("养了一只橘猫，叫年糕", "context", 0.8),
        ("在杭州做数据分析师", "context", 0.9),
        ("喜欢喝龙井茶", "preference", 0.9),
    )

    hits = memory.search("年糕最近总是掉毛怎么办", user_id="u")
    assert contents(hits)[0] == "养了一只橘猫，叫年糕"
    assert contents(memory.search("推荐一款绿茶", user_id="u"))[0] == "喜欢喝龙井茶"


def test_english_word_inside_chinese_query_matches(memory: Memory) -> None:
    seed(memory, ("公司用 Tableau 做报表", "context", 0.9), ("喜欢火锅", "preference", 0.9))

    assert contents(memory.search("怎么用tableau做同比", user_id="u")) == ["公司用 Tableau 做报表"]


def test_a_word_matches_the_longer_word_it_begins(memory: Memory) -> None:
    seed(memory, ("The main database is PostgreSQL 15", "context", 0.9))

    assert len(memory.search("back up our postgres database", user_id="u")) == 1
    assert len(memory.search("postgres", user_id="u")) == 1


def test_equal_scores_are_ordered_by_confidence_then_newest(memory: Memory) -> None:
    seed(
        memory,
        ("Likes tea in the morning", "preference", 0.7),
        ("Likes tea after lunch", "preference", 0.95),
        ("Likes tea before bed", "preference", 0.8),
    )

    assert contents(memory.search("tea", user_id="u")) == [
        "Likes tea after lunch",
        "Likes tea before bed",
        "Likes tea in the morning",
    ]


def test_category_is_searchable_and_filters(memory: Memory) -> None:
    seed(
        memory,
        ("Run a marathon under four hours", "goal", 0.9),
        ("Runs every morning", "behavior", 0.9),
        ("Learn Japanese to N3", "goal", 0.8),
    )

    assert set(contents(memory.search("my goals", user_id="u"))) == {
        "Run a marathon under four hours",
        "Learn Japanese to N3",
    }
    assert contents(memory.search("marathon morning", user_id="u", category="Behavior")) == [
        "Runs every morning"
    ]
    assert memory.search("marathon", user_id="u", category="unknown") == []


def test_limit_caps_the_results(memory: Memory) -> None:
    seed(memory, *((f"Visited city number {i}", "context", 0.8) for i in range(30)))

    assert len(memory.search("visited city", user_id="u", limit=7)) == 7
    assert len(memory.search("visited city", user_id="u")) == 10


def test_scopes_are_searched_apart(memory: Memory) -> None:
    memory.add_fact("Likes Rust", user_id="alice")
    memory.add_fact("Likes Rust too", user_id="bob", agent="coder")

    assert contents(memory.search("rust", user_id="alice")) == ["Likes Rust"]
    assert contents(memory.search("rust", user_id="bob", agent="coder")) == ["Likes Rust too"]
    assert memory.search("rust", user_id="bob") == []
    assert memory.search("rust", user_id="nobody") == []


def test_an_edit_a_delete_and_a_clear_are_seen_by_the_next_search(memory: Memory) -> None:
    fact, other = seed(
        memory, ("Lives in Amsterdam", "context", 0.9), ("Works in Amsterdam", "context", 0.9)
    )
    assert len(memory.search("amsterdam", user_id="u")) == 2

    memory.edit_fact(fact.id, content="Lives in Rotterdam", user_id="u")
    assert contents(memory.search("amsterdam", user_id="u")) == ["Works in Amsterdam"]
    assert contents(memory.search("rotterdam", user_id="u")) == ["Lives in Rotterdam"]

    memory.delete_fact(other.id, user_id="u")
    assert memory.search("amsterdam", user_id="u") == []

    memory.clear(user_id="u")
    assert memory.search("rotterdam", user_id="u") == []


def test_a_document_replaced_with_the_same_revision_is_not_served_from_the_index() -> None:
    store = InMemoryStore()
    with Memory(store=store, start_workers=False) as memory:
        memory.add_fact("Likes Go", user_id="u")
        assert len(memory.search("go", user_id="u")) == 1
        # Another writer replaces the document wholesale (same revision number).
        memory.import_document({"facts": [{"id": "fact_x", "content": "Likes Zig"}]}, user_id="u")

        assert memory.search("go", user_id="u") == []
        assert contents(memory.search("zig", user_id="u")) == ["Likes Zig"]


def test_hits_are_json_ready(memory: Memory) -> None:
    (fact,) = seed(memory, ("Prefers concise answers", "preference", 0.9))

    (hit,) = memory.search("concise", user_id="u")
    data = json.loads(json.dumps(hit.to_dict()))

    assert data["fact"]["id"] == fact.id
    assert data["fact"]["content"] == "Prefers concise answers"
    assert data["fact"]["category"] == "preference"
    assert data["score"] == pytest.approx(hit.score, abs=1e-6)


def test_asearch_gives_the_same_hits(memory: Memory) -> None:
    seed(memory, ("Likes jazz", "preference", 0.9))

    hits = asyncio.run(memory.asearch("jazz", user_id="u"))

    assert contents(hits) == ["Likes jazz"]


def test_a_very_long_query_still_matches_words_at_its_end(memory: Memory) -> None:
    seed(memory, ("Is allergic to peanuts", "context", 0.9))
    pasted = "x " * 20_000 + "is it safe with peanuts?"

    assert contents(memory.search(pasted, user_id="u")) == ["Is allergic to peanuts"]


@pytest.mark.parametrize(
    ("args", "error", "words"),
    [
        ((None,), TypeError, "query must be a string"),
        (("   ",), ValueError, "query is empty"),
        (("x",), ValueError, "limit=0"),
    ],
)
def test_bad_arguments_are_refused_with_a_clear_message(
    memory: Memory, args: tuple[object, ...], error: type[Exception], words: str
) -> None:
    limit = 0 if words.startswith("limit") else 10
    with pytest.raises(error, match=words):
        memory.search(*args, user_id="u", limit=limit)  # type: ignore[arg-type]


def test_limit_and_category_types_are_checked(memory: Memory) -> None:
    with pytest.raises(TypeError, match="limit must be an int"):
        memory.search("x", limit="5")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="limit must be an int"):
        memory.search("x", limit=True)
    with pytest.raises(ValueError, match="limit=1001"):
        memory.search("x", limit=1001)
    with pytest.raises(TypeError, match="category must be a string"):
        memory.search("x", category=3)  # type: ignore[arg-type]


def test_search_of_an_empty_scope_is_empty(memory: Memory) -> None:
    assert memory.search("anything", user_id="u") == []
    assert memory.get(user_id="u") == MemoryDocument()


def test_hits_carry_the_callers_fact_even_when_only_unknown_fields_changed() -> None:
    from memfold.model import Scope
    from memfold.search import Searcher

    searcher = Searcher()
    old = Fact(id="f1", content="Likes tea", extra={"note": "old"})
    new = Fact(id="f1", content="Likes tea", extra={"note": "new"})
    searcher.search(Scope("u"), [old], "tea")

    (hit,) = searcher.search(Scope("u"), [new], "tea")

    assert hit.fact.extra == {"note": "new"}
