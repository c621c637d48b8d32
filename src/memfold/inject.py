"""Render a memory document into the ``<user_memory>`` block of a system prompt.

``render`` is pure: the same document, budget, counter and date give the same string.
The block, wrapper included, never exceeds ``max_tokens`` by the given counter: it is
planned line by line and then the finished string is counted as a whole (REFERENCE.md,
defect 8). Memory text is escaped and flattened to one line per item, so a fact can
neither close the block nor forge a line of its own (defect 12).

Budget order: the wrapper, then guaranteed facts (``correction`` by default) from their
own budget, then the other facts by confidence; the six summaries get what is left and
only they are ever cut short, at a word boundary. When a small block cannot hold every
guaranteed fact, their ``(avoid: …)`` parts go first, and nothing else is shown. Given a
``relevance`` order (fact ids, most relevant to the user's message first, from
``memfold.search``), the facts it names come before the others, which keep their
confidence order.
"""

from __future__ import annotations

import datetime
import functools
import operator
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memfold.context_report import FactDecision, RenderPlan, SummaryDecision
from memfold.forgetting import held_out
from memfold.model import Fact, MemoryDocument, Scope
from memfold.redact import cached_scrub, redact_document
from memfold.tokens import TokenCounter, get_counter, valid_unicode

if TYPE_CHECKING:
    from memfold.config import MemoryConfig

__all__ = [
    "CLOSE_TAG",
    "OPEN_TAG",
    "SECTION_LABELS",
    "ContextRenderer",
    "FactDecision",
    "RenderPlan",
    "SummaryDecision",
    "escape",
    "plan",
    "render",
]

OPEN_TAG = "<user_memory>"
CLOSE_TAG = "</user_memory>"
_ELLIPSIS = "…"

Count = Callable[[str], int]
Truncate = Callable[[str, int], str]

_GROUPS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "User context:\n",
        (("workContext", "Work"), ("personalContext", "Personal"), ("topOfMind", "Current focus")),
    ),
    (
        "History:\n",
        (
            ("recentMonths", "Recent months"),
            ("earlierContext", "Earlier context"),
            ("longTermBackground", "Long-term background"),
        ),
    ),
)
#: The label each summary section has in the block (``workContext`` → ``Work``).
SECTION_LABELS: dict[str, str] = {key: label for _, group in _GROUPS for key, label in group}
_FACTS_HEADER = "Facts:\n"
_PARTIAL_ENTITY = re.compile(r"&[a-z]*$")
_ENTITY_END = re.compile(r"&[a-z]+;$")


def escape(text: str) -> str:
    """Flatten whitespace to single spaces and escape ``&``, ``<`` and ``>``.

    One line per item keeps a fact from forging extra lines; the escapes keep it from
    closing the block. Flattening also makes every line start and end with a visible
    character, which is what lets line counts add up exactly (see ``_plan``). Lone
    surrogates become U+FFFD so the block always encodes to UTF-8.
    """
    flat = valid_unicode(" ".join(text.split()))
    return flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@functools.lru_cache(maxsize=8192)
def _fact_line(content: str, category: str, confidence: float, source_error: str | None) -> str:
    """``- [category | 0.90] content`` plus ``(avoid: …)`` for a correction; "" if empty."""
    text = escape(content)
    if not text:
        return ""
    label = escape(category) or "context"
    line = f"- [{label} | {confidence:.2f}] {text}"
    avoid = escape(source_error) if source_error and category.lower() == "correction" else ""
    if avoid:
        line += f" (avoid: {avoid})"
    return line + "\n"


def _by_priority(facts: Sequence[Fact]) -> list[Fact]:
    """Confidence descending, ties newest ``createdAt`` first (sorts are stable)."""
    newest_first = sorted(facts, key=operator.attrgetter("created_at"), reverse=True)
    return sorted(newest_first, key=operator.attrgetter("confidence"), reverse=True)


