"""Score what an extractor stored against a labelled corpus (pure: no IO, no clock).

Every stored fact gets one verdict: ``correct`` (it is the match of an expected fact),
``allowed`` (not required, not wrong), ``invented`` (it holds a trap's terms: text the
user did not say about themselves) or ``unexpected`` (none of these). Expected facts
and stored facts are paired one to one, so one fact that merges two statements counts
once, and a statement stored twice counts once.

recall = matched expected facts / expected facts;
precision = correct / (correct + invented + unexpected).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from memfold.eval.corpus import Conversation, Labelled

__all__ = [
    "ConversationResult",
    "Figures",
    "Report",
    "StoredFact",
    "first_person",
    "judge",
    "matches",
    "score",
]

CORRECT = "correct"
ALLOWED = "allowed"
INVENTED = "invented"
UNEXPECTED = "unexpected"

# A fact about the user reads in the third person: "Likes my team" and "希望以后都用中文回答我"
# still speak as the user.
_FIRST_PERSON = re.compile(r"(?-i:\bI\b)|\b(?:I'm|I've|I'd|I'll|my|me|mine|myself)\b|我", re.I)
# A Latin term may end in a common inflection ("peanut" → "peanuts", "introvert" →
# "introverted") but not run into another word ("Go" ≠ "Google", "Java" ≠ "JavaScript").
_SUFFIX = r"(?:s|es|ed|d|ing|er|ers|ic|al|ly)?"


@dataclass(frozen=True, slots=True)
class StoredFact:
    content: str
    category: str


@dataclass(frozen=True, slots=True)
class ConversationResult:
    """One conversation: the facts stored and each one's verdict."""

    conversation: Conversation
    facts: tuple[StoredFact, ...]
    verdicts: tuple[str, ...]
    #: ``matched[i]`` is the index in ``facts`` of expected fact ``i``, or None.
    matched: tuple[int | None, ...]
    error: str | None = None

    @property
    def misses(self) -> tuple[Labelled, ...]:
        return tuple(
            e for e, m in zip(self.conversation.expect, self.matched, strict=True) if m is None
        )


@dataclass(frozen=True, slots=True)
class Figures:
    """Counts behind recall and precision for one slice of a corpus."""

    conversations: int = 0
    expected: int = 0
    found: int = 0
    stored: int = 0
    correct: int = 0
    invented: int = 0
    unexpected: int = 0

    @property
    def judged(self) -> int:
        return self.correct + self.invented + self.unexpected

    @property
    def recall(self) -> float | None:
        return self.found / self.expected if self.expected else None

    @property
    def precision(self) -> float | None:
        return self.correct / self.judged if self.judged else None

    def __add__(self, other: Figures) -> Figures:
        return Figures(*(a + b for a, b in zip(_astuple(self), _astuple(other), strict=True)))


def _astuple(figures: Figures) -> tuple[int, ...]:
    return (
        figures.conversations,
        figures.expected,
        figures.found,
        figures.stored,
        figures.correct,
        figures.invented,
        figures.unexpected,
    )


@dataclass(frozen=True, slots=True)
class Report:
    """The scores of one extractor on one corpus, whole and sliced."""

    results: tuple[ConversationResult, ...]
    overall: Figures
    by_language: Mapping[str, Figures]
    by_category: Mapping[str, Figures]
    by_tag: Mapping[str, Figures]
    #: matched pairs whose stored category differs from the expected one
    category_mismatches: tuple[tuple[str, Labelled, StoredFact], ...]
    #: stored facts still speaking as the user ("my", "I", "我")
    first_person: tuple[tuple[str, StoredFact], ...]
    failed: tuple[tuple[str, str], ...] = field(default=())

    def facts_with(self, verdict: str) -> list[tuple[str, StoredFact]]:
        return [
            (r.conversation.id, fact)
            for r in self.results
            for fact, v in zip(r.facts, r.verdicts, strict=True)
            if v == verdict
        ]


# --- matching --------------------------------------------------------------------------


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@lru_cache(maxsize=4096)
def _term_regex(term: str) -> re.Pattern[str]:
    folded = _fold(term)
    body = re.escape(folded)
    if folded[:1].isascii() and folded[:1].isalnum():
        body = r"(?<![a-z0-9])" + body
    if folded[-1:].isascii() and folded[-1:].isalpha():
        body += _SUFFIX + r"(?![a-z])"
    elif folded[-1:].isdigit():
        body += r"(?!\d)"
    return re.compile(body)


def matches(item: Labelled, content: str) -> bool:
    """Whether ``content`` holds every term of ``item`` (any of each term's alternatives)."""
    text = _fold(content)
    return all(any(_term_regex(a).search(text) for a in alts) for alts in item.terms)


