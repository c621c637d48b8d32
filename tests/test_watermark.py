"""Watermarks: only unseen messages go to the extractor; bounded per scope; merging."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memfold.model import (
    MAX_WATERMARKS,
    Message,
    Watermark,
    document_from_dict,
    document_to_dict,
    empty_document,
    message_key,
)
from memfold.watermark import (
    MergeIndex,
    advance,
    merge_messages,
    merge_record,
    merge_record_indexed,
    new_messages,
    watermark_key,
)


def msgs(*texts: str, ids: bool = False) -> tuple[Message, ...]:
    roles = ("user", "assistant")
    return tuple(
        Message(roles[i % 2], text, id=text if ids else None) for i, text in enumerate(texts)
    )


def test_without_watermark_every_message_is_new() -> None:
    thread = msgs("a", "b", "c")
    assert new_messages(thread, None) == thread


def test_only_messages_after_watermark_are_new() -> None:
    thread = msgs("a", "b", "c", "d")
    mark = Watermark(message_key(thread[1]))
    assert new_messages(thread, mark) == thread[2:]


def test_watermark_on_last_message_leaves_nothing_new() -> None:
    thread = msgs("a", "b")
    assert new_messages(thread, Watermark(message_key(thread[-1]))) == ()


def test_missing_watermark_message_means_thread_was_summarised_so_all_are_new() -> None:
    thread = msgs("c", "d", "e", "f")
    assert new_messages(thread, Watermark(message_key(Message("user", "a")))) == thread


def test_repeated_content_uses_the_last_occurrence() -> None:
    # without ids, two identical "ok" messages share a key: the later one is the mark
    thread = (*msgs("ok", "sure"), *msgs("ok", "done"))
    mark = Watermark(message_key(Message("user", "ok")))
    assert new_messages(thread, mark) == thread[3:]


def test_message_id_identifies_a_message_even_if_content_changes() -> None:
    before = (Message("user", "hi", id="m1"), Message("assistant", "hello", id="m2"))
    after = (Message("user", "hi (edited)", id="m1"), *before[1:], Message("user", "x", id="m3"))
    mark = Watermark(message_key(before[1]))
    assert new_messages(after, mark) == after[2:]


def test_advance_sets_watermark_to_last_message() -> None:
    thread = msgs("a", "b", "c")
    doc = advance(empty_document(), "t1", thread, "2026-01-01T00:00:00Z")
    assert doc.watermarks["t1"] == Watermark(watermark_key(thread), "2026-01-01T00:00:00Z")
    assert watermark_key(thread).startswith(message_key(thread[-1]))
    assert new_messages((*thread, *msgs("d")), doc.watermarks["t1"]) == msgs("d")
    assert doc.revision == 0  # the store's commit bumps the revision, not the watermark


def test_reply_repeated_word_for_word_later_is_not_taken_for_the_watermark() -> None:
    first = msgs("My name is Bob.", "Noted.")
    doc = advance(empty_document(), "t1", first, "2026-01-01T00:00:00Z")
    later = (*first, *msgs("I live in Paris.", "Noted."))
    assert new_messages(later, doc.watermarks["t1"]) == later[2:]


def test_watermark_message_left_first_by_a_summary_still_marks_the_seen_part() -> None:
    thread = msgs("a", "b", "c", "d")
    doc = advance(empty_document(), "t1", thread[:2], "2026-01-01T00:00:00Z")
    summarised = thread[1:]  # "a" was summarised away; "b" (the mark) is kept
    assert new_messages(summarised, doc.watermarks["t1"]) == thread[2:]


def test_watermark_of_a_message_with_an_id_is_its_id() -> None:
    thread = msgs("a", "b|c", ids=True)
    assert watermark_key(thread) == "id:b|c"
    assert new_messages((*thread, *msgs("d", ids=True)), Watermark("id:b|c")) == msgs("d", ids=True)


def test_advance_with_no_messages_changes_nothing() -> None:
    doc = empty_document()
    assert advance(doc, "t1", (), "2026-01-01T00:00:00Z") is doc


def test_advance_survives_json_round_trip() -> None:
    thread = msgs("a", "b", ids=True)
    doc = advance(empty_document(), "t1", thread, "2026-01-01T00:00:00Z")
    restored = document_from_dict(document_to_dict(doc))
    assert new_messages((*thread, *msgs("c", ids=True)), restored.watermarks.get("t1")) == msgs(
        "c", ids=True
    )


def test_advance_keeps_most_recent_threads_within_bound() -> None:
    doc = empty_document()
    for i in range(MAX_WATERMARKS + 10):
        doc = advance(doc, f"t{i}", msgs(f"m{i}"), f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z")
    assert len(doc.watermarks) == MAX_WATERMARKS
    assert "t0" not in doc.watermarks
    assert "t9" not in doc.watermarks
    assert "t10" in doc.watermarks
    assert f"t{MAX_WATERMARKS + 9}" in doc.watermarks


def test_advance_evicts_oldest_updated_not_oldest_inserted() -> None:
    doc = empty_document()
    doc = advance(doc, "a", msgs("1"), "2026-01-01T00:00:01Z", max_watermarks=3)
    doc = advance(doc, "b", msgs("2"), "2026-01-01T00:00:02Z", max_watermarks=3)
    doc = advance(doc, "c", msgs("3"), "2026-01-01T00:00:03Z", max_watermarks=3)
    doc = advance(doc, "a", msgs("4"), "2026-01-01T00:00:04Z", max_watermarks=3)
    doc = advance(doc, "d", msgs("5"), "2026-01-01T00:00:05Z", max_watermarks=3)
    assert set(doc.watermarks) == {"a", "c", "d"}


def test_advance_ties_evict_first_inserted_and_keep_current_thread() -> None:
    same = "2026-01-01T00:00:00Z"
    doc = empty_document()
    for thread in ("a", "b", "c"):
        doc = advance(doc, thread, msgs(thread), same, max_watermarks=3)
    doc = advance(doc, "d", msgs("d"), "2025-01-01T00:00:00Z", max_watermarks=3)  # older stamp
    assert set(doc.watermarks) == {"b", "c", "d"}


def test_advance_rejects_nonpositive_bound() -> None:
    with pytest.raises(ValueError, match="max_watermarks"):
        advance(empty_document(), "t", msgs("a"), "", max_watermarks=0)


def test_merge_keeps_pending_tail_behind_urgent_head() -> None:
    pending = msgs("a", "b", "c", "d", "e", ids=True)
    urgent = msgs("a", "b", "c", ids=True)
    assert merge_messages(pending, urgent) == pending


def test_merge_appends_summarised_thread_tail() -> None:
    before = msgs("a", "b", "c", "d", ids=True)
    after = (*msgs("c", "d", ids=True)[0:2], Message("user", "e", id="e"))
    assert [m.content for m in merge_messages(before, after)] == ["a", "b", "c", "d", "e"]


@given(
    st.lists(st.integers(0, 30), unique=True, max_size=15),
    st.integers(0, 15),
    st.integers(0, 15),
    st.integers(0, 15),
)
def test_merge_of_two_windows_of_one_thread_is_their_union_in_order(
    ids: list[int], a: int, b: int, c: int
) -> None:
    thread = tuple(Message("user", str(i), id=str(i)) for i in ids)
    lo, hi = sorted((a, b))
    first, second = thread[:hi], thread[min(lo, c) :]
    merged = merge_messages(first, second)
    expected = tuple(m for m in thread if m in first or m in second)
    assert merged == expected


def test_merge_keeps_a_reply_repeated_word_for_word_after_another_question() -> None:
    older = (Message("user", "I live in Oslo"), Message("assistant", "Noted."))
    newer = (Message("user", "I work as a nurse"), Message("assistant", "Noted."))
    merged = merge_messages(older, newer)
    assert [m.content for m in merged] == [
        "I live in Oslo",
        "Noted.",
        "I work as a nurse",
        "Noted.",
    ]


def test_merge_record_keeps_the_latest_snapshot_or_merges_a_partial_one() -> None:
    thread = msgs("a", "b", "c", "d")
    assert merge_record(thread[:2], thread) == thread
    assert merge_record(thread[:2], thread[2:]) == thread
    assert merge_record(thread, thread[1:]) == thread  # a sliding window lost "a": kept


def test_merge_is_linear_when_one_reply_repeats_thousands_of_times() -> None:
    older = tuple(
        m for i in range(20_000) for m in (Message("user", f"q{i}"), Message("assistant", "ok"))
    )
    newer = (*older[1:], Message("user", "last"))
    assert merge_messages(older, newer) == (*older, Message("user", "last"))


_MESSAGES = st.builds(
    Message,
    st.sampled_from(["user", "assistant"]),
    st.sampled_from(["ok", "Noted.", "hi", "I live in Oslo", "x"]),
    st.one_of(st.none(), st.sampled_from(["m1", "m2", "m3"])),
)


@given(st.lists(_MESSAGES, max_size=8), st.lists(_MESSAGES, max_size=6), st.booleans())
def test_indexed_merge_is_the_same_merge(
    pending: list[Message], record: list[Message], indexed: bool
) -> None:
    index = MergeIndex(pending) if indexed else None
    merged, _, appended = merge_record_indexed(tuple(pending), index, tuple(record))
    assert merged == merge_record(tuple(pending), tuple(record))
    if appended:
        assert merged == (*pending, *record)