def _ordered(facts: Sequence[Fact], relevance: Sequence[str]) -> list[Fact]:
    """Facts named in ``relevance`` first, in its order; then the rest by priority."""
    by_priority = _by_priority(facts)
    if not relevance:
        return by_priority
    rank: dict[str, int] = {}
    for position, fact_id in enumerate(relevance):
        rank.setdefault(fact_id, position)
    first = sorted((f for f in by_priority if f.id in rank), key=lambda f: rank[f.id])
    return first + [f for f in by_priority if f.id not in rank]


def _char_truncate(count: Count) -> Truncate:
    """Token truncation for a plain counting callable: the longest character prefix that
    counts at most ``limit`` (binary search; assumes longer prefixes never count less)."""

    def truncate(text: str, limit: int) -> str:
        if count(text) <= limit:
            return text
        low, high = 0, len(text)
        while low < high:
            mid = (low + high + 1) // 2
            if count(text[:mid]) <= limit:
                low = mid
            else:
                high = mid - 1
        return text[:low]

    return truncate


def _tools(counter: Count | TokenCounter) -> tuple[Count, Truncate]:
    if isinstance(counter, TokenCounter):
        return counter.count, counter.truncate
    return counter, _char_truncate(counter)


@dataclass(frozen=True, slots=True)
class _Settings:
    guaranteed: frozenset[str]
    guaranteed_budget: int
    relevance: tuple[str, ...] = ()


@dataclass(slots=True)
class _FactPicker:
    """Facts in priority order and which of them are taken so far. ``short`` holds, for a
    guaranteed fact with an ``(avoid: …)`` part, its line without it (else None)."""

    facts: list[Fact]
    guaranteed: list[bool]
    lines: list[str]
    costs: list[int]
    taken: list[bool]
    empty: list[Fact]
    pool_full: list[bool]
    from_pool: list[bool]
    short: list[tuple[str, int] | None]
    used: int = 0

    @classmethod
    def of(cls, facts: Sequence[Fact], settings: _Settings, count: Count) -> _FactPicker:
        guaranteed = settings.guaranteed
        kept: list[Fact] = []
        flags: list[bool] = []
        lines: list[str] = []
        empty: list[Fact] = []
        short: list[tuple[str, int] | None] = []
        for fact in _ordered(facts, settings.relevance):
            line = _fact_line(fact.content, fact.category, fact.confidence, fact.source_error)
            if line:
                flag = fact.category.lower() in guaranteed
                kept.append(fact)
                flags.append(flag)
                lines.append(line)
                bare = _fact_line(fact.content, fact.category, fact.confidence, None)
                short.append((bare, count(bare)) if flag and bare != line else None)
            else:
                empty.append(fact)
        none = [False] * len(lines)
        return cls(
            kept, flags, lines, [count(line) for line in lines], list(none), empty,
            list(none), list(none), short,
        )  # fmt: skip

    def take(self, limit: int, *, guaranteed_only: bool) -> None:
        """Take facts by priority while ``used`` stays within ``limit``; a fact that does
        not fit is skipped, so a later, shorter one may still be taken."""
        for index, cost in enumerate(self.costs):
            if self.taken[index] or (guaranteed_only and not self.guaranteed[index]):
                continue
            if self.used + cost <= limit:
                self.taken[index] = True
                self.from_pool[index] = guaranteed_only
                self.used += cost
            elif guaranteed_only:
                self.pool_full[index] = True

    def take_guaranteed(self, limit: int) -> None:
        """Take the guaranteed facts within ``limit``. When they do not all fit whole,
        showing more of them wins over their ``(avoid: …)`` parts: take them without it,
        then give back the parts that still fit, in priority order."""
        self.take(limit, guaranteed_only=True)
        wanted = [i for i, flag in enumerate(self.guaranteed) if flag]
        if self.all_guaranteed_taken() or not any(self.short[i] for i in wanted):
            return
        full = {i: (self.lines[i], self.costs[i]) for i in wanted if self.short[i] is not None}
        for index in wanted:
            if self.taken[index]:
                self.taken[index] = self.from_pool[index] = False
                self.used -= self.costs[index]
            self.pool_full[index] = False
            short = self.short[index]
            if short is not None:
                self.lines[index], self.costs[index] = short
        self.take(limit, guaranteed_only=True)
        for index, (line, cost) in full.items():
            if self.taken[index] and self.used - self.costs[index] + cost <= limit:
                self.used += cost - self.costs[index]
                self.lines[index], self.costs[index] = line, cost

    def all_guaranteed_taken(self) -> bool:
        return all(taken for flag, taken in zip(self.guaranteed, self.taken, strict=True) if flag)

    def rendered(self) -> list[str]:
        """The facts section, guaranteed facts first, or [] when nothing was taken."""
        if not any(self.taken):
            return []
        picked = list(zip(self.guaranteed, self.lines, self.taken, strict=True))
        first = [line for g, line, t in picked if t and g]
        rest = [line for g, line, t in picked if t and not g]
        return [_FACTS_HEADER, *first, *rest]

    def decisions(self) -> tuple[FactDecision, ...]:
        out: list[FactDecision] = []
        for index, fact in enumerate(self.facts):
            taken = self.taken[index]
            if taken:
                reason = "guaranteed" if self.from_pool[index] else "fits"
            else:
                reason = "guaranteed_pool_full" if self.pool_full[index] else "budget"
            out.append(FactDecision(fact, taken, reason, self.costs[index], self.guaranteed[index]))
        out.extend(FactDecision(fact, False, "empty", 0, False) for fact in self.empty)
        return tuple(out)