def first_person(content: str) -> bool:
    """Whether a stored fact still speaks as the user ("Likes my team", "用中文回答我")."""
    return bool(_FIRST_PERSON.search(content.replace("我们", "")))


def _pair(expected: Sequence[Labelled], facts: Sequence[StoredFact]) -> list[int | None]:
    """A maximum one-to-one pairing of expected items and the facts matching them."""
    candidates = [[j for j, f in enumerate(facts) if matches(e, f.content)] for e in expected]
    owner: dict[int, int] = {}

    def place(i: int, visited: set[int]) -> bool:
        for j in candidates[i]:
            if j in visited:
                continue
            visited.add(j)
            if j not in owner or place(owner[j], visited):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        place(i, set())
    matched: list[int | None] = [None] * len(expected)
    for j, i in owner.items():
        matched[i] = j
    return matched


def judge(
    conversation: Conversation, facts: Iterable[StoredFact], error: str | None = None
) -> ConversationResult:
    """Pair a conversation's stored facts with its labels and give each fact a verdict."""
    stored = tuple(facts)
    matched = _pair(conversation.expect, stored)
    paired = {j for j in matched if j is not None}
    verdicts: list[str] = []
    for j, fact in enumerate(stored):
        if j in paired:
            verdicts.append(CORRECT)
        elif any(
            matches(item, fact.content) for item in (*conversation.allowed, *conversation.expect)
        ):
            # a second fact saying what another already said is a repeat, not an error
            verdicts.append(ALLOWED)
        elif any(matches(trap, fact.content) for trap in conversation.traps):
            verdicts.append(INVENTED)
        else:
            verdicts.append(UNEXPECTED)
    return ConversationResult(conversation, stored, tuple(verdicts), tuple(matched), error)


# --- aggregation -----------------------------------------------------------------------


def _figures(result: ConversationResult, sliced: str | None = None) -> Figures:
    """The counts of one conversation, or of its facts of category ``sliced`` only."""
    conv = result.conversation
    wanted = [
        m
        for e, m in zip(conv.expect, result.matched, strict=True)
        if sliced is None or e.category == sliced
    ]
    judged = [
        v
        for f, v in zip(result.facts, result.verdicts, strict=True)
        if sliced is None or f.category == sliced
    ]
    return Figures(
        # a slice by category counts the conversations it has expected or stored facts in
        conversations=1 if sliced is None or wanted or judged else 0,
        expected=len(wanted),
        found=sum(1 for m in wanted if m is not None),
        stored=len(judged),
        correct=judged.count(CORRECT),
        invented=judged.count(INVENTED),
        unexpected=judged.count(UNEXPECTED),
    )


def _total(figures: Iterable[Figures]) -> Figures:
    total = Figures()
    for f in figures:
        total = total + f
    return total


def score(
    conversations: Sequence[Conversation],
    facts: Mapping[str, Sequence[StoredFact]],
    errors: Mapping[str, str] | None = None,
) -> Report:
    """Score the facts stored for each conversation (by id) against the corpus labels.

    A conversation missing from ``facts`` stored nothing; one in ``errors`` failed (its
    expected facts count as missed).
    """
    errors = errors or {}
    results = tuple(judge(c, facts.get(c.id, ()), errors.get(c.id)) for c in conversations)
    by_language: dict[str, Figures] = {}
    by_tag: dict[str, Figures] = {}
    for r in results:
        one = _figures(r)
        lang = r.conversation.lang
        by_language[lang] = by_language.get(lang, Figures()) + one
        tags = [*r.conversation.tags, *(["trap"] if r.conversation.has_traps else [])]
        for tag in dict.fromkeys(tags):
            by_tag[tag] = by_tag.get(tag, Figures()) + one
    categories = sorted(
        {e.category for c in conversations for e in c.expect if e.category}
        | {f.category for r in results for f in r.facts}
    )
    by_category = {cat: _total(_figures(r, cat) for r in results) for cat in categories}
    mismatches = tuple(
        (r.conversation.id, e, r.facts[m])
        for r in results
        for e, m in zip(r.conversation.expect, r.matched, strict=True)
        if m is not None and r.facts[m].category != e.category
    )
    wording = tuple(
        (r.conversation.id, f) for r in results for f in r.facts if first_person(f.content)
    )
    return Report(
        results=results,
        overall=_total(_figures(r) for r in results),
        by_language={k: by_language[k] for k in sorted(by_language, key=_language_order)},
        by_category=by_category,
        by_tag=dict(sorted(by_tag.items())),
        category_mismatches=mismatches,
        first_person=wording,
        failed=tuple((r.conversation.id, r.error) for r in results if r.error),
    )


def _language_order(lang: str) -> tuple[int, str]:
    known = ("en", "zh", "mixed")
    return (known.index(lang) if lang in known else len(known), lang)
