"""Reading a document to import: recognise it, and (leniently) repair what is broken.

Pure: parsed JSON in, a :class:`~memfold.model.MemoryDocument` and a report out. memfold
imports its own export and DeerFlow's v1 ``memory.json`` (the reference system); a
document with none of their keys is refused, never taken for an empty memory. Strictly,
one bad item refuses the whole document and names it; ``lenient=True`` drops or repairs
bad items instead and lists every change, so a file with one broken fact still imports.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from memfold._facts import dedup_key, unique_id
from memfold.model import (
    HISTORY_SECTIONS,
    USER_SECTIONS,
    DocumentError,
    MemoryDocument,
    Summary,
    document_from_dict,
)

__all__ = ["IMPORT_KEYS", "ImportCheck", "check_import", "merge_into"]

#: A document must have at least one of these to be imported.
IMPORT_KEYS = ("user", "history", "facts")
#: Confidence given to a fact whose confidence is missing or not a number (lenient).
REPAIRED_CONFIDENCE = 0.5
_KNOWN = "a memfold export or a DeerFlow v1 memory.json (keys user, history, facts)"
_LENIENT_HINT = "import leniently (lenient=True, `memfold import --lenient`) to drop or repair it"
#: snake_case fact keys some DeerFlow versions write, and memfold's names for them.
_SNAKE_KEYS = {"created_at": "createdAt", "updated_at": "updatedAt", "source_thread_id": "source"}


@dataclass(frozen=True, slots=True)
class ImportCheck:
    """A document ready to import: its ``format`` (``memfold`` or ``deerflow-v1``) and, in
    lenient mode, one line per item that was dropped or repaired."""

    document: MemoryDocument
    format: str
    repairs: tuple[str, ...] = ()


def check_import(data: Any, *, lenient: bool = False) -> ImportCheck:
    """Recognise ``data`` and build the document it holds.

    Raises:
        DocumentError: ``data`` is not a document memfold knows, or (strictly) an item in
            it is invalid; the message names it and the way out.
    """
    if not isinstance(data, Mapping):
        hint = (
            "; memfold imports one scope's document, not a list" if isinstance(data, list) else ""
        )
        raise DocumentError(f"expected {_KNOWN}, got a JSON {_json_type(data)}{hint}")
    if not any(key in data for key in IMPORT_KEYS):
        found = ", ".join(sorted(map(str, data))[:8]) or "none"
        raise DocumentError(
            f"not a memory document memfold knows: expected {_KNOWN}; found keys: {found}"
        )
    form = "memfold" if "revision" in data or "generation" in data else "deerflow-v1"
    repairs: list[str] = []
    prepared = _with_memfold_keys(data)
    if lenient:
        prepared = _repair(prepared, repairs)
    try:
        document = document_from_dict(prepared)
    except DocumentError as exc:
        raise DocumentError(f"{exc}; {_LENIENT_HINT}") from exc
    except RecursionError:
        raise DocumentError("the document is nested too deeply to be a memory document") from None
    for index, fact in enumerate(document.facts):
        if not 0.0 <= fact.confidence <= 1.0:
            raise DocumentError(
                f"facts[{index}].confidence={fact.confidence!r}: must be between 0 and 1; "
                + _LENIENT_HINT
            )
    return ImportCheck(document, form, tuple(repairs))


def merge_into(current: MemoryDocument, incoming: MemoryDocument) -> tuple[MemoryDocument, int]:
    """``current`` plus the facts of ``incoming`` it does not hold (same content in
    ``dedup_key`` form), and ``incoming``'s summaries for sections ``current`` leaves empty.
    A fact whose id is taken gets a fresh one. Returns the document and how many facts
    were added."""
    held = {dedup_key(fact.content) for fact in current.facts}
    taken = {fact.id for fact in current.facts}
    added = []
    for fact in incoming.facts:
        key = dedup_key(fact.content)
        if key in held:
            continue
        held.add(key)
        fresh = replace(fact, id=unique_id(taken, None)) if fact.id in taken else fact
        taken.add(fresh.id)
        added.append(fresh)
    summaries: dict[str, Summary] = dict(current.summaries)
    for section, summary in incoming.summaries.items():
        if summary.summary.strip() and not current.summary(section).strip():
            summaries[section] = summary
    merged = current.with_changes(facts=(*current.facts, *added), summaries=summaries)
    return merged, len(added)


def _a_json(value: object) -> str:
    """``an array``, ``a string``, ``a number``… for messages."""
    kind = _json_type(value)
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _json_type(value: object) -> str:
    names = {list: "array", dict: "object", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number" if isinstance(value, int | float) else "value")


def _with_memfold_keys(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Fact keys in snake_case (``created_at``, ``source_thread_id``) renamed to memfold's."""
    facts = data.get("facts")
    if not isinstance(facts, list) or not any(
        isinstance(f, Mapping) and any(k in f for k in _SNAKE_KEYS) for f in facts
    ):
        return data
    return {**data, "facts": [_renamed(fact) for fact in facts]}