def _spaced(char: str) -> bool:
    """A letter or digit of a script that separates words with spaces (not CJK)."""
    return char.isalnum() and unicodedata.east_asian_width(char) not in ("W", "F")


def _word_cut(text: str, cut: str) -> str:
    """``cut`` (a prefix of ``text``) shortened to end on a word boundary, without the
    separator it ends on; "" when the first word alone does not fit."""
    if len(cut) < len(text) and cut and _spaced(cut[-1]) and _spaced(text[len(cut)]):
        end = len(cut)
        while end and _spaced(cut[end - 1]):
            end -= 1
        cut = cut[:end]
    while True:  # drop the separators it ends on ("; " between summary items), not "&amp;"
        trimmed = cut.rstrip(" ,:-–—/")
        if trimmed.endswith(";") and not _ENTITY_END.search(trimmed):
            trimmed = trimmed[:-1]
        if trimmed == cut:
            return cut
        cut = trimmed


def _cut_line(prefix: str, text: str, limit: int, count: Count, truncate: Truncate) -> str | None:
    """``prefix + <start of text>… \\n`` within ``limit`` tokens, cut at a word boundary,
    or None if not even one word fits."""
    tokens = limit - count(prefix + _ELLIPSIS + "\n")
    while tokens > 0:
        cut = _word_cut(text, _PARTIAL_ENTITY.sub("", truncate(text, tokens)).rstrip())
        if not cut:
            return None
        line = f"{prefix}{cut}{_ELLIPSIS}\n"
        over = count(line) - limit
        if over <= 0:
            return line
        tokens -= over
    return None


