"""The memory document and the plain data that flows between memfold's modules.

Everything here is immutable: a document returned from a store's cache can be shared
between threads and callers without copying. ``document_from_dict`` reads memfold's own
format and the reference system's v1 ``memory.json`` unchanged; fields it does not know
are kept in ``extra`` and written back on the next save.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

__all__ = [
    "DEFAULT_CATEGORIES",
    "HISTORY_SECTIONS",
    "MANUAL_SOURCE",
    "MAX_ID_CHARS",
    "MAX_NESTING",
    "MAX_WATERMARKS",
    "SUMMARY_SECTIONS",
    "USER_SECTIONS",
    "DocumentError",
    "Fact",
    "MemoryDocument",
    "Message",
    "Role",
    "Scope",
    "Signals",
    "Summary",
    "Watermark",
    "check_document",
    "checked_scope",
    "document_from_dict",
    "document_to_dict",
    "empty_document",
    "fact_to_dict",
    "message_key",
    "short_repr",
    "validate_id",
]

USER_SECTIONS: tuple[str, ...] = ("workContext", "personalContext", "topOfMind")
HISTORY_SECTIONS: tuple[str, ...] = ("recentMonths", "earlierContext", "longTermBackground")
SUMMARY_SECTIONS: tuple[str, ...] = USER_SECTIONS + HISTORY_SECTIONS
DEFAULT_CATEGORIES: tuple[str, ...] = (
    "preference",
    "knowledge",
    "context",
    "behavior",
    "goal",
    "correction",
)
#: ``Fact.source`` of facts a person added by hand (API, CLI); apply protects them.
MANUAL_SOURCE = "manual"
#: How many thread watermarks a scope keeps (most recently used first out).
MAX_WATERMARKS = 256
#: Longest ``thread_id``/``user_id``/``agent`` the API accepts (hash longer ones first).
MAX_ID_CHARS = 1024
#: Deepest nesting of lists and objects a document may hold in fields memfold keeps as is.
MAX_NESTING = 100

Role = Literal["user", "assistant"]


class DocumentError(ValueError):
    """A memory document does not have the expected shape; the message names the field."""


def _freeze(value: Any, where: str = "document", depth: int = 0) -> Any:
    """An immutable copy of parsed JSON (``where`` names it in the error).

    Raises:
        DocumentError: it is nested deeper than ``MAX_NESTING`` (a recursion limit
            would otherwise end the program's patience, not the parse).
    """
    if isinstance(value, Mapping | list | tuple):
        if depth >= MAX_NESTING:
            raise DocumentError(
                f"{where}: nested more than {MAX_NESTING} levels deep; flatten the value"
            )
        if isinstance(value, Mapping):
            return MappingProxyType(
                {str(k): _freeze(v, where, depth + 1) for k, v in value.items()}
            )
        return tuple(_freeze(v, where, depth + 1) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


def short_repr(value: object, limit: int = 80) -> str:
    """``repr`` cut to ``limit`` characters, so a huge id cannot flood a message."""
    shown = repr(value)
    return shown if len(shown) <= limit else f"{shown[: limit - 1]}…"


_short_repr = short_repr


def validate_id(
    value: object, what: str, *, max_chars: int | None = MAX_ID_CHARS, optional: bool = False
) -> str:
    """Check that ``value`` can name a thread, user or agent; returns it unchanged.

    An id is a non-empty ``str`` of valid Unicode (no lone surrogate) without NUL, at
    most ``max_chars`` characters (``None``: no limit; stores read back longer ids
    written before the limit). Messages show the id cut short, however long it is.
    ``optional`` only words the type error for ids where ``None`` is allowed too.

    Raises:
        TypeError: ``value`` is not a string.
        ValueError: it is empty, too long, contains NUL, or is not valid Unicode.
    """
    if not isinstance(value, str):
        kind = "a string or None" if optional else "a string"
        raise TypeError(f"{what} must be {kind}, got {type(value).__name__} {short_repr(value)}")
    if not value:
        raise ValueError(f"{what} must not be empty: use None for the default {what}")
    if max_chars is not None and len(value) > max_chars:
        raise ValueError(
            f"{what} {short_repr(value)} is {len(value):,} characters long, over the "
            f"{max_chars:,} allowed; pass a shorter id (e.g. a hash of it)"
        )
    if "\x00" in value:
        raise ValueError(
            f"{what} {short_repr(value)} contains a NUL character, which ids may not hold"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{what} {short_repr(value)} is not valid Unicode ({exc.reason} at position "
            f"{exc.start}); decode it properly before passing it"
        ) from exc
    return value


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memory: a user (``None`` = the default user) and optionally one agent's bucket."""

    user_id: str | None = None
    agent: str | None = None

    def __str__(self) -> str:
        user = "<default user>" if self.user_id is None else _short_repr(self.user_id)
        return f"user {user}" + ("" if self.agent is None else f", agent {_short_repr(self.agent)}")


def checked_scope(user_id: object, agent: object) -> Scope:
    """The scope of a public call, its ids checked where they enter (``validate_id``).

    Raises:
        TypeError, ValueError: naming the id that cannot name a memory.
    """
    if user_id is not None:
        validate_id(user_id, "user_id", optional=True)
    if agent is not None:
        validate_id(agent, "agent", optional=True)
    return Scope(user_id, agent)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Message:
    """One kept conversation message, after normalisation and filtering."""

    role: Role
    content: str
    id: str | None = None


def message_key(message: Message) -> str:
    """Identity of a message for watermarks: its id when present, else role + content hash."""
    if message.id:
        return f"id:{message.id}"
    digest = hashlib.sha256(message.content.encode("utf-8")).hexdigest()[:32]
    return f"{message.role}:{digest}"


@dataclass(frozen=True, slots=True)
class Signals:
    """What the user's latest messages signal about the assistant's previous answers."""

    correction: bool = False
    reinforcement: bool = False

    def merge(self, other: Signals) -> Signals:
        """OR-merge two signal sets (a replaced queue item keeps what the old one saw)."""
        return Signals(
            correction=self.correction or other.correction,
            reinforcement=self.reinforcement or other.reinforcement,
        )

    def __bool__(self) -> bool:
        return self.correction or self.reinforcement


@dataclass(frozen=True, slots=True)
class Summary:
    """One of the six context summaries."""

    summary: str = ""
    updated_at: str = ""
    extra: Mapping[str, Any] = field(default_factory=_empty, compare=False)


@dataclass(frozen=True, slots=True)
class Fact:
    """An atomic statement about the user, with a category and a confidence in [0, 1]."""

    id: str
    content: str
    category: str = "context"
    confidence: float = 0.9
    created_at: str = ""
    updated_at: str = ""
    source: str | None = None
    source_error: str | None = None
    extra: Mapping[str, Any] = field(default_factory=_empty, compare=False)

    @property
    def is_manual(self) -> bool:
        return self.source == MANUAL_SOURCE


@dataclass(frozen=True, slots=True)
class Watermark:
    """The last message of a thread that a successful update has seen."""

    message_key: str
    updated_at: str = ""


@dataclass(frozen=True, slots=True)
class MemoryDocument:
    """A scope's whole memory. ``revision`` grows on every commit, ``generation`` on clear.

    ``cleared_at`` is when the scope was last cleared (ISO-8601 UTC, microseconds; "" if
    never): an update holding turns recorded before it learns nothing from them, in any
    process (the clear fence).
    """

    version: str = "1.0"
    revision: int = 0
    generation: int = 0
    last_updated: str = ""
    cleared_at: str = ""
    summaries: Mapping[str, Summary] = field(
        default_factory=lambda: MappingProxyType({name: Summary() for name in SUMMARY_SECTIONS})
    )
    facts: tuple[Fact, ...] = ()
    watermarks: Mapping[str, Watermark] = field(default_factory=_empty)
    extra: Mapping[str, Any] = field(default_factory=_empty, compare=False)

    def summary(self, section: str) -> str:
        found = self.summaries.get(section)
        return "" if found is None else found.summary

    def fact(self, fact_id: str) -> Fact | None:
        for fact in self.facts:
            if fact.id == fact_id:
                return fact
        return None

    @property
    def is_empty(self) -> bool:
        """True when there is nothing to inject: no facts and no summary text."""
        return not self.facts and not any(s.summary.strip() for s in self.summaries.values())

    def with_changes(self, **changes: Any) -> MemoryDocument:
        """A copy with fields replaced; mappings are frozen on the way in."""
        for name in ("summaries", "watermarks", "extra"):
            if name in changes and not isinstance(changes[name], MappingProxyType):
                changes[name] = MappingProxyType(dict(changes[name]))
        if "facts" in changes:
            changes["facts"] = tuple(changes["facts"])
        return replace(self, **changes)


def empty_document() -> MemoryDocument:
    return MemoryDocument()


# --- serialisation -------------------------------------------------------------------

_FACT_KEYS = (
    "id",
    "content",
    "category",
    "confidence",
    "createdAt",
    "updatedAt",
    "source",
    "sourceError",
)
#: Where unknown fields of ``user``/``history`` are kept in ``MemoryDocument.extra``.
_RESERVED_KEYS = ("__user_extra__", "__history_extra__")
_DOC_KEYS = (
    "version",
    "revision",
    "generation",
    "lastUpdated",
    "clearedAt",
    "user",
    "history",
    "facts",
)


def _opt_str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise DocumentError(f"{where}.{key}: expected a string or null, got {type(value).__name__}")


def _str(data: Mapping[str, Any], key: str, where: str, default: str = "") -> str:
    value = data.get(key, default)
    if value is None:
        return default
    if isinstance(value, str):
        return value
    raise DocumentError(f"{where}.{key}: expected a string, got {type(value).__name__}")


def _int(data: Mapping[str, Any], key: str, where: str) -> int:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DocumentError(
            f"{where}.{key}: expected a non-negative integer, got {short_repr(value)}"
        )
    return value


def _summary_from(data: Any, where: str) -> Summary:
    if data is None:
        return Summary()
    if not isinstance(data, Mapping):
        raise DocumentError(f"{where}: expected an object, got {type(data).__name__}")
    extra = {k: v for k, v in data.items() if k not in ("summary", "updatedAt")}
    return Summary(
        summary=_str(data, "summary", where),
        updated_at=_str(data, "updatedAt", where),
        extra=_freeze(extra, where),
    )


_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


_ALL_FACT_FIELDS = operator.itemgetter(*_FACT_KEYS)
_new_object = object.__new__
(_set_id, _set_content, _set_category, _set_confidence, _set_created, _set_updated,
 _set_source, _set_error, _set_extra) = (
    Fact.__dict__[f.name].__set__ for f in dataclasses.fields(Fact)
)  # fmt: skip


def _checked_fact(values: tuple[Any, ...]) -> Fact:
    """A Fact of ``_FACT_KEYS`` values already checked, its slots set directly: half the
    cost of the frozen dataclass's ``__init__`` (Fact has no ``__post_init__``), which is
    what a cold load of a large document spends most of its time on."""
    fact_id, content, category, confidence, created, updated, source, error = values
    fact: Fact = _new_object(Fact)
    _set_id(fact, fact_id)
    _set_content(fact, content)
    _set_category(fact, category)
    _set_confidence(fact, confidence)
    _set_created(fact, created)
    _set_updated(fact, updated)
    _set_source(fact, source)
    _set_error(fact, error)
    _set_extra(fact, _NO_EXTRA)
    return fact


def _fact_from(data: Any, where: str) -> Fact:
    # The common case, checked in one expression: a fact as memfold writes it (its eight
    # fields, each of its type, nothing else). Anything else takes the checks below,
    # which name what is wrong.
    if type(data) is dict and len(data) == len(_FACT_KEYS):
        try:
            values = _ALL_FACT_FIELDS(data)
        except KeyError:
            pass
        else:
            fact_id, content, category, confidence, created, updated, source, error = values
            if (
                type(fact_id) is str
                and fact_id
                and type(content) is str
                and type(category) is str
                and category
                and type(confidence) is float
                and math.isfinite(confidence)
                and type(created) is str
                and type(updated) is str
                and (source is None or type(source) is str)
                and (error is None or type(error) is str)
            ):
                return _checked_fact(values)
    if not isinstance(data, Mapping):
        raise DocumentError(f"{where}: expected an object, got {type(data).__name__}")
    fact_id = data.get("id")
    if not isinstance(fact_id, str) or not fact_id:
        raise DocumentError(f"{where}.id: expected a non-empty string, got {short_repr(fact_id)}")
    content = data.get("content")
    if not isinstance(content, str):
        raise DocumentError(f"{where}.content: expected a string, got {short_repr(content)}")
    confidence = data.get("confidence", 0.9)
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise DocumentError(f"{where}.confidence: expected a number, got {short_repr(confidence)}")
    if not math.isfinite(confidence):
        raise DocumentError(f"{where}.confidence: expected a finite number, got {confidence!r}")
    extra = {k: v for k, v in data.items() if k not in _FACT_KEYS}
    return Fact(
        id=fact_id,
        content=content,
        category=_str(data, "category", where, "context") or "context",
        confidence=float(confidence),
        created_at=_str(data, "createdAt", where),
        updated_at=_str(data, "updatedAt", where),
        source=_opt_str(data, "source", where),
        source_error=_opt_str(data, "sourceError", where),
        extra=_freeze(extra, where),
    )


def _group_from(
    data: Mapping[str, Any], group: str, sections: tuple[str, ...]
) -> tuple[dict[str, Summary], dict[str, Any]]:
    raw = data.get(group)
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise DocumentError(f"{group}: expected an object, got {type(raw).__name__}")
    found = {name: _summary_from(raw.get(name), f"{group}.{name}") for name in sections}
    unknown = {k: v for k, v in raw.items() if k not in sections}
    return found, unknown


def document_from_dict(data: Any) -> MemoryDocument:
    """Build a document from parsed JSON (memfold's format or the reference v1 format).

    Raises:
        DocumentError: naming the first field that has the wrong shape.
    """
    if not isinstance(data, Mapping):
        raise DocumentError(f"document: expected a JSON object, got {type(data).__name__}")
    for reserved in _RESERVED_KEYS:
        if reserved in data:
            raise DocumentError(f"{reserved}: a reserved key; rename or remove it")
    user, user_extra = _group_from(data, "user", USER_SECTIONS)
    history, history_extra = _group_from(data, "history", HISTORY_SECTIONS)
    raw_facts = data.get("facts")
    if raw_facts is None:
        raw_facts = []
    if not isinstance(raw_facts, list):
        raise DocumentError(f"facts: expected a list, got {type(raw_facts).__name__}")
    facts = tuple(_fact_from(item, f"facts[{i}]") for i, item in enumerate(raw_facts))
    seen: set[str] = set()
    for fact in facts:
        if fact.id in seen:
            raise DocumentError(f"facts: duplicate id {short_repr(fact.id)}")
        seen.add(fact.id)
    raw_marks = data.get("watermarks") or {}
    if not isinstance(raw_marks, Mapping):
        raise DocumentError(f"watermarks: expected an object, got {type(raw_marks).__name__}")
    watermarks: dict[str, Watermark] = {}
    for thread, mark in raw_marks.items():
        if not isinstance(mark, Mapping) or not isinstance(mark.get("messageKey"), str):
            raise DocumentError(f"watermarks.{short_repr(thread)}: expected {{'messageKey': str}}")
        watermarks[str(thread)] = Watermark(
            mark["messageKey"], _str(mark, "updatedAt", f"watermarks.{short_repr(thread)}")
        )
    extra = {k: v for k, v in data.items() if k not in (*_DOC_KEYS, "watermarks")}
    if user_extra:
        extra["__user_extra__"] = user_extra
    if history_extra:
        extra["__history_extra__"] = history_extra
    version = data.get("version", "1.0")
    if isinstance(version, bool) or not isinstance(version, str | int | float):
        raise DocumentError(f"version: expected a string, got {type(version).__name__}")
    return MemoryDocument(
        version=str(version),
        revision=_int(data, "revision", "document"),
        generation=_int(data, "generation", "document"),
        last_updated=_str(data, "lastUpdated", "document"),
        cleared_at=_str(data, "clearedAt", "document"),
        summaries=MappingProxyType({**user, **history}),
        facts=facts,
        watermarks=MappingProxyType(watermarks),
        extra=_freeze(extra),
    )


def _check_str(value: object, where: str, *, optional: bool = False) -> None:
    if isinstance(value, str) or (optional and value is None):
        return
    kind = "a string or null" if optional else "a string"
    raise DocumentError(f"{where}: expected {kind}, got {type(value).__name__}")


def _check_extra(extra: object, where: str, reserved: tuple[str, ...]) -> None:
    """Unknown fields kept as they are: a mapping whose keys cannot overwrite the named
    fields on the way out, nested at most ``MAX_NESTING`` deep (JSON types are checked
    by the serialiser)."""
    if not isinstance(extra, Mapping):
        raise DocumentError(f"{where}: extra fields must be a mapping")
    if not extra:
        return
    for key in extra:
        if key in reserved:
            raise DocumentError(f"{where}.{key}: an extra field may not replace a named field")
    pending: list[tuple[object, int]] = [(value, 1) for value in extra.values()]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, Mapping | list | tuple):
            if depth >= MAX_NESTING:
                raise DocumentError(
                    f"{where}: nested more than {MAX_NESTING} levels deep; flatten the value"
                )
            children = value.values() if isinstance(value, Mapping) else value
            pending.extend((child, depth + 1) for child in children)


