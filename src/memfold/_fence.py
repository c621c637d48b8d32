"""The clear fence: which turns of an update were recorded before its scope was cleared.

Pure functions. ``clear`` stamps the document with its time (``MemoryDocument.cleared_at``,
by the same clock ``record`` stamps jobs with); a job whose records predate the stamp must
forget those turns, whichever process or replica cleared the scope and whatever queue
held the job. A job merged from records on both sides of a clear keeps the turns after it,
found through the job's record marks (``Job.marks``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from memfold.model import MemoryDocument, Message

__all__ = ["clear_stamp", "cleared_time", "recorded_before_clear"]

#: ``(recorded_at, index, message)``, as ``memfold.queue.base.RecordMark``.
_Mark = tuple[float, int, Message]


def clear_stamp(now: datetime) -> str:
    """The ``cleared_at`` text of a clear at ``now``: UTC with microseconds, so stamps
    sort as text in time order."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def cleared_time(document: MemoryDocument) -> float | None:
    """When ``document``'s scope was last cleared (Unix seconds); None if never, or if the
    stamp is unreadable (a hand-edited file: no fence rather than no memory)."""
    if not document.cleared_at:
        return None
    try:
        stamp = datetime.fromisoformat(document.cleared_at)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def recorded_before_clear(
    messages: Sequence[Message],
    recorded_at: float | None,
    marks: Sequence[_Mark],
    cleared: float | None,
) -> int:
    """How many leading ``messages`` were recorded before the clear at ``cleared``.

    0 when the job's oldest record (``recorded_at``) is not older than the clear. Else the
    messages up to the last one recorded before it; when the marks do not tell (a durable
    queue's job, whose pre-clear rows the clear deleted, has none; a long job may have lost
    its oldest marks), err on forgetting: all of them, or up to the oldest known mark.
    """
    if recorded_at is None or cleared is None or recorded_at >= cleared:
        return 0
    after = [mark for mark in marks if mark[0] >= cleared]
    if not after:
        return len(messages)
    before = [mark for mark in marks if mark[0] < cleared]
    _, index, message = before[-1] if before else after[0]
    return _position(messages, index, message) + 1


def _position(messages: Sequence[Message], index: int, message: Message) -> int:
    """Where ``message`` (last seen at ``index``) is in ``messages``: the nearest equal
    message to ``index``; the last position when it is gone (forget rather than learn)."""
    if 0 <= index < len(messages) and messages[index] == message:
        return index
    found = [i for i, m in enumerate(messages) if m == message]
    if not found:
        return len(messages) - 1
    return min(found, key=lambda i: abs(i - index))