def _select_summaries(
    document: MemoryDocument, budget: int, count: Count, truncate: Truncate
) -> tuple[list[str], int, list[SummaryDecision]]:
    """Summary lines in canonical order; whole lines first, then one cut line in the rest.

    A held-out section (see ``memfold.forgetting``) is never injected."""
    entries: list[tuple[int, str, str, str, str]] = []  # group, prefix, text, full line, key
    decisions: dict[str, SummaryDecision] = {}
    for group, (_, sections) in enumerate(_GROUPS):
        for key, label in sections:
            raw = document.summary(key)
            text = escape(raw)
            summary = document.summaries.get(key)
            hold = None if summary is None or not text else held_out(summary)
            if hold is not None:
                detail = "mentions removed " + ", ".join(repr(r) for r in hold.removed)
                decisions[key] = SummaryDecision(key, raw, False, "held_out", 0, detail)
            elif text:
                prefix = f"- {label}: "
                entries.append((group, prefix, text, f"{prefix}{text}\n", key))
    headers = [count(header) for header, _ in _GROUPS]
    chosen: dict[int, str] = {}
    opened: set[int] = set()
    room = budget

    def need(index: int, line_cost: int) -> int:
        group = entries[index][0]
        return line_cost + (0 if group in opened else headers[group])

    skipped: list[int] = []
    for index, (group, _, _, line, _) in enumerate(entries):
        cost = need(index, count(line))
        if cost <= room:
            chosen[index] = line
            opened.add(group)
            room -= cost
        else:
            skipped.append(index)
    for index in skipped:
        group, prefix, text, _, _ = entries[index]
        header_cost = need(index, 0)
        cut = _cut_line(prefix, text, room - header_cost, count, truncate)
        if cut is not None:
            chosen[index] = cut
            opened.add(group)
            room -= header_cost + count(cut)
    out: list[str] = []
    for group, (header, _) in enumerate(_GROUPS):
        if group in opened:
            out.append(header)
            out.extend(chosen[i] for i in sorted(chosen) if entries[i][0] == group)
    for index, (_, _, _, line, key) in enumerate(entries):
        raw = document.summary(key)
        if index not in chosen:
            decisions[key] = SummaryDecision(key, raw, False, "budget", count(line))
        else:
            reason = "fits" if chosen[index] == line else "truncated"
            decisions[key] = SummaryDecision(key, raw, True, reason, count(chosen[index]))
    ordered = [decisions[k] for _, sections in _GROUPS for k, _ in sections if k in decisions]
    return out, budget - room, ordered


def _plan(
    document: MemoryDocument,
    *,
    budget: int,
    settings: _Settings,
    head: list[str],
    count: Count,
    truncate: Truncate,
) -> tuple[str, int, _FactPicker, list[SummaryDecision], int]:
    """Assemble a block whose lines sum to at most ``budget`` tokens; return it, that sum,
    the fact picker and summary decisions behind it, and what the guaranteed pool used.

    Priority: the wrapper, guaranteed facts within their own budget, the summaries (cut
    only when they alone overflow what is left), then the other facts in what remains.

    Why the sum is exact for a ``TokenCounter``: tiktoken first splits text with its
    pattern and runs BPE on each piece alone. Every line here starts with a visible
    character other than ``/``, has no break inside (``escape`` flattens whitespace), ends
    with a visible character and then ``\\n``. In both the cl100k and o200k patterns a
    piece that reaches a ``\\n`` continues only over whitespace or ``/``, and no piece can
    start at a ``\\n`` and take a visible character (the optional prefix class excludes
    ``\\r\\n``). So the block splits at every line end exactly as each line splits alone.
    ``tests/test_inject_properties.py`` checks the equality on random documents.
    """
    fixed = sum(count(line) for line in head) + count(CLOSE_TAG)
    room = budget - fixed
    facts = _FactPicker.of(document.facts, settings, count)
    if room <= 0:
        _, _, dropped = _select_summaries(document, 0, count, truncate)
        return "", 0, facts, dropped, 0
    header_cost = count(_FACTS_HEADER)
    limit = min(settings.guaranteed_budget, room - header_cost)
    facts.take_guaranteed(limit)
    pool_used = facts.used
    reserved = facts.used + header_cost if any(facts.taken) else 0
    # When the whole block (not their own budget) is too small for every guaranteed
    # fact, nothing of lower priority takes the room a left-out correction could not use.
    squeezed = limit < settings.guaranteed_budget and not facts.all_guaranteed_taken()
    summary_lines, summary_cost, summaries = _select_summaries(
        document, 0 if squeezed else room - reserved, count, truncate
    )
    if not squeezed:
        facts.take(room - summary_cost - header_cost, guaranteed_only=False)
    fact_lines = facts.rendered()
    if not fact_lines and not summary_lines:
        return "", 0, facts, summaries, pool_used
    planned = fixed + summary_cost + (facts.used + header_cost if fact_lines else 0)
    block = "".join([*head, *summary_lines, *fact_lines, CLOSE_TAG])
    return block, planned, facts, summaries, pool_used


