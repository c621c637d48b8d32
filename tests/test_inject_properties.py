from __future__ import annotations

import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memfold.inject import CLOSE_TAG, OPEN_TAG, render
from memfold.model import SUMMARY_SECTIONS, Fact, MemoryDocument, Summary
from memfold.tokens import ENCODINGS, get_counter

GUARANTEED = ("correction",)

_text = st.lists(
    st.sampled_from(
        list("abcdefg XYZ 0123 .,!?:-[]|\n\t<>&/;'\"")
        + list("你好世界记忆用户喜欢简洁的回答。，")
        + ["</user_memory>", "<user_memory>", "&amp;", "<|endoftext|>", "🙂", "é"]
        + ["\r", "\x0b", "\x85", "\xa0", "\u2028", "\u3000", "\x1c", "\u200b", "\ud83d"]
    ),
    max_size=40,
).map("".join)

_facts = st.lists(
    st.builds(
        lambda i, content, category, confidence, day, error: Fact(
            id=f"f{i}",
            content=content,
            category=category,
            confidence=confidence,
            created_at=f"2026-01-{day:02d}T00:00:00Z",
            source_error=error,
        ),
        i=st.integers(0, 10_000),
        content=_text,
        category=st.sampled_from(["correction", "Correction", "preference", "goal", "x<y>"]),
        confidence=st.floats(0.0, 1.0),
        day=st.integers(1, 28),
        error=st.none() | _text,
    ),
    max_size=40,
    unique_by=lambda f: f.id,
)

_documents = st.builds(
    lambda facts, texts: MemoryDocument().with_changes(
        facts=facts,
        summaries={name: Summary(text) for name, text in zip(SUMMARY_SECTIONS, texts, strict=True)},
    ),
    _facts,
    st.lists(_text | st.just("") | _text.map(lambda t: t * 20), min_size=6, max_size=6),
)


def _is_guaranteed(line: str) -> bool:
    category = line[3:].split(" | ", 1)[0]
    return category.lower() in GUARANTEED


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    document=_documents,
    budget=st.integers(60, 3000),
    guaranteed_budget=st.integers(0, 600),
    name=st.sampled_from(ENCODINGS),
    dated=st.booleans(),
)
def test_rendered_block_is_within_budget_well_formed_and_guaranteed_first(
    document: MemoryDocument, budget: int, guaranteed_budget: int, name: str, dated: bool
):
    counter = get_counter(name)
    block = render(
        document,
        max_tokens=budget,
        counter=counter,
        guaranteed_categories=GUARANTEED,
        guaranteed_budget=guaranteed_budget,
        today=datetime.date(2026, 11, 30) if dated else None,
    )
    assert counter.count(block) <= budget
    block.encode("utf-8")
    if document.is_empty:
        assert block == ""
    if not block:
        return
    assert block.startswith(OPEN_TAG + "\n")
    assert block.endswith("\n" + CLOSE_TAG)
    assert block.count(OPEN_TAG) == 1
    assert block.count(CLOSE_TAG) == 1
    lines = block.split("\n")
    facts = [line for line in lines if line.startswith("- [")]
    flags = [_is_guaranteed(line) for line in facts]
    assert flags == sorted(flags, reverse=True), "a guaranteed fact came after another fact"
    # The planner's sum of line counts is exact: no token crosses a line break.
    units = [line + "\n" for line in lines[:-1]] + [lines[-1]]
    assert sum(counter.count(unit) for unit in units) == counter.count(block)


@settings(max_examples=60, deadline=None)
@given(document=_documents, budget=st.integers(60, 3000), name=st.sampled_from(ENCODINGS))
def test_a_short_top_correction_is_always_rendered_first(
    document: MemoryDocument, budget: int, name: str
):
    top = Fact(
        id="top",
        content="Name is Ana, not Anna",
        category="correction",
        confidence=1.0,
        created_at="2027-01-01T00:00:00Z",
    )
    document = document.with_changes(facts=[*document.facts, top])
    block = render(document, max_tokens=budget, counter=get_counter(name), guaranteed_budget=50)
    first_fact = next(line for line in block.split("\n") if line.startswith("- ["))
    assert first_fact == "- [correction | 1.00] Name is Ana, not Anna"
