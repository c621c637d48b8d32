"""Change history: what happened to a scope's memory, when, by whom and from which words.

Every commit can carry :class:`ChangeEvent` records, which the store writes in the same
commit as the document (JSON: a ``history.jsonl`` beside ``memory.json``; SQL: the
``memfold_history`` table, same transaction), keeping the newest ``max_history_events``
per scope. ``apply`` and ``edits`` decide what changes; this module only describes it:
it turns their changes (or the difference of two documents) into events, and answers
"where does this fact come from?" (:func:`provenance`). Pure: no IO, no clock.

Event kinds: ``added``, ``edited``, ``superseded`` (replaced by a newer fact, linked to
it), ``removed``, ``evicted`` (over ``max_facts``), ``summary`` (a section changed, was
rebuilt or held out), ``cleared``, ``imported``. Actors: ``extraction`` (with the
extractor's name), ``manual``, ``import``, ``system`` (memfold's own rules, e.g. the cap).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from memfold.model import Fact, fact_to_dict
from memfold.redact import redaction_kinds

__all__ = [
    "Actor",
    "ChangeEvent",
    "EventKind",
    "FactProvenance",
    "FactRef",
    "FactStatus",
    "events_for_fact",
    "provenance",
    "stamp",
]

EventKind = Literal[
    "added", "edited", "superseded", "removed", "evicted", "summary", "cleared", "imported"
]
Actor = Literal["extraction", "manual", "import", "system"]
FactStatus = Literal["live", "superseded", "removed", "evicted", "cleared", "unknown"]

_KINDS: frozenset[str] = frozenset(get_args(EventKind))
_ACTORS: frozenset[str] = frozenset(get_args(Actor))
# Events that end a fact's life, and the status they leave it in.
_ENDINGS: dict[str, FactStatus] = {
    "superseded": "superseded",
    "removed": "removed",
    "evicted": "evicted",
    "cleared": "cleared",
}

Scrub = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One change to a scope's memory (JSON-ready through :meth:`to_dict`).

    ``before``/``after`` are the fact's content (or the section's text) around the
    change, redacted. ``message_keys`` name the messages a change came from (their ids,
    or ``role:hash`` keys, as watermarks do) and ``excerpt`` is a short, redacted piece of
    the user's words. ``replaced_by`` links a superseded fact to its successor and
    ``replaces`` a new fact to the facts it superseded. ``revision`` is the document
    revision the change produced.
    """

    kind: EventKind
    at: str
    actor: Actor
    revision: int = 0
    fact_id: str | None = None
    section: str | None = None
    before: str | None = None
    after: str | None = None
    category: str | None = None
    reason: str = ""
    extractor: str | None = None
    thread_id: str | None = None
    message_keys: tuple[str, ...] = ()
    excerpt: str | None = None
    replaced_by: str | None = None
    replaces: tuple[str, ...] = ()

    @property
    def redactions(self) -> tuple[str, ...]:
        """What was redacted from this change's texts, by rule kind (``openai_key``,
        ``password``, …), never the value: derived from the markers the texts hold, so it
        is true for every event, including those redacted again at recall."""
        return redaction_kinds(self.before, self.after, self.excerpt, self.reason)

    def to_dict(self) -> dict[str, Any]:
        """camelCase, ``revision`` first (the JSON store reads it without parsing the rest)."""
        out: dict[str, Any] = {
            "revision": self.revision,
            "kind": self.kind,
            "at": self.at,
            "actor": self.actor,
        }
        for name, key in _OPTIONAL_FIELDS:
            value = getattr(self, name)
            if value not in (None, "", ()):
                out[key] = list(value) if isinstance(value, tuple) else value
        if self.redactions:
            out["redactions"] = list(self.redactions)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChangeEvent:
        """The inverse of :meth:`to_dict`.

        Raises:
            ValueError: the data is not an event (the message names the field).
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"event: expected an object, got {type(data).__name__}")
        kind, actor = data.get("kind"), data.get("actor")
        if kind not in _KINDS:
            raise ValueError(f"event.kind: {kind!r} is not one of {', '.join(sorted(_KINDS))}")
        if actor not in _ACTORS:
            raise ValueError(f"event.actor: {actor!r} is not one of {', '.join(sorted(_ACTORS))}")
        revision = data.get("revision", 0)
        if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
            raise ValueError(f"event.revision: expected a non-negative integer, got {revision!r}")
        values: dict[str, Any] = {}
        for name, key in _OPTIONAL_FIELDS:
            if key not in data or data[key] is None:
                continue
            value = data[key]
            if name in ("message_keys", "replaces"):
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"event.{key}: expected a list of strings")
                value = tuple(value)
            elif not isinstance(value, str):
                raise ValueError(f"event.{key}: expected a string, got {type(value).__name__}")
            values[name] = value
        return cls(kind=kind, at=str(data.get("at", "")), actor=actor, revision=revision, **values)


_OPTIONAL_FIELDS: tuple[tuple[str, str], ...] = (
    ("fact_id", "factId"),
    ("section", "section"),
    ("before", "before"),
    ("after", "after"),
    ("category", "category"),
    ("reason", "reason"),
    ("extractor", "extractor"),
    ("thread_id", "threadId"),
    ("message_keys", "messageKeys"),
    ("excerpt", "excerpt"),
    ("replaced_by", "replacedBy"),
    ("replaces", "replaces"),
)


def stamp(events: Iterable[ChangeEvent], revision: int) -> tuple[ChangeEvent, ...]:
    """The events with the revision the store gives the commit that carries them."""
    return tuple(
        event if event.revision == revision else dataclasses.replace(event, revision=revision)
        for event in events
    )


def _concerns(event: ChangeEvent, fact_id: str) -> bool:
    return fact_id in (event.fact_id, event.replaced_by) or fact_id in event.replaces


def events_for_fact(events: Iterable[ChangeEvent], fact_id: str) -> list[ChangeEvent]:
    """The events that concern ``fact_id`` (its own, and those linking to it), in the
    order given."""
    return [event for event in events if _concerns(event, fact_id)]


# --- provenance --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FactRef:
    """Another fact, by id and its content at the time."""

    fact_id: str
    content: str

    def to_dict(self) -> dict[str, Any]:
        return {"factId": self.fact_id, "content": self.content}


@dataclass(frozen=True, slots=True)
class FactProvenance:
    """Where a fact came from and everything that happened to it since.

    ``origin`` is the event that created it (``added`` or ``imported``), None when that
    predates the kept history; then ``thread_id``/``created_at`` come from the fact itself
    and ``complete`` is False. ``changes`` lists its events oldest first, ``supersedes``
    the facts it replaced, ``superseded_by`` the fact that replaced it.
    """

    fact_id: str
    status: FactStatus
    content: str
    fact: Fact | None
    origin: ChangeEvent | None
    changes: tuple[ChangeEvent, ...]
    supersedes: tuple[FactRef, ...] = ()
    superseded_by: FactRef | None = None
    thread_id: str | None = None
    created_at: str = ""
    complete: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "factId": self.fact_id,
            "status": self.status,
            "content": self.content,
            "fact": None if self.fact is None else fact_to_dict(self.fact),
            "origin": None if self.origin is None else self.origin.to_dict(),
            "changes": [event.to_dict() for event in self.changes],
            "supersedes": [ref.to_dict() for ref in self.supersedes],
            "supersededBy": None if self.superseded_by is None else self.superseded_by.to_dict(),
            "threadId": self.thread_id,
            "createdAt": self.created_at,
            "complete": self.complete,
        }


def _ending(events: Sequence[ChangeEvent], fact_id: str, after: int) -> ChangeEvent | None:
    """The scope-wide clear or import (no fact id) that ended a fact last seen at
    position ``after`` of the oldest-first ``events``."""
    for event in events[after + 1 :]:
        if event.fact_id is None and event.kind in ("cleared", "imported"):
            return event
    return None


def provenance(
    fact_id: str, events: Sequence[ChangeEvent], fact: Fact | None
) -> FactProvenance | None:
    """Explain ``fact_id`` from the scope's events (oldest first) and its live fact.

    Returns None when neither the document nor the history knows the fact.
    """
    own_positions = [i for i, e in enumerate(events) if e.fact_id == fact_id]
    own = [events[i] for i in own_positions]
    if fact is None and not own:
        return None
    origin = next((e for e in own if e.kind in ("added", "imported")), None)
    supersedes = tuple(
        FactRef(e.fact_id, e.before or "")
        for e in events
        if e.kind == "superseded" and e.replaced_by == fact_id and e.fact_id is not None
    )
    superseded_by: FactRef | None = None
    status: FactStatus = "live" if fact is not None else "unknown"
    changes = list(own)
    if fact is None:
        last = own[-1]
        status = _ENDINGS.get(last.kind, "unknown")
        if last.kind == "superseded" and last.replaced_by:
            superseded_by = FactRef(last.replaced_by, last.after or "")
        ending = _ending(events, fact_id, own_positions[-1])
        if status == "unknown" and ending is not None:
            status = "cleared" if ending.kind == "cleared" else "removed"
            changes.append(ending)
    content = fact.content if fact is not None else _last_content(own)
    thread_id = origin.thread_id if origin is not None else (fact.source if fact else None)
    created_at = origin.at if origin is not None else (fact.created_at if fact else "")
    return FactProvenance(
        fact_id=fact_id,
        status=status,
        content=content,
        fact=fact,
        origin=origin,
        changes=tuple(changes),
        supersedes=supersedes,
        superseded_by=superseded_by,
        thread_id=thread_id,
        created_at=created_at,
        complete=origin is not None,
    )


def _last_content(events: Sequence[ChangeEvent]) -> str:
    """A fact's last known content: what an ending event removed, else its latest text."""
    for event in reversed(events):
        if event.kind in _ENDINGS and event.before is not None:
            return event.before
        text = event.after if event.after is not None else event.before
        if text is not None:
            return text
    return ""