def plan(
    document: MemoryDocument,
    *,
    max_tokens: int,
    counter: Count | TokenCounter,
    guaranteed_categories: Sequence[str] = ("correction",),
    guaranteed_budget: int = 500,
    today: datetime.date | None = None,
    relevance: Sequence[str] = (),
) -> RenderPlan:
    """The injection block for ``document`` within ``max_tokens`` (wrapper included),
    with the decision taken for every fact and summary section (see ``render``).

    Raises:
        ValueError: ``max_tokens`` or ``guaranteed_budget`` is negative.
    """
    if max_tokens < 0:
        raise ValueError(f"max_tokens={max_tokens}: must be 0 or more")
    if guaranteed_budget < 0:
        raise ValueError(f"guaranteed_budget={guaranteed_budget}: must be 0 or more")
    count, truncate = _tools(counter)
    settings = _Settings(
        frozenset(c.lower() for c in guaranteed_categories), guaranteed_budget, tuple(relevance)
    )
    head = [f"{OPEN_TAG}\n"]
    if today is not None:
        head.append(f"Current date: {today.isoformat()}\n")
    # For an exact TokenCounter the planned sum is the block's count (see ``_plan``), so
    # the whole block is not encoded again; any other counter is checked on the result.
    additive = isinstance(counter, TokenCounter)
    budget = max_tokens
    while True:
        block, planned, facts, summaries, pool_used = _plan(
            document,
            budget=max(budget, 0),
            settings=settings,
            head=head,
            count=count,
            truncate=truncate,
        )
        total = planned if additive or not block else count(block)
        if not block or total <= max_tokens:
            break
        # Only a counter whose counts do not add up gets here: plan again, smaller; at a
        # budget of 0 nothing fits, which ends the loop.
        budget -= total - max_tokens
    return RenderPlan(
        text=block,
        tokens=total if block else 0,
        budget=max_tokens,
        facts=facts.decisions(),
        summaries=tuple(summaries),
        guaranteed_budget=guaranteed_budget,
        guaranteed_used=pool_used,
    )


def render(
    document: MemoryDocument,
    *,
    max_tokens: int,
    counter: Count | TokenCounter,
    guaranteed_categories: Sequence[str] = ("correction",),
    guaranteed_budget: int = 500,
    today: datetime.date | None = None,
    relevance: Sequence[str] = (),
) -> str:
    """The injection block for ``document`` within ``max_tokens`` (wrapper included).

    ``relevance`` lists fact ids most relevant first; those facts are taken before the
    others (after the guaranteed ones). Returns "" when the document is empty or not even
    one line fits.

    Raises:
        ValueError: ``max_tokens`` or ``guaranteed_budget`` is negative.
    """
    if document.is_empty and max_tokens >= 0 and guaranteed_budget >= 0:
        return ""
    return plan(
        document,
        max_tokens=max_tokens,
        counter=counter,
        guaranteed_categories=guaranteed_categories,
        guaranteed_budget=guaranteed_budget,
        today=today,
        relevance=relevance,
    ).text


def _same_content(cached: MemoryDocument, document: MemoryDocument) -> bool:
    """Whether a block rendered from ``cached`` is the block of ``document``: what the
    renderer reads is the summaries (with their extra fields) and the facts."""
    if cached is document:
        return True
    if cached.facts != document.facts or cached.summaries != document.summaries:
        return False
    # a summary's extra fields (held-out markers) decide whether it is shown
    return all(cached.summaries[k].extra == s.extra for k, s in document.summaries.items())


