"""Watermarks: which of a thread's messages an update has already seen.

Pure functions of their inputs. The extractor receives only the messages after a thread's
watermark, so a thread processed turn by turn costs prompt tokens in proportion to its
length, not its square. A watermark advances only after a successful commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memfold.model import MAX_WATERMARKS, MemoryDocument, Message, Watermark, message_key

__all__ = [
    "MergeIndex",
    "advance",
    "merge_messages",
    "merge_record",
    "merge_record_indexed",
    "new_messages",
    "watermark_key",
]

#: Joins the last message's key and its predecessor's in a watermark of messages without
#: ids (content keys are ``role:hex``, so the first ``|`` is the separator).
_PAIR = "|"


def watermark_key(messages: Sequence[Message]) -> str:
    """The watermark identity of the position after the last of ``messages``.

    A message with an id is identified by it. Without ids, identity is role + content, and
    agents often repeat a short reply word for word ("Noted.") later in a thread; the key
    then also names the message before it, so a later repeat is not taken for the mark.

    Raises:
        ValueError: ``messages`` is empty.
    """
    if not messages:
        raise ValueError("watermark_key needs at least one message")
    last = messages[-1]
    if last.id or len(messages) < 2:
        return message_key(last)
    return f"{message_key(last)}{_PAIR}{message_key(messages[-2])}"


def new_messages(messages: Sequence[Message], watermark: Watermark | None) -> tuple[Message, ...]:
    """The messages after the last one whose identity is the watermark's.

    Without a watermark, or when its message is gone (the thread was summarised and the
    message dropped), every message is new.
    """
    kept = tuple(messages)
    if watermark is None:
        return kept
    last, previous = watermark.message_key, None
    if not last.startswith("id:") and _PAIR in last:  # ids may contain the separator
        last, previous = last.split(_PAIR, 1)
    for index in range(len(kept) - 1, -1, -1):
        if message_key(kept[index]) != last:
            continue
        # the predecessor must match too, unless a summary dropped it (the mark is first)
        if previous is None or index == 0 or message_key(kept[index - 1]) == previous:
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
    """A copy of ``document`` whose watermark for ``thread_id`` is the last of ``messages``
    (identified by :func:`watermark_key`, so pass the thread's messages, not only the last).

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
    marks[thread_id] = Watermark(watermark_key(messages), now_iso)
    return document.with_changes(watermarks=marks)


def merge_messages(older: Sequence[Message], newer: Sequence[Message]) -> tuple[Message, ...]:
    """Both snapshots of one thread merged in order, each message once.

    Used whenever a record meets a pending one (see :func:`merge_record`): neither list
    may lose what only it holds. ``newer`` decides the order of shared messages; messages
    only in ``older`` stay where they were relative to the shared ones. A message with an
    id is identified by it; one without by role + content *and* the message before it, so
    a reply repeated word for word ("Noted.") after another question is a new message,
    not the old one (a list's first message matches whatever came before it). Linear in
    the two lengths, however often a message repeats.
    """
    keys = [message_key(m) for m in newer]
    by_key: dict[str, list[int]] = {}
    by_pair: dict[tuple[str, str | None], list[int]] = {}
    for index, (message, key) in enumerate(zip(newer, keys, strict=True)):
        by_key.setdefault(key, []).append(index)
        if not message.id:
            by_pair.setdefault((key, keys[index - 1] if index else None), []).append(index)
    cursors: dict[object, int] = {}

    def next_match(table: dict[Any, list[int]], ident: object, start: int) -> int | None:
        """The first unused position of ``ident`` at or after ``start``; -1 when all of its
        positions lie before ``start`` (already in the result); None when it has none."""
        found = table.get(ident)
        if not found:
            return None
        cursor = cursors.get((id(table), ident), 0)
        while cursor < len(found) and found[cursor] < start:
            cursor += 1
        cursors[(id(table), ident)] = cursor + 1
        return found[cursor] if cursor < len(found) else -1

    merged: list[Message] = []
    next_newer = 0
    previous: str | None = None
    for message in older:
        key = message_key(message)
        if message.id or previous is None:
            anchor = next_match(by_key, key, next_newer)
        else:
            anchor = next_match(by_pair, (key, previous), next_newer)
            if anchor is None:  # newer starts with it: its predecessor is unknown there
                anchor = 0 if keys and keys[0] == key and next_newer == 0 else None
        previous = key
        if anchor is None:
            merged.append(message)
        elif anchor >= next_newer:
            merged.extend(newer[next_newer : anchor + 1])
            next_newer = anchor + 1
    merged.extend(newer[next_newer:])
    return tuple(merged)


def merge_record(pending: Sequence[Message], record: Sequence[Message]) -> tuple[Message, ...]:
    """What a key holds after a new ``record`` meets its ``pending`` messages.

    A record that repeats the pending messages (the whole thread so far plus new turns:
    the usual case) is the latest snapshot and wins as it is. A record that does not
    contain them (a caller passing only the newest exchange, a sliding window) is merged:
    the ordered union of both, each message once, so nothing pending is lost.
    """
    size = len(pending)
    if len(record) >= size and tuple(record[:size]) == tuple(pending):
        return tuple(record)  # the common case, without hashing any message
    return merge_messages(pending, record)


class MergeIndex:
    """The identities of a pending message list, kept so that a record which shares no
    message with it (each new exchange recorded on its own) is appended in time linear in
    the record, not in everything pending: without it, 5,000 such records in one
    debounce window cost 12.5 million message comparisons.

    Identities are those :func:`merge_messages` matches on: ids, role + content, and for
    messages without an id also the message before them.
    """

    __slots__ = ("first", "keys", "last", "pairs")

    def __init__(self, messages: Sequence[Message] = ()) -> None:
        self.first: str | None = None
        self.last: str | None = None
        self.keys: set[str] = set()
        self.pairs: set[tuple[str, str]] = set()
        self.add(messages)

    def add(self, messages: Sequence[Message]) -> None:
        """Note ``messages`` appended at the end."""
        for message in messages:
            key = message_key(message)
            if self.first is None:
                self.first = key
            elif not message.id and self.last is not None:
                self.pairs.add((key, self.last))
            self.keys.add(key)
            self.last = key

    def shares_with(self, record: Sequence[Message]) -> bool:
        """Whether :func:`merge_messages` could match a message of ``record`` with one of
        the indexed list (False means the merge is the plain concatenation)."""
        previous: str | None = None
        for message in record:
            key = message_key(message)
            if key == self.first:
                return True  # the list's first message matches by content alone
            if message.id or previous is None:
                if key in self.keys:
                    return True
            elif (key, previous) in self.pairs:
                return True
            previous = key
        return False


def merge_record_indexed(
    pending: Sequence[Message], index: MergeIndex | None, record: Sequence[Message]
) -> tuple[tuple[Message, ...], MergeIndex | None, bool]:
    """:func:`merge_record` for a caller that keeps a :class:`MergeIndex` of ``pending``
    (None: none yet). Returns the merged messages, their index (or None), and whether
    ``record`` was simply appended.

    A snapshot repeating ``pending`` needs no index; the first record that does not builds
    it (once), and each later record sharing nothing with what is pending is appended in
    time linear in the record alone.
    """
    size = len(pending)
    if len(record) >= size and tuple(record[:size]) == tuple(pending):
        return tuple(record), None, False
    if index is None:
        index = MergeIndex(pending)
    if pending and not index.shares_with(record):
        index.add(record)
        return (*pending, *record), index, True
    return merge_messages(pending, record), None, False
