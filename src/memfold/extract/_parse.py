"""Tolerant parsing of an extraction reply into a :class:`ChangeSet`.

The reply is the first JSON object whose top-level keys ``user``, ``history``,
``newFacts``, ``factsToRemove`` (at least one) have the right types, wherever it sits:
after a ``<think>`` trace, inside ``` fences, between prose (after a decoy such as
``Example: {"user": "alice"}``), or as a JSON string holding the object. Within it, each
invalid item is dropped on its own (and listed in ``ChangeSet.dropped``) and the rest is
kept. Removals are allowed only when no fact or removal was dropped and each had the right
types, because a half-understood reply must not delete memory; a slip in a summary section
(``"recentMonths": []``) drops that section only. A reply whose every item was invalid is
an empty change set, not an error: the model answered, and asking again would not help.

What small local models get wrong in the syntax is accepted only where the meaning stays
unambiguous: trailing commas and ``//`` or ``/* */`` comments outside strings are skipped
(and do not count against removals), and raw newlines or tabs inside strings (which
grammar-constrained output holds) are read as text. Single-quoted strings, Python literals
(``True``, ``None``), unquoted keys and truncated objects are not repaired: the reply is
unusable.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from typing import Any

from memfold.errors import ExtractionError
from memfold.extract.base import (
    ChangeSet,
    Durability,
    FactRemoval,
    ItemScope,
    NewFact,
    SummaryUpdate,
)
from memfold.llm.base import flatten_content
from memfold.model import HISTORY_SECTIONS, USER_SECTIONS

__all__ = ["REPLY_KEYS", "normalise_confidence", "parse_reply"]

log = logging.getLogger("memfold.extract")

#: A JSON object in the reply counts as the answer when it has at least one of these.
REPLY_KEYS: tuple[str, ...] = ("user", "history", "newFacts", "factsToRemove")

_THINKING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
# A trace whose opening tag the server swallowed (some chat templates put it in the prompt).
_THINKING_END = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
# Only a reply showing one of these is worth the slower lenient reading.
_REPAIRABLE = re.compile(r",\s*[}\]]|//|/\*")
_SCOPES: dict[str, ItemScope] = {"user": "user", "task": "task"}
_DURABILITIES: dict[str, Durability] = {"durable": "durable", "temporary": "temporary"}
_REF = re.compile(r"f?(\d+)", re.IGNORECASE)


def normalise_confidence(value: object) -> float | None:
    """A confidence in [0, 1], or None when the value is unusable.

    [0, 1] as is; a whole number from 2 to 100 is a percentage; anything else above 1 is
    clamped to 1; a numeric string (``"0.8"``, ``"95%"``) is parsed the same way;
    negative, NaN, booleans and non-numbers give None.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        percent = text.endswith("%")
        try:
            number = float(text.rstrip("%").strip())
        except ValueError:
            return None
        if percent:
            number /= 100
            if number > 1:  # "150%": too sure, not a 0-100 scale
                number = 1.0
    elif isinstance(value, int | float):
        number = float(value)
    else:
        return None
    if math.isnan(number) or number < 0:
        return None
    if number <= 1:
        return number
    if number <= 100 and number.is_integer():
        return number / 100
    return 1.0


def _lenient_object(text: str, start: int) -> Any:
    """The object at ``text[start]`` read with trailing commas and comments outside
    strings skipped, or None when it still is not JSON (or never closes)."""
    out: list[str] = []
    depth = 0
    i, n = start, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
            continue
        if text.startswith("//", i):
            newline = text.find("\n", i)
            i = n if newline == -1 else newline
            continue
        if text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close == -1:
                return None
            i = close + 2
            continue
        if char in "}]" and out:
            # Drop a comma left dangling before this closing bracket.
            last = len(out) - 1
            while last >= 0 and out[last].isspace():
                last -= 1
            if last >= 0 and out[last] == ",":
                del out[last]
        out.append(char)
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                break
        i += 1
    else:
        return None
    try:
        return json.loads("".join(out), strict=False)
    except ValueError:
        return None


_REPLY_TYPES: dict[str, type] = {
    "user": dict,
    "history": dict,
    "newFacts": list,
    "factsToRemove": list,
}


def _well_typed(value: dict[str, Any]) -> bool:
    """Every reply key present holds the right kind of value (null counts as absent)."""
    return all(
        value[key] is None or isinstance(value[key], kind)
        for key, kind in _REPLY_TYPES.items()
        if key in value
    )


