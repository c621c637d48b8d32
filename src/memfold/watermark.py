"""Watermarks: which of a thread's messages an update has already seen.

Pure functions of their inputs. The extractor receives only the messages after a thread's
watermark, so a thread processed turn by turn costs prompt tokens in proportion to its
length, not its square. A watermark advances only after a successful commit.
"""

from __future__ import annotations

from collections.abc import Sequence

from memfold.model import MAX_WATERMARKS, MemoryDocument, Message, Watermark, message_key

__all__ = ["advance", "merge_messages", "new_messages"]


def new_messages(messages: Sequence[Message], watermark: Watermark | None) -> tuple[Message, ...]:
    """The messages after the last one whose identity is the watermark's.

    Without a watermark, or when its message is gone (the thread was summarised and the
    message dropped), every message is new.
    """
    kept = tuple(messages)
    if watermark is None:
        return kept
    for index in range(len(kept) - 1, -1, -1):
        if message_key(kept[index]) == watermark.message_key:
            return kept[index + 1 :]
    return kept


def advance(
    document: MemoryDocument,
    thread_id: str,
    messages: Sequence[Message],
    now_iso: str,
    *,
    max_watermarks: int = MAX_WATERMARKS,
) -> MemoryDocument:
    """A copy of ``document`` whose watermark for ``thread_id`` is the last of ``messages``.

    Keeps at most ``max_watermarks`` threads: the least recently updated are evicted (oldest
    ``updated_at`` first, ties by insertion order); the thread just advanced is always kept.
    With no messages the document is returned unchanged.

    Raises:
        ValueError: if ``max_watermarks`` is below 1.
    """
    if max_watermarks < 1:
        raise ValueError(f"max_watermarks={max_watermarks}: must be at least 1")
    if not messages:
        return document
    marks = {t: m for t, m in document.watermarks.items() if t != thread_id}
    if len(marks) >= max_watermarks:
        ranked = sorted(enumerate(marks.items()), key=lambda p: (p[1][1].updated_at, p[0]))
        evict = {thread for _, (thread, _) in ranked[: len(marks) - max_watermarks + 1]}
        marks = {t: m for t, m in marks.items() if t not in evict}
    marks[thread_id] = Watermark(message_key(messages[-1]), now_iso)
    return document.with_changes(watermarks=marks)


def merge_messages(older: Sequence[Message], newer: Sequence[Message]) -> tuple[Message, ...]:
    """Both snapshots of one thread merged in order, each message once (by ``message_key``).

    Used when an urgent record (messages about to be summarised away) meets a pending one:
    neither list may lose what only it holds. ``newer`` decides the order of shared messages;
    messages only in ``older`` stay where they were relative to the shared ones.
    """
    newer_index: dict[str, int] = {}
    for index, message in enumerate(newer):
        newer_index.setdefault(message_key(message), index)
    merged: list[Message] = []
    next_newer = 0
    for message in older:
        anchor = newer_index.get(message_key(message))
        if anchor is None:
            merged.append(message)
        elif anchor >= next_newer:
            merged.extend(newer[next_newer : anchor + 1])
            next_newer = anchor + 1
    merged.extend(newer[next_newer:])
    return tuple(merged)