def _renamed(fact: object) -> object:
    if not isinstance(fact, Mapping):
        return fact
    out: dict[str, Any] = {}
    for key, value in fact.items():
        target = _SNAKE_KEYS.get(key)
        # a camelCase key already present wins; the snake_case one is then kept as extra
        out[target if target is not None and target not in fact else key] = value
    return out


def _repair(data: Mapping[str, Any], repairs: list[str]) -> dict[str, Any]:
    """A copy of ``data`` in which every bad item is dropped or repaired (noted in
    ``repairs``)."""
    try:
        out: dict[str, Any] = copy.deepcopy(dict(data))
    except RecursionError:
        raise DocumentError("the document is nested too deeply to be a memory document") from None
    for key in ("revision", "generation"):
        value = out.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            repairs.append(f"{key}={value!r}: not a count; ignored")
            out.pop(key)
    if not isinstance(out.get("lastUpdated", ""), str | None):
        repairs.append(f"lastUpdated={out['lastUpdated']!r}: not a string; ignored")
        out.pop("lastUpdated")
    for group, sections in (("user", USER_SECTIONS), ("history", HISTORY_SECTIONS)):
        _repair_group(out, group, sections, repairs)
    out["facts"] = _repair_facts(out.get("facts"), repairs)
    marks = out.get("watermarks")
    if marks is not None and not _valid_watermarks(marks):
        repairs.append("watermarks: unreadable; dropped (the next update re-reads every thread)")
        out.pop("watermarks")
    return out


def _repair_group(
    out: dict[str, Any], group: str, sections: tuple[str, ...], repairs: list[str]
) -> None:
    raw = out.get(group)
    if raw is None:
        return
    if not isinstance(raw, dict):
        repairs.append(f"{group}: expected an object, got {_a_json(raw)}; dropped")
        out.pop(group)
        return
    for section in sections:
        if section not in raw or raw[section] is None:
            continue
        value = raw[section]
        where = f"{group}.{section}"
        if isinstance(value, str):
            raw[section] = {"summary": value}
            repairs.append(f"{where}: a bare string; read as its summary")
            continue
        if not isinstance(value, dict):
            repairs.append(f"{where}: expected an object, got {_a_json(value)}; dropped")
            raw.pop(section)
            continue
        text = value.get("summary")
        if text is not None and not isinstance(text, str):
            if isinstance(text, int | float) and not isinstance(text, bool):
                value["summary"] = str(text)
                repairs.append(f"{where}.summary={text!r}: a number; stored as text")
            else:
                value["summary"] = ""
                repairs.append(f"{where}.summary: {_a_json(text)}, not text; emptied")
        if not isinstance(value.get("updatedAt", ""), str | None):
            value.pop("updatedAt")
            repairs.append(f"{where}.updatedAt: not a string; dropped")


def _repair_facts(raw: object, repairs: list[str]) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        repairs.append(f"facts: expected a list, got {_a_json(raw)}; dropped")
        return []
    kept: list[dict[str, Any]] = []
    taken: set[str] = set()
    for index, item in enumerate(raw):
        where = f"facts[{index}]"
        if not isinstance(item, dict):
            repairs.append(f"{where}: expected an object, got {_a_json(item)}; dropped")
            continue
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            repairs.append(
                f"{where} (id {item.get('id')!r}): no text content ({content!r}); dropped"
            )
            continue
        label = f"{where} ({content[:40]!r})"
        fact_id = item.get("id")
        if not isinstance(fact_id, str) or not fact_id or fact_id in taken:
            new_id = unique_id(taken, None)
            repairs.append(f"{label}: id {fact_id!r} missing or repeated; given {new_id}")
            item["id"] = fact_id = new_id
        taken.add(fact_id)
        _repair_confidence(item, label, repairs)
        for key in ("category", "createdAt", "updatedAt", "source", "sourceError"):
            if item.get(key) is not None and not isinstance(item[key], str):
                repairs.append(f"{label}.{key}={item[key]!r}: not a string; dropped")
                item.pop(key)
        kept.append(item)
    return kept


def _repair_confidence(item: dict[str, Any], label: str, repairs: list[str]) -> None:
    value = item.get("confidence", REPAIRED_CONFIDENCE)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        item["confidence"] = REPAIRED_CONFIDENCE
        repairs.append(f"{label}.confidence={value!r}: not a number; set to {REPAIRED_CONFIDENCE}")
    elif not 0.0 <= value <= 1.0:
        item["confidence"] = min(1.0, max(0.0, float(value)))
        repairs.append(
            f"{label}.confidence={value!r}: out of range; clamped to {item['confidence']}"
        )


def _valid_watermarks(marks: object) -> bool:
    return isinstance(marks, dict) and all(
        isinstance(m, dict) and isinstance(m.get("messageKey"), str)
        and isinstance(m.get("updatedAt", ""), str | None)
        for m in marks.values()
    )  # fmt: skip
