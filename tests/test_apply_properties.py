"""Invariants of ``memfold.apply`` over random documents and change sets (hypothesis)."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from memfold.apply import ApplyContext, ApplyResult, apply
from memfold.extract.base import ChangeSet, FactRemoval, NewFact, SummaryUpdate
from memfold.model import (
    MANUAL_SOURCE,
    SUMMARY_SECTIONS,
    Fact,
    MemoryDocument,
    Signals,
    document_from_dict,
    document_to_dict,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NEW_ID = re.compile(r"^fact_[0-9a-f]{8}$")

# A small vocabulary so duplicates (modulo case, spaces, punctuation) happen often.
_WORDS = ["Likes tea", "likes  TEA.", "Lives in Beijing", "住在上海。", "住在上海", "Uses Go"]
contents = st.one_of(
    st.sampled_from([*_WORDS, "", "  ", "User uploaded a file", "上传了文件"]),
    st.text(max_size=20),
)
confidences = st.one_of(
    st.floats(min_value=0.0, max_value=1.0),
    st.sampled_from([math.nan, math.inf, -math.inf, -1.0, 1.5, 95.0]),
)
timestamps = st.sampled_from(
    ["", "garbage", "2025-01-01T00:00:00Z", "2026-06-01T10:00:00Z", "2026-06-01T10:00:00"]
)


@st.composite
def documents(draw: st.DrawFn) -> MemoryDocument:
    ids = draw(
        st.lists(
            st.integers(0, 2**32 - 1).map("fact_{:08x}".format)
            | st.sampled_from(["legacy-1", "x"]),
            max_size=12,
            unique=True,
        )
    )
    facts = tuple(
        Fact(
            id=fact_id,
            content=draw(st.sampled_from(_WORDS) | st.text(min_size=1, max_size=15)),
            category=draw(st.sampled_from(["context", "knowledge", "hobby"])),
            confidence=draw(st.floats(min_value=0.0, max_value=1.0)),
            created_at=draw(timestamps),
            updated_at="",
            source=draw(st.sampled_from([MANUAL_SOURCE, "t0", None])),
        )
        for fact_id in ids
    )
    return MemoryDocument(revision=draw(st.integers(0, 9)), facts=facts)


@st.composite
def change_sets(draw: st.DrawFn, document: MemoryDocument) -> ChangeSet:
    labels = st.sampled_from(["user", "task", None])
    durations = st.sampled_from(["durable", "temporary", None])
    summaries = draw(
        st.lists(
            st.builds(
                SummaryUpdate,
                section=st.sampled_from([*SUMMARY_SECTIONS, "bogus"]),
                summary=st.sampled_from(["", "Works on memfold", "Moved to Shanghai"]),
                scope=labels,
                durability=durations,
            ),
            max_size=4,
        )
    )
    new_facts = draw(
        st.lists(
            st.builds(
                NewFact,
                content=contents,
                category=st.sampled_from(["preference", " Knowledge ", "", "HOBBY"]),
                confidence=confidences,
                source_error=st.none() | st.just("Assumed MySQL"),
                scope=labels,
                durability=durations,
            ),
            max_size=8,
        )
    )
    known = [f.id for f in document.facts] or ["fact_00000000"]
    removals = draw(
        st.lists(
            st.builds(
                FactRemoval,
                fact_id=st.sampled_from(known) | st.just("fact_ffffffff"),
                reason=st.just("outdated"),
                replaced_by=st.none() | st.integers(-2, 9),
            ),
            max_size=5,
        )
    )
    return ChangeSet(tuple(summaries), tuple(new_facts), tuple(removals), draw(st.booleans()))


Scenario = tuple[MemoryDocument, ChangeSet, ApplyContext]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    document = draw(documents())
    change_set = draw(change_sets(document))
    context = ApplyContext(
        now=NOW,
        thread_id="t1",
        signals=Signals(correction=draw(st.booleans())),
        max_facts=draw(st.integers(1, 15)),
        confidence_threshold=draw(st.sampled_from([0.0, 0.5, 0.7, 1.0])),
    )
    return document, change_set, context


def _check_cap(scenario: Scenario, result: ApplyResult) -> None:
    assert len(result.document.facts) <= scenario[2].max_facts


def _check_ids(scenario: Scenario, result: ApplyResult) -> None:
    ids = [f.id for f in result.document.facts]
    assert len(ids) == len(set(ids))
    old_ids = {f.id for f in scenario[0].facts}
    for fact in result.document.facts:
        if fact.id not in old_ids:
            assert NEW_ID.match(fact.id)
            assert fact.source == "t1"
            assert fact.created_at == "2026-11-30T12:00:00Z"
            assert 0.0 <= fact.confidence <= 1.0
            assert fact.content == fact.content.strip() != ""


def _check_manual_protected(scenario: Scenario, result: ApplyResult) -> None:
    document, _, context = scenario
    manual = [f for f in document.facts if f.is_manual]
    if context.signals.correction or len(manual) > context.max_facts:
        return
    for fact in manual:
        assert result.document.fact(fact.id) == fact


def _check_round_trip(result: ApplyResult) -> None:
    data = json.loads(json.dumps(document_to_dict(result.document), allow_nan=False))
    assert document_from_dict(data) == result.document


def _check_changed_flag(scenario: Scenario, result: ApplyResult) -> None:
    document = scenario[0]
    after = result.document
    content_changed = after.facts != document.facts or after.summaries != document.summaries
    assert result.changed == content_changed
    assert (after is document) == (not result.changed)
    assert (after.revision, after.generation) == (document.revision, document.generation)


@settings(max_examples=250, deadline=None)
@given(scenarios())
def test_invariants_hold_for_random_documents_and_change_sets(scenario: Scenario) -> None:
    """Cap respected, ids unique and well-formed, manual facts kept without a correction,
    JSON round trip exact, ``changed`` true exactly when content changed."""
    result = apply(*scenario)
    _check_cap(scenario, result)
    _check_ids(scenario, result)
    _check_manual_protected(scenario, result)
    _check_round_trip(result)
    _check_changed_flag(scenario, result)


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_replaying_a_change_set_without_cap_pressure_is_a_no_op(scenario: Scenario) -> None:
    document, change_set, context = scenario
    roomy = ApplyContext(
        now=NOW,
        thread_id="t1",
        signals=context.signals,
        max_facts=len(document.facts) + len(change_set.new_facts) + 1,
        confidence_threshold=context.confidence_threshold,
    )
    first = apply(document, change_set, roomy)
    second = apply(first.document, change_set, roomy)
    assert not second.changed
    assert second.document is first.document
