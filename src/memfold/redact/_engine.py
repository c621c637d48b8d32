"""The detection engine: a detector is a pattern plus cheap hints that decide whether it
runs at all, and checks of the matched value; ``scan`` runs the detectors over a folded
view of the text and resolves overlaps."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from memfold.redact._checks import entropy

Check = Callable[[str], bool]
Accept = Callable[["re.Match[str]"], bool]

MARKER_START = "[REDACTED:"


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret found in a text: its ``kind`` (the marker's label), the ``[start, end)``
    span that is replaced, and the ``rule`` that found it (never the value)."""

    kind: str
    start: int
    end: int
    rule: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Detector:
    kind: str
    pattern: re.Pattern[str]
    #: The group holding the value; of a tuple, the first that took part in the match.
    group: int | str | tuple[str, ...] = 0
    check: Check | None = None
    #: The detector runs only when one of these substrings is in the text (lower-cased
    #: when ``lower``) or ``hint`` matches: ``in`` tests are far cheaper than a scan.
    hints: tuple[str, ...] = ()
    lower: bool = False
    hint: re.Pattern[str] | None = None
    min_digits: int = 0
    #: Only text with a non-ASCII character can match (a Chinese verb, say).
    non_ascii: bool = False
    #: Characters dropped from the end of the value ("密码是abc123。" ends the clause)
    #: and from its start (an opening quote).
    trim: str = ""
    trim_start: str = ""
    #: A check of the whole match (the name a value is assigned to, say).
    accept: Accept | None = None
    #: The value is kept only when its Shannon entropy is above this (bits/char).
    min_entropy: float = 0.0
    #: Text just before the match that says it is not this kind ("IMEI", "order").
    not_after: re.Pattern[str] | None = None
    #: The rule's name in findings; the kind when empty.
    rule: str = ""
    #: The hints can only stand in a long token (a provider key's prefix): they are
    #: looked for in the text's long tokens only, far less text than the whole.
    in_tokens: bool = False
    #: Hints a match starts with: looked up among the starts of the long tokens, so a
    #: megabyte of text costs one tokenisation instead of one scan per provider.
    token_prefixes: tuple[str, ...] = ()
    #: Literal words (lower-case ASCII, or exact non-ASCII) at which every match starts:
    #: the pattern is tried only there, not at every position of the text.
    anchors: tuple[str, ...] = ()
    #: Tried at an anchor where ``pattern`` finds no value that passes the checks.
    fallback: re.Pattern[str] | None = None
    #: Matches wherever ``pattern`` or ``fallback`` may: finds the starts of a flood in
    #: one pass instead of one per pattern.
    finder: re.Pattern[str] | None = None
    _ascii_hints: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _other_hints: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ascii_hints", tuple(h for h in self.hints if h.isascii()))
        object.__setattr__(self, "_other_hints", tuple(h for h in self.hints if not h.isascii()))

    def might_match(self, view: View) -> bool:
        if self.non_ascii and view.ascii is view.text:
            return False
        if self.min_digits:
            return view.digits() >= self.min_digits
        if self.hint is not None:
            return self.hint.search(view.ascii) is not None
        if self.token_prefixes:
            starts = view.token_starts()
            return any(h in starts for h in self.token_prefixes)
        if self.in_tokens:
            tokens = view.tokens()
            return any(h in tokens for h in self.hints)
        haystack = view.lower if self.lower else view.ascii
        if len(haystack) < _MEMO_FROM:  # a message: a direct test is cheaper than a memo
            for hint in self._ascii_hints:
                if hint in haystack:
                    return True
            if self._other_hints and view.ascii is not view.text:
                for hint in self._other_hints:
                    if hint in view.text:
                        return True
            return False
        return any(view.has(h, lower=self.lower) for h in self.hints)

    def _matches(self, text: str) -> Iterator[re.Match[str]]:
        """``finditer``, except that after a match ``accept`` refuses the search resumes
        one character after its start: ``$env:JWT_SECRET = …`` first matches ``env: …``
        (not a secret name), then ``JWT_SECRET = …``. Starts are token boundaries and
        every match is bounded, so the retries keep the scan linear."""
        if self.anchors:
            yield from self._anchored(text)
            return
        if self.accept is None:
            yield from self.pattern.finditer(text)
            return
        position = 0
        search = self.pattern.search
        while (match := search(text, position)) is not None:
            accepted = self.accept(match)
            if accepted:
                yield match
            position = (
                match.end() if accepted and match.end() > match.start() else match.start() + 1
            )

    def _anchored(self, text: str) -> Iterator[re.Match[str]]:
        lowered = text.translate(_ASCII_LOWER)  # same length: positions stay valid
        patterns = (self.pattern,) if self.fallback is None else (self.pattern, self.fallback)
        if len(text) > _DENSE * 64:
            count = sum((lowered if a.isascii() else text).count(a) for a in self.anchors)
            if count * _DENSE > len(text):
                # anchors everywhere (a flood of one word): one pass in C beats a call each
                yield from self._dense(text, patterns)
                return
        starts: set[int] = set()
        for anchor in self.anchors:
            haystack = lowered if anchor.isascii() else text
            position = haystack.find(anchor)
            while position >= 0:
                starts.add(position)
                position = haystack.find(anchor, position + 1)
        yield from self._first_at(starts, text, patterns)

    def _dense(self, text: str, patterns: tuple[re.Pattern[str], ...]) -> Iterator[re.Match[str]]:
        """Each pattern over the whole text in C, then per start the first pattern's match
        whose value passes, left to right without overlaps."""
        starts: set[int] = set()
        if self.finder is not None:
            searches = [(self.finder, text)]
        else:
            searches = [(pattern, text) for pattern in patterns]
        for pattern, haystack in searches:
            position = 0
            while (match := pattern.search(haystack, position)) is not None:
                starts.add(match.start())
                position = match.start() + 1
        yield from self._first_at(starts, text, patterns)

    def _first_at(
        self, starts: set[int], text: str, patterns: tuple[re.Pattern[str], ...]
    ) -> Iterator[re.Match[str]]:
        """Per start, left to right and without overlaps, the first pattern's match whose
        value passes."""
        covered = 0
        for start in sorted(starts):
            if start < covered:
                continue
            for pattern in patterns:
                match = pattern.match(text, start)
                if match is not None and self._value_span(match, text) is not None:
                    covered = match.end()
                    yield match
                    break

    def _value_span(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        """The span of the match's value when it passes every check, else None."""
        if self.accept is not None and not self.accept(match):
            return None
        group = self.group
        if isinstance(group, tuple):
            group = next((g for g in group if match.group(g) is not None), group[0])
        start, end = match.span(group)
        if start < 0:
            return None
        while end > start and text[end - 1] in self.trim:
            end -= 1
        while start < end and text[start] in self.trim_start:
            start += 1
        value = text[start:end]
        if not value or MARKER_START in value:  # already redacted: idempotent
            return None
        if self.check is not None and not self.check(value):
            return None
        if self.min_entropy and entropy(value) <= self.min_entropy:
            return None
        if self.not_after is not None and self.not_after.search(text, max(0, start - 24), start):
            return None
        return start, end

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The ``[start, end)`` spans of values in ``text`` that pass every check."""
        out: list[tuple[int, int]] = []
        for match in self._matches(text):
            span = self._value_span(match, text)
            if span is not None:
                out.append(span)
        return out


@lru_cache(maxsize=4096)
def _nfkc(char: str) -> str:
    return unicodedata.normalize("NFKC", char)


def fold(text: str) -> str:
    """``text`` with each character replaced by its NFKC form when that is one character
    (full-width ``：１２ａ`` → ``:12a``, ideographic space → space), so detectors see
    the ASCII shapes they know. One character for one keeps every span valid in the
    original text; expansions ("…" → "...", "ﬁ" → "fi") are left as they are."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    for char in set(text):
        if char > "\x9f":
            folded = _nfkc(char)
            if folded != char and len(folded) == 1:
                # a few distinct characters: str.replace beats a translate table
                text = text.replace(char, folded)
    return text


#: Texts at least this long memoise hint tests (detectors share hints).
_MEMO_FROM = 4096
#: Anchors closer than this on average: the text is a flood, scan it in one pass.
_DENSE = 64
_NOT_DIGITS = bytes(c for c in range(256) if not 48 <= c <= 57)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# Runs of token characters long enough to hold a provider key.
_LONG_TOKEN = re.compile(r"[a-z0-9_\-.+/~$]{12,}")
#: Token prefixes up to this length are indexed (longer hints use a substring test).
PREFIX_MAX = 24


class View:
    """A text folded for detection (``fold``) and its ASCII-only projections, for hint
    checks. Dropping non-ASCII characters can only make ASCII hints appear more often,
    never hide one; searching pure-ASCII strings is several times faster than mixed CJK
    text."""

    __slots__ = ("_digits", "_has", "_starts", "_tokens", "ascii", "lower", "text")

    def __init__(self, text: str, *, folded: bool = False) -> None:
        text = text if folded else fold(text)
        self.text = text
        self.ascii = text if text.isascii() else text.encode("ascii", "ignore").decode("ascii")
        self.lower = self.ascii.lower()
        self._digits = -1
        self._tokens: list[str] | None = None
        self._starts: set[str] | None = None
        self._has: dict[tuple[str, bool], bool] = {}

    def has(self, hint: str, *, lower: bool) -> bool:
        """Whether ``hint`` is in the text (lower-cased when ``lower``; a non-ASCII hint
        is looked for in the folded text), memoised: detectors share hints."""
        key = (hint, lower)
        found = self._has.get(key)
        if found is None:
            if hint.isascii():
                found = hint in (self.lower if lower else self.ascii)
            else:  # pure ASCII text holds no non-ASCII hint
                found = self.ascii is not self.text and hint in self.text
            self._has[key] = found
        return found

    def _long_tokens(self) -> list[str]:
        if self._tokens is None:
            self._tokens = _LONG_TOKEN.findall(self.lower)
        return self._tokens

    def tokens(self) -> str:
        """The text's long tokens, lower-cased, joined by spaces."""
        return " ".join(self._long_tokens())

    def token_starts(self) -> set[str]:
        """Every prefix (up to ``PREFIX_MAX`` characters) of the text's long tokens."""
        if self._starts is None:
            self._starts = {
                token[:size]
                for token in set(self._long_tokens())
                for size in range(1, PREFIX_MAX + 1)
            }
        return self._starts

    def digits(self) -> int:
        if self._digits < 0:
            self._digits = len(self.ascii.encode("ascii").translate(None, _NOT_DIGITS))
        return self._digits


class DetectorSet:
    """Detectors in priority order, with the provider prefixes indexed: which of 200+
    prefix rules can match is one set intersection with the text's token starts."""

    def __init__(self, detectors: Sequence[Detector]) -> None:
        self.detectors = tuple(detectors)
        self._others: list[tuple[int, Detector]] = []
        self._by_prefix: dict[str, list[int]] = {}
        for index, detector in enumerate(self.detectors):
            if detector.token_prefixes:
                for prefix in detector.token_prefixes:
                    self._by_prefix.setdefault(prefix, []).append(index)
            else:
                self._others.append((index, detector))
        self._prefixes = frozenset(self._by_prefix)

    def candidates(self, view: View) -> tuple[Detector, ...]:
        """The detectors whose hints are in ``view``, in priority order."""
        chosen = {index for index, detector in self._others if detector.might_match(view)}
        if self._prefixes:
            for prefix in self._prefixes & view.token_starts():
                chosen.update(self._by_prefix[prefix])
        return tuple(self.detectors[index] for index in sorted(chosen))


def scan(view: View, detectors: Sequence[Detector]) -> list[Finding]:
    """Non-overlapping findings of ``detectors`` (already chosen by their hints), in
    order; of overlapping ones the earliest, then the longest, then the first wins."""
    found: list[tuple[int, int, int, Detector]] = []
    for priority, detector in enumerate(detectors):
        found.extend((start, -end, priority, detector) for start, end in detector.spans(view.text))
    found.sort(key=lambda item: item[:3])
    out: list[Finding] = []
    last_end = 0
    for start, neg_end, _, detector in found:
        if start >= last_end:
            out.append(Finding(detector.kind, start, -neg_end, detector.rule or detector.kind))
            last_end = -neg_end
    return out


def replace_findings(text: str, findings: Sequence[Finding]) -> str:
    if not findings:
        return text
    parts: list[str] = []
    position = 0
    for finding in findings:
        parts.append(text[position : finding.start])
        parts.append(f"[REDACTED:{finding.kind}]")
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)