def _find_object(text: str) -> dict[str, Any] | None:
    text = _THINKING.sub(" ", text)
    ends = list(_THINKING_END.finditer(text))
    if ends:
        text = text[ends[-1].end() :]
    stripped = text.strip()
    if stripped.startswith('"'):
        # The whole reply is a JSON string that holds the object (double-encoded).
        try:
            inner = json.loads(stripped, strict=False)
        except ValueError:
            inner = None
        if isinstance(inner, str):
            return _find_object(inner)
    decoder = json.JSONDecoder(strict=False)  # grammar output has raw newlines in strings
    repairable = _REPAIRABLE.search(text) is not None
    first: dict[str, Any] | None = None
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = _lenient_object(text, start) if repairable else None
        if isinstance(value, dict) and any(key in value for key in REPLY_KEYS):
            if _well_typed(value):
                return value
            first = first or value  # its problems are reported if nothing better follows
        start = text.find("{", start + 1)
    return first


#: How many cut points a truncated reply is tried at, last first.
_SALVAGE_TRIES = 64


def _salvage(text: str) -> dict[str, Any] | None:
    """The complete items of a reply the model stopped writing midway (it ran out of output
    tokens): the last unclosed object, up to its last closed object or list, with its open
    brackets closed. Anything cut inside an item is left out."""
    text = _THINKING.sub(" ", text)
    start = -1
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (end, closers) after each closed inner object or list
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif not stack:
            if char == "{":  # a new candidate; what came before was prose or closed
                start, cuts = i, []
                stack.append("}")
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            if stack.pop() != char:
                return None
            if stack:
                cuts.append((i + 1, "".join(reversed(stack))))
            else:
                start, cuts = -1, []  # it closed after all: not the truncated reply
    if start == -1:
        return None
    decoder = json.JSONDecoder(strict=False)
    for end, closers in reversed(cuts[-_SALVAGE_TRIES:]):
        try:
            value = decoder.decode(text[start:end] + closers)
        except ValueError:
            continue
        if isinstance(value, dict) and any(key in value for key in REPLY_KEYS):
            return value
    return None