class ContextRenderer:
    """``render`` with fixed settings and a bounded, thread-safe cache of finished blocks.

    A block is cached per (scope, max_tokens, today, relevance order) together with the
    document it was rendered from, and served only for that same document: the very object
    (a store's cache hands out the same one) or one with equal summaries (their markers
    included) and facts. Revisions are not trusted: they restart when a scope is erased
    outside memfold and go back on a restore from backup, and a block of the old content
    must never be served then; :meth:`forget_user` drops an erased user's blocks at once.
    Keying on the relevance order rather than on the query lets two messages that match
    the same facts share one block.
    """

    def __init__(
        self,
        counter: Count | TokenCounter,
        *,
        max_tokens: int = 2000,
        guaranteed_categories: Sequence[str] = ("correction",),
        guaranteed_budget: int = 500,
        cache_size: int = 1024,
        scrub: Callable[[str], str] | None = None,
    ) -> None:
        """``scrub`` (a ``Redactor``, say) is applied to every fact and summary before a
        block is rendered, so text stored before a redaction pattern existed, or imported,
        is redacted in the prompt too; it runs on cache misses only, memoised per text.

        Raises:
            ValueError: a budget is negative or ``cache_size`` is below 1.
        """
        if max_tokens < 0 or guaranteed_budget < 0:
            raise ValueError(
                f"max_tokens={max_tokens}, guaranteed_budget={guaranteed_budget}: must be 0 or more"
            )
        if cache_size < 1:
            raise ValueError(f"cache_size={cache_size}: must be at least 1")
        self.counter = counter
        self.max_tokens = max_tokens
        self.guaranteed_categories = tuple(guaranteed_categories)
        self.guaranteed_budget = guaranteed_budget
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[object, ...], tuple[MemoryDocument, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._scrub = None if scrub is None else cached_scrub(scrub)

    @classmethod
    def from_config(
        cls,
        config: MemoryConfig,
        counter: Count | TokenCounter | None = None,
        *,
        scrub: Callable[[str], str] | None = None,
    ) -> ContextRenderer:
        """A renderer with the config's budget, guaranteed categories and encoding (and
        ``scrub`` applied at recall, as in the constructor).

        Raises:
            TokenizerDataError: the configured encoding's packaged table is corrupt.
        """
        return cls(
            get_counter(config.token_encoding) if counter is None else counter,
            max_tokens=config.max_injection_tokens,
            guaranteed_categories=config.guaranteed_categories,
            guaranteed_budget=config.guaranteed_token_budget,
            scrub=scrub,
        )

    def render(
        self,
        scope: Scope,
        document: MemoryDocument,
        *,
        max_tokens: int | None = None,
        today: datetime.date | None = None,
        relevance: Sequence[str] = (),
    ) -> str:
        """The block for ``scope``'s ``document`` (cached per content and relevance order).

        Raises:
            ValueError: ``max_tokens`` is negative.
        """
        budget = self.max_tokens if max_tokens is None else max_tokens
        order = tuple(relevance)
        key = (scope, budget, today, order)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
        if found is not None and _same_content(found[0], document):
            return found[1]
        block = render(
            redact_document(document, self._scrub),  # security: redact at recall
            max_tokens=budget,
            counter=self.counter,
            guaranteed_categories=self.guaranteed_categories,
            guaranteed_budget=self.guaranteed_budget,
            today=today,
            relevance=order,
        )
        with self._lock:
            self._cache[key] = (document, block)
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return block

    def explain(
        self,
        document: MemoryDocument,
        *,
        max_tokens: int | None = None,
        today: datetime.date | None = None,
        relevance: Sequence[str] = (),
    ) -> RenderPlan:
        """The plan behind the block :meth:`render` returns for ``document`` (not cached,
        redacted at recall the same way, what a held-out section mentions included).

        Raises:
            ValueError: ``max_tokens`` is negative.
        """
        planned = plan(
            redact_document(document, self._scrub),  # security: redact at recall
            max_tokens=self.max_tokens if max_tokens is None else max_tokens,
            counter=self.counter,
            guaranteed_categories=self.guaranteed_categories,
            guaranteed_budget=self.guaranteed_budget,
            today=today,
            relevance=relevance,
        )
        scrub = self._scrub
        if scrub is None or not any(s.detail for s in planned.summaries):
            return planned
        summaries = tuple(replace(s, detail=scrub(s.detail)) for s in planned.summaries)
        return replace(planned, summaries=summaries)

    def forget_user(self, user_id: str | None) -> None:
        """Drop every cached block of ``user_id``'s scopes."""
        with self._lock:
            for key in [k for k in self._cache if getattr(k[0], "user_id", object()) == user_id]:
                del self._cache[key]

    def cache_len(self) -> int:
        """How many blocks the cache holds now (never more than ``cache_size``)."""
        with self._lock:
            return len(self._cache)

    def clear(self) -> None:
        """Forget every cached block."""
        with self._lock:
            self._cache.clear()
