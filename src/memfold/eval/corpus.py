"""Labelled extraction corpora: one conversation per JSON line, what it should teach, and
what it must not.

A line looks like this (only ``id``, ``messages`` and ``expect`` are required)::

    {"id": "en-cook-01", "lang": "en", "domain": "cooking", "tags": ["short"],
     "messages": [{"role": "user", "content": "I'm allergic to peanuts, what can I use…"},
                  {"role": "assistant", "content": "Sunflower seed butter or tahini…"}],
     "expect":  [{"terms": ["peanut", "allergic|allergy"], "category": "context"}],
     "allowed": [{"terms": ["satay"]}],
     "traps":   [{"terms": ["tahini"]}]}

``messages`` are chat messages (OpenAI shape) holding at least one user and one
assistant message. ``expect`` lists the facts a good memory keeps about the user: a
stored fact matches one when it contains every term (``a|b`` means either). ``traps``
are terms from text that is not a statement by the user about themselves (pasted text,
quotes, code, role-play, sarcasm, third parties, hypotheticals, questions): a stored
fact containing all terms of a trap was invented. ``allowed`` facts may be stored but
are not required. ``tags`` name slices of the report ("short"; "trap" is added for
every conversation with traps). Matching is case-insensitive after NFKC folding; a
Latin term matches at word starts ("peanut" finds "peanuts", "Go" does not find
"Google").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memfold.errors import CorpusError

__all__ = ["Conversation", "Labelled", "load_corpus", "parse_corpus"]

_KEYS = frozenset(
    {"id", "lang", "domain", "tags", "messages", "expect", "allowed", "traps", "note"}
)
_ITEM_KEYS = frozenset({"terms", "category", "note"})
_LANGS = frozenset({"en", "zh", "mixed"})


@dataclass(frozen=True, slots=True)
class Labelled:
    """A labelled item: all ``terms`` (each a tuple of alternatives) must appear."""

    terms: tuple[tuple[str, ...], ...]
    category: str | None = None

    @property
    def label(self) -> str:
        return " + ".join("|".join(alternatives) for alternatives in self.terms)


@dataclass(frozen=True, slots=True)
class Conversation:
    """One labelled conversation of a corpus."""

    id: str
    lang: str
    domain: str
    tags: tuple[str, ...]
    messages: tuple[Mapping[str, Any], ...]
    expect: tuple[Labelled, ...]
    allowed: tuple[Labelled, ...]
    traps: tuple[Labelled, ...]

    @property
    def has_traps(self) -> bool:
        return bool(self.traps)


def load_corpus(path: str | Path) -> tuple[Conversation, ...]:
    """Read a corpus file (JSON lines, UTF-8).

    Raises:
        CorpusError: the file cannot be read or a line is not a valid conversation; the
            message names the line and what to fix.
    """
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CorpusError(name, None, f"cannot be read ({e}); check the path") from e
    return parse_corpus(text.splitlines(), name)


def parse_corpus(lines: Iterable[str], name: str = "<corpus>") -> tuple[Conversation, ...]:
    """Conversations from JSON lines; blank lines and lines starting with ``//`` are skipped.

    Raises:
        CorpusError: a line is not valid JSON or not a valid conversation, or an id repeats.
    """
    conversations: list[Conversation] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            raise CorpusError(name, number, f"not valid JSON ({e.msg}, column {e.colno})") from e
        conversation = _conversation(data, name, number)
        if conversation.id in seen:
            raise CorpusError(
                name,
                number,
                f"id {conversation.id!r} is already used on line {seen[conversation.id]}",
            )
        seen[conversation.id] = number
        conversations.append(conversation)
    if not conversations:
        raise CorpusError(name, None, "holds no conversation; one JSON object per line")
    return tuple(conversations)


def _conversation(data: Any, name: str, number: int) -> Conversation:
    def fail(problem: str) -> CorpusError:
        return CorpusError(name, number, problem)

    if not isinstance(data, dict):
        raise fail("each line must be a JSON object with 'id', 'messages' and 'expect'")
    unknown = set(data) - _KEYS
    if unknown:
        raise fail(f"unknown keys {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    conv_id = data.get("id")
    if not isinstance(conv_id, str) or not conv_id.strip():
        raise fail("'id' is required and must be a non-empty string")
    lang = data.get("lang", "en")
    if lang not in _LANGS:
        raise fail(f"'lang' is {lang!r}; use one of {sorted(_LANGS)}")
    domain = data.get("domain", "")
    if not isinstance(domain, str):
        raise fail("'domain' must be a string")
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise fail("'tags' must be a list of strings")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise fail("'messages' is required: a non-empty list of {role, content} objects")
    for index, message in enumerate(messages):
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("role"), str)
            or not isinstance(message.get("content"), str | list)
        ):
            raise fail(f"messages[{index}] must be an object with a 'role' and a 'content'")
    roles = {m["role"] for m in messages}
    if not {"user", "assistant"} <= roles:
        raise fail(
            "'messages' needs a user and an assistant message: memfold learns from exchanges"
        )
    if "expect" not in data:
        raise fail("'expect' is required (use [] for a conversation that teaches nothing)")
    return Conversation(
        id=conv_id,
        lang=lang,
        domain=domain,
        tags=tuple(tags),
        messages=tuple(messages),
        expect=_items(data["expect"], "expect", fail, need_category=True),
        allowed=_items(data.get("allowed", []), "allowed", fail, need_category=False),
        traps=_items(data.get("traps", []), "traps", fail, need_category=False),
    )


def _items(raw: Any, key: str, fail: Any, *, need_category: bool) -> tuple[Labelled, ...]:
    if not isinstance(raw, list):
        raise fail(f"'{key}' must be a list of {{terms, category}} objects")
    items: list[Labelled] = []
    for index, item in enumerate(raw):
        where = f"{key}[{index}]"
        if not isinstance(item, dict) or set(item) - _ITEM_KEYS:
            raise fail(f"{where} must be an object with 'terms' (and 'category')")
        terms = item.get("terms")
        if (
            not isinstance(terms, list)
            or not terms
            or not all(isinstance(t, str) and t.strip() for t in terms)
        ):
            raise fail(f"{where}: 'terms' must be a non-empty list of non-empty strings")
        alternatives = [_alternatives(t) for t in terms]
        if not all(alternatives):
            raise fail(f"{where}: a term holds nothing but '|'; write 'a|b' for either a or b")
        category = item.get("category")
        if need_category and (not isinstance(category, str) or not category.strip()):
            raise fail(f"{where}: 'category' is required (preference, context, goal, …)")
        if category is not None and not isinstance(category, str):
            raise fail(f"{where}: 'category' must be a string")
        items.append(
            Labelled(
                terms=tuple(alternatives),
                category=category.strip().lower() if isinstance(category, str) else None,
            )
        )
    return tuple(items)


def _alternatives(term: str) -> tuple[str, ...]:
    return tuple(a.strip() for a in term.split("|") if a.strip())