def _check_fact(fact: object, where: str) -> None:
    """The field-by-field check of one fact, naming what is wrong."""
    if not isinstance(fact, Fact):
        raise DocumentError(f"{where}: expected a Fact, got {type(fact).__name__}")
    if not isinstance(fact.id, str) or not fact.id:
        raise DocumentError(f"{where}.id: expected a non-empty string, got {short_repr(fact.id)}")
    _check_str(fact.content, f"{where}.content")
    _check_str(fact.category, f"{where}.category")
    confidence: object = fact.confidence
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise DocumentError(f"{where}.confidence: expected a number, got {short_repr(confidence)}")
    if not math.isfinite(confidence):
        raise DocumentError(f"{where}.confidence: expected a finite number, got {confidence!r}")
    _check_str(fact.created_at, f"{where}.createdAt")
    _check_str(fact.updated_at, f"{where}.updatedAt")
    _check_str(fact.source, f"{where}.source", optional=True)
    _check_str(fact.source_error, f"{where}.sourceError", optional=True)
    _check_extra(fact.extra, where, _FACT_KEYS)


def check_document(doc: MemoryDocument) -> None:
    """Check that ``doc`` would load back from its JSON form: every field of the type the
    loader wants, fact ids unique, nothing nested too deeply. Cheap (no JSON round trip);
    values JSON cannot hold at all are left to the serialiser.

    Raises:
        DocumentError: naming the first field that would not load back.
    """
    for name in ("revision", "generation"):
        value = getattr(doc, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise DocumentError(
                f"document.{name}: expected a non-negative integer, got {short_repr(value)}"
            )
    version: object = doc.version
    if isinstance(version, bool) or not isinstance(version, str | int | float):
        raise DocumentError(f"version: expected a string, got {type(version).__name__}")
    _check_str(doc.last_updated, "document.lastUpdated")
    _check_str(doc.cleared_at, "document.clearedAt")
    for section, summary in doc.summaries.items():
        if not isinstance(summary, Summary):
            raise DocumentError(f"{section}: expected a Summary, got {type(summary).__name__}")
        _check_str(summary.summary, f"{section}.summary")
        _check_str(summary.updated_at, f"{section}.updatedAt")
        _check_extra(summary.extra, section, ("summary", "updatedAt"))
    seen: set[str] = set()
    for index, fact in enumerate(doc.facts):
        # the common case in one expression: every field of its type, no extra fields
        if not (
            type(fact) is Fact
            and type(fact.id) is str
            and fact.id
            and type(fact.content) is str
            and type(fact.category) is str
            and type(fact.confidence) is float
            and math.isfinite(fact.confidence)
            and type(fact.created_at) is str
            and type(fact.updated_at) is str
            and (fact.source is None or type(fact.source) is str)
            and (fact.source_error is None or type(fact.source_error) is str)
            and not fact.extra
        ):
            _check_fact(fact, f"facts[{index}]")
        if fact.id in seen:
            raise DocumentError(f"facts: duplicate id {short_repr(fact.id)}")
        seen.add(fact.id)
    for thread, mark in doc.watermarks.items():
        where = f"watermarks.{short_repr(thread)}"
        if not isinstance(thread, str) or not isinstance(mark, Watermark):
            raise DocumentError(f"{where}: expected a thread id and a Watermark")
        _check_str(mark.message_key, f"{where}.messageKey")
        _check_str(mark.updated_at, f"{where}.updatedAt")
    _check_extra(doc.extra, "document", (*_DOC_KEYS, "watermarks"))
    for group in _RESERVED_KEYS:
        if group in doc.extra and not isinstance(doc.extra[group], Mapping):
            raise DocumentError(f"{group}: expected a mapping of extra fields")


def _summary_to(summary: Summary) -> dict[str, Any]:
    return {"summary": summary.summary, "updatedAt": summary.updated_at, **_thaw(summary.extra)}


def _fact_to(fact: Fact) -> dict[str, Any]:
    return {
        "id": fact.id,
        "content": fact.content,
        "category": fact.category,
        "confidence": fact.confidence,
        "createdAt": fact.created_at,
        "updatedAt": fact.updated_at,
        "source": fact.source,
        "sourceError": fact.source_error,
        **_thaw(fact.extra),
    }


def fact_to_dict(fact: Fact) -> dict[str, Any]:
    """The JSON-ready form of one fact, as it appears in a document's ``facts``."""
    return _fact_to(fact)


def document_to_dict(doc: MemoryDocument) -> dict[str, Any]:
    """The JSON-ready form of a document (camelCase, unknown fields restored)."""
    extra = _thaw(doc.extra)
    user_extra = extra.pop("__user_extra__", {})
    history_extra = extra.pop("__history_extra__", {})
    out: dict[str, Any] = {
        "version": doc.version,
        "revision": doc.revision,
        "generation": doc.generation,
        "lastUpdated": doc.last_updated,
        **({"clearedAt": doc.cleared_at} if doc.cleared_at else {}),
        "user": {
            **{name: _summary_to(doc.summaries.get(name, Summary())) for name in USER_SECTIONS},
            **user_extra,
        },
        "history": {
            **{name: _summary_to(doc.summaries.get(name, Summary())) for name in HISTORY_SECTIONS},
            **history_extra,
        },
        "facts": [_fact_to(f) for f in doc.facts],
    }
    if doc.watermarks:
        out["watermarks"] = {
            thread: {"messageKey": mark.message_key, "updatedAt": mark.updated_at}
            for thread, mark in doc.watermarks.items()
        }
    out.update(extra)
    return out