class _Problems:
    """Collects what was dropped or mistyped. A problem in a fact or a removal forbids
    removals; one in a summary section (``soft``) drops only that section."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.blocking = False

    def add(self, what: str, *, soft: bool = False) -> None:
        self.items.append(what)
        self.blocking = self.blocking or not soft

    def __bool__(self) -> bool:
        return bool(self.items)


def _label(
    item: Mapping[str, Any],
    key: str,
    allowed: Mapping[str, Any],
    where: str,
    problems: _Problems,
    *,
    soft: bool = False,
) -> tuple[bool, Any]:
    """(ok, value): a missing label is None (apply rejects it), an unknown one is invalid."""
    raw = item.get(key)
    if raw is None:
        return True, None
    if isinstance(raw, str) and raw.strip().lower() in allowed:
        return True, allowed[raw.strip().lower()]
    problems.add(f"{where}.{key}={raw!r} is not one of {', '.join(allowed)}", soft=soft)
    return False, None


def _summaries(data: Mapping[str, Any], problems: _Problems) -> list[SummaryUpdate]:
    out: list[SummaryUpdate] = []
    for group, sections in (("user", USER_SECTIONS), ("history", HISTORY_SECTIONS)):
        raw_group = data.get(group)
        if raw_group is None:
            continue
        if not isinstance(raw_group, Mapping):
            problems.add(f"{group} is {type(raw_group).__name__}, not an object", soft=True)
            continue
        for name in sections:
            item = raw_group.get(name)
            where = f"{group}.{name}"
            if item is None:
                continue
            if not isinstance(item, Mapping):
                problems.add(f"{where} is {type(item).__name__}, not an object", soft=True)
                continue
            should = item.get("shouldUpdate", "summary" in item)
            if not isinstance(should, bool):
                problems.add(f"{where}.shouldUpdate={should!r} is not true/false", soft=True)
                continue
            if not should:
                continue
            summary = item.get("summary")
            if not isinstance(summary, str) or not summary.strip():
                problems.add(f"{where}.summary is missing or empty", soft=True)
                continue
            ok_scope, scope = _label(item, "scope", _SCOPES, where, problems, soft=True)
            ok_dur, durability = _label(
                item, "durability", _DURABILITIES, where, problems, soft=True
            )
            if ok_scope and ok_dur:
                out.append(SummaryUpdate(name, summary.strip(), scope, durability))
    return out


def _new_fact(item: Any, where: str, problems: _Problems) -> NewFact | None:
    if not isinstance(item, Mapping):
        problems.add(f"{where} is {type(item).__name__}, not an object")
        return None
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        problems.add(f"{where}.content is missing or not text")
        return None
    category = item.get("category", "context")
    if not isinstance(category, str) or not category.strip():
        problems.add(f"{where}.category={category!r} is not a name")
        return None
    confidence = normalise_confidence(item.get("confidence"))
    if confidence is None:
        problems.add(f"{where}.confidence={item.get('confidence')!r} is not usable")
        return None
    source_error = item.get("sourceError")
    if source_error is not None and not isinstance(source_error, str):
        problems.add(f"{where}.sourceError is {type(source_error).__name__}, not text")
        source_error = None
    ok_scope, scope = _label(item, "scope", _SCOPES, where, problems)
    ok_dur, durability = _label(item, "durability", _DURABILITIES, where, problems)
    if not (ok_scope and ok_dur):
        return None
    category = category.strip().lower()
    if category != "correction":
        source_error = None  # what the assistant got wrong belongs to corrections only
    return NewFact(
        content=content.strip(),
        category=category,
        confidence=confidence,
        source_error=(source_error or "").strip() or None,
        scope=scope,
        durability=durability,
    )


def _resolve_ref(raw: object, refs: Mapping[str, str]) -> str | None:
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = f"f{raw}"
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    match = _REF.fullmatch(text)
    if match:
        return refs.get(f"f{int(match.group(1))}")
    return text if text in refs.values() else None


def parse_reply(
    text: str | list[Any], *, refs: Mapping[str, str], truncated: bool = False
) -> ChangeSet:
    """Parse a model's extraction reply (a string or a list of content blocks).

    ``refs`` maps the prompt's fact refs (``f1``...) to real fact ids; removals of unknown
    refs are ignored, ``replacedBy`` is re-indexed to the kept new facts. ``truncated``
    says the model stopped at its output-token limit: an unclosed reply then keeps its
    complete items (and may remove nothing).

    Raises:
        ExtractionError: no JSON object with a reply key was found (carries the truncated
            raw text). A reply whose items are all invalid is an empty change set.
    """
    raw = flatten_content(text)
    data = _find_object(raw)
    problems = _Problems()
    if truncated and (data is None or not _well_typed(data)):
        salvaged = _salvage(raw)
        if salvaged is not None and (data is None or _well_typed(salvaged)):
            data = salvaged
            problems.add("the reply was cut at the output-token limit; kept its complete items")
    if data is None:
        what = "an empty reply" if not raw.strip() else f"a {len(raw)}-char reply"
        raise ExtractionError(
            f"no JSON object with any of {', '.join(REPLY_KEYS)} in {what}; "
            "the model did not follow the output format",
            raw=raw,
        )
    summaries = _summaries(data, problems)

    new_facts: list[NewFact] = []
    kept_index: dict[int, int] = {}
    raw_facts = data.get("newFacts", [])
    if raw_facts is None:
        raw_facts = []
    if not isinstance(raw_facts, list):
        problems.add(f"newFacts is {type(raw_facts).__name__}, not a list")
        raw_facts = []
    for index, item in enumerate(raw_facts):
        fact = _new_fact(item, f"newFacts[{index}]", problems)
        if fact is not None:
            kept_index[index] = len(new_facts)
            new_facts.append(fact)

    removals: list[FactRemoval] = []
    raw_removals = data.get("factsToRemove", [])
    if raw_removals is None:
        raw_removals = []
    if not isinstance(raw_removals, list):
        problems.add(f"factsToRemove is {type(raw_removals).__name__}, not a list")
        raw_removals = []
    seen: set[str] = set()
    for index, item in enumerate(raw_removals):
        where = f"factsToRemove[{index}]"
        if not isinstance(item, Mapping):
            problems.add(f"{where} is {type(item).__name__}, not an object")
            continue
        fact_id = _resolve_ref(item.get("ref"), refs)
        if fact_id is None:
            problems.add(f"{where}.ref={item.get('ref')!r} names no listed fact", soft=True)
            continue
        if fact_id in seen:
            continue
        seen.add(fact_id)
        reason = item.get("reason")
        if reason is not None and not isinstance(reason, str):
            problems.add(f"{where}.reason is {type(reason).__name__}, not text")
            reason = None
        replaced = item.get("replacedBy")
        replaced_by: int | None = None
        if isinstance(replaced, int) and not isinstance(replaced, bool):
            replaced_by = kept_index.get(replaced)
            if replaced_by is None:
                problems.add(f"{where}.replacedBy={replaced} names no kept new fact")
        elif replaced is not None:
            problems.add(f"{where}.replacedBy={replaced!r} is not an index")
        removals.append(FactRemoval(fact_id, (reason or "").strip(), replaced_by))

    if problems:
        log.warning(
            "extraction reply: dropped or mistyped %d item(s)%s: %s",
            len(problems.items),
            ", removals disabled" if problems.blocking else "",
            "; ".join(problems.items[:5]),
        )
    return ChangeSet(
        summaries=tuple(summaries),
        new_facts=tuple(new_facts),
        removals=tuple(removals),
        removals_allowed=not problems.blocking,
        dropped=tuple(problems.items),
    )
