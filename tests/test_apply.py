"""Rules of ``memfold.apply`` (DESIGN rules 6-7, REFERENCE §3 items 4-7 and 13)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memfold.apply import (
    ApplyContext,
    ApplyResult,
    Change,
    FactIdError,
    apply,
    dedup_key,
)
from memfold.extract.base import ChangeSet, FactRemoval, NewFact, SummaryUpdate
from memfold.model import MANUAL_SOURCE, Fact, MemoryDocument, Signals, Summary

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NOW_ISO = "2026-11-30T12:00:00Z"
EARLIER = "2026-01-01T00:00:00Z"


def ctx(**overrides: object) -> ApplyContext:
    values: dict[str, object] = {"now": NOW, "thread_id": "t1"}
    values.update(overrides)
    return ApplyContext(**values)  # type: ignore[arg-type]


def fact(
    fact_id: str,
    content: str,
    *,
    confidence: float = 0.8,
    category: str = "context",
    source: str | None = "t0",
    created_at: str = EARLIER,
) -> Fact:
    return Fact(
        id=fact_id,
        content=content,
        category=category,
        confidence=confidence,
        created_at=created_at,
        updated_at=created_at,
        source=source,
    )


def doc(*facts: Fact) -> MemoryDocument:
    return MemoryDocument(revision=3, generation=1, last_updated=EARLIER, facts=facts)


def new(content: str, confidence: float = 0.9, category: str = "context", **kw: object) -> NewFact:
    return NewFact(content, category, confidence, **kw)  # type: ignore[arg-type]


def run(document: MemoryDocument, change_set: ChangeSet, **overrides: object) -> ApplyResult:
    return apply(document, change_set, ctx(**overrides))


def contents(document: MemoryDocument) -> list[str]:
    return [f.content for f in document.facts]


def kinds(result: ApplyResult, kind: str) -> list[Change]:
    return [c for c in result.changes if c.kind == kind]


def counter_ids() -> Callable[[], str]:
    numbers = itertools.count()
    return lambda: f"fact_{next(numbers):08x}"


# --- summaries -------------------------------------------------------------------------


def test_summary_update_replaces_text_and_stamps_time() -> None:
    result = run(doc(), ChangeSet(summaries=(SummaryUpdate("workContext", "  Builds a CLI  "),)))
    summary = result.document.summaries["workContext"]
    assert summary.summary == "Builds a CLI"
    assert summary.updated_at == NOW_ISO
    assert result.document.last_updated == NOW_ISO
    assert [c.kind for c in result.changes] == ["summary_changed"]


def test_summary_with_same_text_modulo_whitespace_is_not_a_change() -> None:
    base = doc().with_changes(
        summaries={**doc().summaries, "topOfMind": Summary("Ship v1", EARLIER)}
    )
    result = run(base, ChangeSet(summaries=(SummaryUpdate("topOfMind", " Ship v1\n"),)))
    assert not result.changed
    assert result.document is base


def test_unknown_summary_section_is_skipped_with_a_reason() -> None:
    result = run(doc(), ChangeSet(summaries=(SummaryUpdate("hobbies", "Plays chess"),)))
    assert not result.changed
    (change,) = result.changes
    assert change.kind == "skipped"
    assert change.section == "hobbies"
    assert "unknown summary section" in change.reason


@pytest.mark.parametrize(
    ("scope", "durability"),
    [("task", "durable"), ("user", "temporary"), (None, "durable"), ("user", None)],
)
def test_summary_not_user_durable_is_skipped(scope: str | None, durability: str | None) -> None:
    update = SummaryUpdate("workContext", "Fixing one PR", scope, durability)  # type: ignore[arg-type]
    result = run(doc(), ChangeSet(summaries=(update,)))
    assert result.document.summary("workContext") == ""
    assert kinds(result, "skipped")


def test_last_update_of_a_section_wins_and_replay_is_a_no_op() -> None:
    change_set = ChangeSet(
        summaries=(SummaryUpdate("workContext", "First"), SummaryUpdate("workContext", "Second"))
    )
    first = run(doc(), change_set)
    assert first.document.summary("workContext") == "Second"
    assert len(kinds(first, "summary_changed")) == 1
    assert not run(first.document, change_set).changed


def test_empty_summary_never_clears_a_section() -> None:
    base = doc().with_changes(summaries={**doc().summaries, "workContext": Summary("Data eng")})
    result = run(base, ChangeSet(summaries=(SummaryUpdate("workContext", "   "),)))
    assert result.document.summary("workContext") == "Data eng"
    assert not result.changed


# --- new facts -------------------------------------------------------------------------


def test_new_fact_gets_id_times_source_and_lowercased_category() -> None:
    result = run(doc(), ChangeSet(new_facts=(new(" Prefers tea ", category=" Preference "),)))
    (added,) = result.document.facts
    assert added.content == "Prefers tea"
    assert added.category == "preference"
    assert added.created_at == added.updated_at == NOW_ISO
    assert added.source == "t1"
    assert added.id.startswith("fact_")
    assert result.document.revision == 3
    assert result.document.generation == 1


def test_confidence_below_threshold_is_skipped_and_at_threshold_kept() -> None:
    result = run(doc(), ChangeSet(new_facts=(new("Low", 0.69), new("Edge", 0.7))))
    assert contents(result.document) == ["Edge"]
    (skip,) = kinds(result, "skipped")
    assert "below threshold" in skip.reason


def test_custom_threshold_is_used() -> None:
    result = run(doc(), ChangeSet(new_facts=(new("Likes jazz", 0.8),)), confidence_threshold=0.85)
    assert contents(result.document) == []


def test_bad_confidence_in_one_item_never_sinks_the_others() -> None:
    """REFERENCE §3 item 4: 1.5, 95 (percent) or NaN must not fail the whole update."""
    change_set = ChangeSet(
        summaries=(SummaryUpdate("workContext", "Backend engineer"),),
        new_facts=(
            new("Uses Go", 1.5),
            new("Uses Rust", 95),
            new("Uses Zig", math.nan),
            new("Uses Nim", math.inf),
            new("Uses C", -3),
            new("Uses Python", 0.9),
        ),
    )
    result = run(doc(), change_set)
    by_content = {f.content: f.confidence for f in result.document.facts}
    assert by_content == {"Uses Go": 1.0, "Uses Rust": 1.0, "Uses Python": 0.9}
    assert result.document.summary("workContext") == "Backend engineer"
    assert len(kinds(result, "skipped")) == 3


def test_knowledge_category_stays_knowledge_and_unknown_is_kept_lowercase() -> None:
    """REFERENCE §3 item 5: never rename a category to ``other``."""
    change_set = ChangeSet(
        new_facts=(new("Knows SQL well", category="knowledge"), new("Plays go", category="Hobby"))
    )
    result = run(doc(), change_set)
    assert {f.content: f.category for f in result.document.facts} == {
        "Knows SQL well": "knowledge",
        "Plays go": "hobby",
    }


def test_empty_category_becomes_context() -> None:
    result = run(doc(), ChangeSet(new_facts=(new("Lives alone", category="  "),)))
    assert result.document.facts[0].category == "context"


@pytest.mark.parametrize("content", ["", "   ", "...", "。"])
def test_empty_content_is_skipped(content: str) -> None:
    result = run(doc(), ChangeSet(new_facts=(new(content),)))
    assert not result.changed
    assert kinds(result, "skipped")[0].reason == "empty content"


@pytest.mark.parametrize(
    ("scope", "durability", "reason"),
    [
        ("task", "durable", "task-scoped"),
        ("user", "temporary", "temporary"),
        (None, "durable", "unlabelled"),
        ("user", None, "unlabelled"),
    ],
)
def test_task_scoped_temporary_and_unlabelled_facts_are_dropped(
    scope: str | None, durability: str | None, reason: str
) -> None:
    """REFERENCE §3 item 13: "this PR must not touch the API" is not user memory."""
    item = new("This PR must not touch the API", scope=scope, durability=durability)
    result = run(doc(), ChangeSet(new_facts=(item, new("Prefers small PRs"))))
    assert contents(result.document) == ["Prefers small PRs"]
    assert reason in kinds(result, "skipped")[0].reason


@pytest.mark.parametrize(
    "content",
    [
        "User uploaded a file named report.pdf",
        "Has uploaded two PDF files for review",
        "Attached a screenshot of the error",
        "Asked about the uploaded document",
        "Uploaded notes.docx",
        "用户上传了文件",
        "上传了一份简历PDF",
        "我上传的图片是一张截图",
    ],
)
def test_new_fact_about_an_upload_event_is_dropped(content: str) -> None:
    result = run(doc(), ChangeSet(new_facts=(new(content),)))
    assert contents(result.document) == []
    assert "upload" in kinds(result, "skipped")[0].reason


@pytest.mark.parametrize(
    "content",
    [
        "Works on a file-upload service",
        "Maintains the upload pipeline for images",
        "Builds storage for uploaded files",
        "负责文件上传服务的开发",
        "Uploads videos to YouTube weekly",
    ],
)
def test_lasting_fact_that_involves_uploads_is_kept(content: str) -> None:
    result = run(doc(), ChangeSet(new_facts=(new(content),)))
    assert contents(result.document) == [content]


def test_old_facts_mentioning_uploads_survive_any_update() -> None:
    """REFERENCE §3 item 6: scrubbing applies to new items only."""
    old_auto = fact("fact_00000001", "User uploaded a file with sales data")
    old_manual = fact("fact_00000002", "上传了文件给团队", source=MANUAL_SOURCE)
    base = doc(old_auto, old_manual)
    result = run(base, ChangeSet(new_facts=(new("Prefers CSV exports"),)))
    assert contents(result.document) == [
        old_auto.content,
        old_manual.content,
        "Prefers CSV exports",
    ]


def test_correction_fact_keeps_its_source_error() -> None:
    item = new(
        "Uses PostgreSQL, not MySQL",
        0.95,
        category="correction",
        source_error=" Assumed MySQL ",
    )
    (added,) = run(doc(), ChangeSet(new_facts=(item,))).document.facts
    assert added.category == "correction"
    assert added.source_error == "Assumed MySQL"


# --- dedup -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("Prefers Python.", "prefers  python"),
        ("喜欢Python。", "喜欢Python"),
        ("Likes tea!", "LIKES TEA"),
        ("Ｐｒｅｆｅｒｓ Ｇｏ！", "prefers go"),
        ("Is busy…", "is busy"),
        ("住在上海，", "住在上海"),
    ],
)
def test_dedup_key_treats_variants_as_equal(left: str, right: str) -> None:
    assert dedup_key(left) == dedup_key(right)


@pytest.mark.parametrize(
    ("left", "right"),
    [("Uses C#", "Uses C"), ("Likes C++", "Likes C"), ("Prefers Python", "喜欢Python")],
)
def test_dedup_key_keeps_meaningful_differences(left: str, right: str) -> None:
    assert dedup_key(left) != dedup_key(right)


def test_duplicate_of_existing_fact_is_skipped() -> None:
    base = doc(fact("fact_00000001", "Prefers Python.", confidence=0.9))
    result = run(base, ChangeSet(new_facts=(new("prefers  python", 0.8),)))
    assert not result.changed
    assert kinds(result, "skipped")[0].fact_id == "fact_00000001"


def test_duplicates_within_one_change_set_are_added_once() -> None:
    change_set = ChangeSet(
        new_facts=(
            new("喜欢Python。"),
            new("喜欢Python"),
            new("Prefers Python."),
            new("prefers  python"),
        )
    )
    result = run(doc(), change_set)
    assert contents(result.document) == ["喜欢Python。", "Prefers Python."]


def test_higher_confidence_duplicate_raises_existing_confidence() -> None:
    base = doc(fact("fact_00000001", "Prefers Python", confidence=0.75))
    result = run(base, ChangeSet(new_facts=(new("prefers python.", 0.95),)))
    (updated,) = result.document.facts
    assert updated.confidence == 0.95
    assert updated.updated_at == NOW_ISO
    assert updated.created_at == EARLIER
    assert [c.kind for c in result.changes if c.kind != "skipped"] == ["updated"]


def test_higher_confidence_duplicate_in_same_set_raises_the_earlier_new_fact() -> None:
    result = run(doc(), ChangeSet(new_facts=(new("Likes tea", 0.75), new("likes tea", 0.92))))
    assert [(f.content, f.confidence) for f in result.document.facts] == [("Likes tea", 0.92)]


def test_duplicate_never_changes_a_manual_fact() -> None:
    manual = fact("fact_00000001", "Likes tea", confidence=0.75, source=MANUAL_SOURCE)
    result = run(doc(manual), ChangeSet(new_facts=(new("likes tea", 0.99),)))
    assert result.document.facts == (manual,)
    assert not result.changed


# --- removals --------------------------------------------------------------------------


def test_contradiction_replaces_old_fact_with_exactly_the_new_one() -> None:
    base = doc(fact("fact_00000001", "Lives in Beijing", confidence=0.9))
    change_set = ChangeSet(
        new_facts=(new("Lives in Shanghai", 0.9),),
        removals=(FactRemoval("fact_00000001", "moved", replaced_by=0),),
    )
    result = run(base, change_set)
    assert contents(result.document) == ["Lives in Shanghai"]
    assert [c.kind for c in result.changes] == ["superseded", "added"]
    superseded, added = result.changes
    assert superseded.replaced_by == added.fact_id
    assert added.replaces == ("fact_00000001",)


def test_replaying_the_same_change_set_changes_nothing() -> None:
    base = doc(fact("fact_00000001", "Lives in Beijing", confidence=0.9))
    change_set = ChangeSet(
        summaries=(SummaryUpdate("personalContext", "Moved to Shanghai"),),
        new_facts=(new("Lives in Shanghai", 0.9),),
        removals=(FactRemoval("fact_00000001", "moved", replaced_by=0),),
    )
    first = run(base, change_set)
    second = run(first.document, change_set, now=NOW + timedelta(hours=1))
    assert first.changed
    assert not second.changed
    assert second.document is first.document


def test_removal_whose_replacement_was_rejected_is_not_applied() -> None:
    base = doc(fact("fact_00000001", "Lives in Beijing", confidence=0.9))
    change_set = ChangeSet(
        new_facts=(new("Lives in Shanghai", 0.3),),
        removals=(FactRemoval("fact_00000001", "moved", replaced_by=0),),
    )
    result = run(base, change_set)
    assert contents(result.document) == ["Lives in Beijing"]
    assert not result.changed


@pytest.mark.parametrize("replaced_by", [5, -1])
def test_removal_pointing_at_a_missing_replacement_is_not_applied(replaced_by: int) -> None:
    base = doc(fact("fact_00000001", "Lives in Beijing"))
    change_set = ChangeSet(
        new_facts=(new("Likes tea"),),
        removals=(FactRemoval("fact_00000001", replaced_by=replaced_by),),
    )
    assert "Lives in Beijing" in contents(run(base, change_set).document)


def test_replacement_identical_to_the_removed_fact_keeps_the_old_fact() -> None:
    base = doc(fact("fact_00000001", "Lives in Beijing", confidence=0.8))
    change_set = ChangeSet(
        new_facts=(new("lives in beijing", 0.9),),
        removals=(FactRemoval("fact_00000001", replaced_by=0),),
    )
    result = run(base, change_set)
    assert [(f.id, f.confidence) for f in result.document.facts] == [("fact_00000001", 0.9)]


def test_replacement_duplicating_another_kept_fact_still_removes_the_old_one() -> None:
    base = doc(
        fact("fact_00000001", "Lives in Beijing"), fact("fact_00000002", "Lives in Shanghai")
    )
    change_set = ChangeSet(
        new_facts=(new("lives in shanghai"),),
        removals=(FactRemoval("fact_00000001", replaced_by=0),),
    )
    assert contents(run(base, change_set).document) == ["Lives in Shanghai"]


def test_plain_removal_frees_the_content_for_a_new_fact() -> None:
    base = doc(fact("fact_00000001", "Likes tea", confidence=0.75))
    change_set = ChangeSet(
        new_facts=(new("likes tea", 0.9),), removals=(FactRemoval("fact_00000001"),)
    )
    result = run(base, change_set)
    assert contents(result.document) == ["likes tea"]
    assert result.document.facts[0].id != "fact_00000001"


def test_removals_are_ignored_when_the_reply_did_not_parse_cleanly() -> None:
    base = doc(fact("fact_00000001", "Lives in Beijing"))
    change_set = ChangeSet(
        new_facts=(new("Likes tea"),),
        removals=(FactRemoval("fact_00000001"),),
        removals_allowed=False,
    )
    result = run(base, change_set)
    assert contents(result.document) == ["Lives in Beijing", "Likes tea"]
    assert any("did not parse" in c.reason for c in kinds(result, "skipped"))


def test_removal_of_unknown_id_is_ignored() -> None:
    base = doc(fact("fact_00000001", "Lives in Beijing"))
    result = run(base, ChangeSet(removals=(FactRemoval("fact_deadbeef"),)))
    assert not result.changed
    assert result.document is base


def test_manual_fact_is_protected_without_a_correction() -> None:
    """REFERENCE §3 item 7: the removal list cannot delete manual facts."""
    manual = fact("fact_00000001", "Is vegetarian", source=MANUAL_SOURCE)
    auto = fact("fact_00000002", "Likes tea")
    change_set = ChangeSet(removals=(FactRemoval(manual.id), FactRemoval(auto.id)))
    result = run(doc(manual, auto), change_set)
    assert contents(result.document) == ["Is vegetarian"]


def test_manual_fact_is_removed_on_an_explicit_correction() -> None:
    manual = fact("fact_00000001", "Is vegetarian", source=MANUAL_SOURCE)
    change_set = ChangeSet(removals=(FactRemoval(manual.id),))
    result = run(doc(manual), change_set, signals=Signals(correction=True))
    assert contents(result.document) == []


def test_a_change_set_never_removes_a_fact_it_adds() -> None:
    ids = iter(["fact_0000000a"])
    change_set = ChangeSet(new_facts=(new("Likes tea"),), removals=(FactRemoval("fact_0000000a"),))
    result = run(doc(), change_set, new_id=lambda: next(ids))
    assert contents(result.document) == ["Likes tea"]


# --- cap -------------------------------------------------------------------------------


def test_cap_evicts_lowest_confidence_then_oldest() -> None:
    base = doc(
        fact("fact_00000001", "A", confidence=0.8, created_at="2026-03-01T00:00:00Z"),
        fact("fact_00000002", "B", confidence=0.8, created_at="2026-02-01T00:00:00Z"),
        fact("fact_00000003", "C", confidence=0.75, created_at="2026-04-01T00:00:00Z"),
        fact("fact_00000004", "D", confidence=0.9, created_at="2025-01-01T00:00:00Z"),
    )
    result = run(base, ChangeSet(new_facts=(new("E", 0.85),)), max_facts=3)
    assert contents(result.document) == ["A", "D", "E"]
    assert [c.fact_id for c in kinds(result, "evicted")] == ["fact_00000002", "fact_00000003"]


def test_new_fact_is_not_trimmed_in_favour_of_an_equally_trusted_old_one() -> None:
    """REFERENCE §3 item 7: a fact added now never loses a tie to an older one."""
    base = doc(*(fact(f"fact_0000000{i}", f"Old {i}", confidence=0.8) for i in range(3)))
    result = run(base, ChangeSet(new_facts=(new("Fresh", 0.8),)), max_facts=3)
    assert "Fresh" in contents(result.document)
    assert len(result.document.facts) == 3
    assert kinds(result, "evicted")[0].fact_id == "fact_00000000"


def test_new_fact_less_trusted_than_every_kept_fact_is_skipped_not_added() -> None:
    base = doc(*(fact(f"fact_0000000{i}", f"Old {i}", confidence=0.95) for i in range(2)))
    result = run(base, ChangeSet(new_facts=(new("Weak", 0.75),)), max_facts=2)
    assert contents(result.document) == ["Old 0", "Old 1"]
    assert not result.changed
    assert "max_facts" in kinds(result, "skipped")[0].reason


def test_cap_trimming_a_replacement_keeps_the_fact_it_would_replace() -> None:
    base = doc(
        fact("fact_00000001", "Lives in Beijing", confidence=0.9),
        fact("fact_00000002", "Strong", confidence=0.99),
    )
    change_set = ChangeSet(
        new_facts=(new("Lives in Shanghai", 0.75), new("Stronger", 0.98)),
        removals=(FactRemoval("fact_00000001", replaced_by=0),),
    )
    result = run(base, change_set, max_facts=2)
    assert sorted(contents(result.document)) == ["Strong", "Stronger"]
    assert [c.fact_id for c in kinds(result, "evicted")] == ["fact_00000001"]
    assert not kinds(result, "removed")


def test_manual_facts_are_evicted_only_after_all_others() -> None:
    manual = fact("fact_00000001", "Manual", confidence=0.1, source=MANUAL_SOURCE)
    base = doc(manual, fact("fact_00000002", "Auto", confidence=0.8))
    result = run(base, ChangeSet(new_facts=(new("New", 0.9),)), max_facts=2)
    assert contents(result.document) == ["Manual", "New"]


def test_document_over_the_cap_is_trimmed_even_by_an_empty_change_set() -> None:
    base = doc(*(fact(f"fact_0000000{i}", f"F{i}", confidence=0.7 + i / 100) for i in range(5)))
    result = run(base, ChangeSet(), max_facts=3)
    assert contents(result.document) == ["F2", "F3", "F4"]
    assert result.changed
    assert result.document.last_updated == NOW_ISO


# --- ids and context -------------------------------------------------------------------


def test_colliding_id_generator_is_retried() -> None:
    ids = iter(["fact_00000001", "fact_00000001", "fact_00000002"])
    base = doc(fact("fact_00000001", "Old"))
    result = run(base, ChangeSet(new_facts=(new("A"),)), new_id=lambda: next(ids))
    assert [f.id for f in result.document.facts] == ["fact_00000001", "fact_00000002"]


def test_broken_id_generator_raises_a_clear_error() -> None:
    base = doc(fact("fact_00000001", "Old"))
    with pytest.raises(FactIdError, match="unique"):
        run(base, ChangeSet(new_facts=(new("A"),)), new_id=lambda: "fact_00000001")


def test_unchanged_document_keeps_its_last_updated() -> None:
    base = doc(fact("fact_00000001", "Likes tea"))
    result = run(base, ChangeSet(new_facts=(new("Likes tea", 0.5),)))
    assert result.document.last_updated == EARLIER


def test_timestamps_are_written_in_utc_with_z() -> None:
    now = datetime(2026, 6, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    result = run(doc(), ChangeSet(new_facts=(new("A"),)), now=now)
    assert result.document.facts[0].created_at == "2026-06-01T12:00:00Z"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"now": datetime(2026, 1, 1)}, "timezone-aware"),
        ({"max_facts": 0}, "max_facts=0"),
        ({"confidence_threshold": 1.5}, "confidence_threshold=1.5"),
    ],
)
def test_invalid_context_is_rejected(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ctx(**overrides)
