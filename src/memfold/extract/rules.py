"""The offline extractor: explicit self-statements found by patterns, English and Chinese.

``RuleExtractor`` reads only the user's messages (plus, for a correction, the assistant
turn it corrects) and proposes a fact for every explicit statement a pattern recognises:
"I live in Berlin" → ``Lives in Berlin``, "以后都用中文回答" → ``希望以后都用中文回答``. It
is deterministic and cheap, so it is the default when no LLM is configured. Patterns
live in YAML files (``memfold/data/rules/*.yaml``, loaded by ``_rule_files``); users add
their own with ``RuleExtractor(extra_pattern_files=[...])``. The file format is described
at the top of ``common.yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from memfold.extract._rule_files import (
    CJK,
    CORRECTION,
    PLACEHOLDER,
    Rule,
    RuleSet,
    builtin_rule_set,
    load_rules,
)
from memfold.extract.base import (
    ChangeSet,
    Extraction,
    ExtractionRequest,
    FactRemoval,
    NewFact,
    SummaryUpdate,
    Usage,
)
from memfold.model import USER_SECTIONS, MemoryDocument

__all__ = ["RuleExtractor"]

#: Longest summary the rule extractor writes; older clauses are dropped first.
MAX_SUMMARY_CHARS = 300
#: Longest captured value kept in a fact; longer captures are not explicit statements.
MAX_VALUE_CHARS = 120
#: ``source_error`` is the first sentence of the corrected assistant turn, cut to this.
MAX_SOURCE_ERROR_CHARS = 200

_LATIN = re.compile(r"[A-Za-z]")
_HAS_WORD = re.compile(r"[^\W_]")

# Text that never carries a statement by the user: uploads, code, quoted replies, quotes.
_UPLOADS = re.compile(r"<uploaded_files>.*?(?:</uploaded_files>|\Z)", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"(```|~~~).*?(?:\1|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_BLOCKQUOTE = re.compile(r"^\s*>.*$", re.MULTILINE)
_QUOTED = re.compile(
    r"\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』|《[^》\n]*》|(?<![\w'])'[^'\n]+'(?![\w'])"
)
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|[。！？!?；;]+|\n+")
_MARKUP = re.compile(r"\*\*|__|^#+\s*|^\s*[-*]\s+", re.MULTILINE)
_QUESTION_END = re.compile(r"[?？]")
_QUESTION_NEXT = re.compile(r"\s*[?？]")
# Words a correction and the assistant sentence it corrects share ("MySQL", "Munich").
_WORD = re.compile(r"[a-z0-9][a-z0-9+#.'-]*[a-z0-9+#]")
_COMMON_WORDS = frozenset(
    [
        "the",
        "and",
        "not",
        "but",
        "for",
        "with",
        "that",
        "this",
        "then",
        "than",
        "you",
        "your",
        "you're",
        "i'm",
        "it's",
        "was",
        "are",
        "were",
        "have",
        "has",
        "had",
        "use",
        "all",
        "any",
        "can",
        "will",
        "would",
        "should",
        "what",
        "which",
        "who",
        "how",
        "why",
        "when",
        "where",
        "there",
        "here",
        "from",
        "into",
        "just",
        "also",
        "only",
        "very",
        "more",
        "most",
        "some",
        "such",
    ]
)
_SPACES = re.compile(r"\s+")
# "I used to live in Paris, now I live in Berlin": the clause about now is read (and
# guarded) on its own, so the past in the first clause neither leaks into nor vetoes it.
_NOW_CLAUSE = re.compile(
    r"\s*[,;，；]\s*(?:(?:but|and)\s+)?(?=(?:now|these days|nowadays|today|currently)\s*,?\s*I\b)"
    r"|\s*[,;，；]\s*(?:但是?|不过|而)?(?=(?:现在|目前|如今)我)",
    re.IGNORECASE,
)
_CLAUSE_SPLIT = re.compile(r"\s*(?:[;；。\n]|\.(?=\s|$))\s*")
_EDGE_PUNCT = "\"'`*_ \t,.;:!?，。；：！？、…~～()（）[]【】"


@dataclass(frozen=True, slots=True)
class _Hit:
    content: str
    rule: Rule
    source_error: str | None
    task: bool


# --- text preparation ------------------------------------------------------------------


def _without_code(text: str) -> str:
    text = text.replace("’", "'").replace("‘", "'")
    text = _UPLOADS.sub(" ", text)
    text = _FENCE.sub("\n", text)
    text = _INLINE_CODE.sub(" ", text)
    return _BLOCKQUOTE.sub("", text)


def _sentences(text: str) -> Iterator[tuple[str, bool]]:
    """Split into (sentence, is_question); a '.' splits only before a space or the end."""
    start = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[start : match.start()].strip()
        if piece:
            yield piece, bool(_QUESTION_END.search(match.group()))
        start = match.end()
    tail = text[start:].strip()
    if tail:
        yield tail, False


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 2} - _COMMON_WORDS


def _first_sentence(text: str, correction: str = "") -> str | None:
    """What the assistant got wrong, cut to 200: the first of its sentences that shares a
    word with the user's ``correction`` ("We don't use MySQL" → "Since you're on MySQL 8,
    …"), else its first informative sentence ("Sure!" is skipped)."""
    found: list[str] = []
    sentences = [
        _SPACES.sub(" ", sentence).strip()
        for sentence, _ in _sentences(_MARKUP.sub("", _without_code(text)))
    ]
    wanted = _words(correction)
    shared = [s for s in sentences if wanted & _words(s)] if wanted else []
    if shared:
        found.append(shared[0])
    for short in () if shared else sentences:
        if _HAS_WORD.search(short):
            found.append(short)
            if len(short) >= 12 or (CJK.search(short) and len(short) >= 5):
                break
    if not found:
        return None
    short = found[-1]
    if len(short) > MAX_SOURCE_ERROR_CHARS:
        short = short[: MAX_SOURCE_ERROR_CHARS - 1].rstrip() + "…"
    return short


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


# --- the extractor ---------------------------------------------------------------------


class RuleExtractor:
    """Deterministic, offline extraction of explicit user statements (English, Chinese).

    Raises (at construction):
        ConfigError: a pattern file cannot be read, is not valid YAML, or has a bad rule;
            the message names the file, the rule and the problem.
    """

    name = "rules"

    def __init__(self, extra_pattern_files: Sequence[str | Path] = ()) -> None:
        if isinstance(extra_pattern_files, str | Path):
            raise TypeError("extra_pattern_files must be a sequence of paths, not one path")
        self._rules = load_rules(extra_pattern_files) if extra_pattern_files else builtin_rule_set()
        self._correction_rules = tuple(r for r in self._rules.rules if r.category == CORRECTION)
        self._statement_rules = tuple(r for r in self._rules.rules if r.category != CORRECTION)

    def propose(self, request: ExtractionRequest) -> Extraction:
        """Facts and summaries for the explicit statements in the request's user messages."""
        hits: list[_Hit] = []
        corrected: str | None = None
        for message in request.messages:
            if message.role == "assistant":
                corrected = message.content
            elif message.role == "user":
                hits.extend(self._scan(message.content, corrected, request.signals.correction))
        return Extraction(_change_set(request.document, hits, self._rules), Usage())

    # -- scanning --

    def _scan(self, text: str, corrected: str | None, hinted: bool) -> Iterator[_Hit]:
        plain = _without_code(text)
        yield from self._corrections(plain, corrected, hinted)
        unquoted = _QUOTED.sub(" … ", plain)
        for whole, question in _sentences(unquoted):
            if question:
                continue
            for sentence in _NOW_CLAUSE.split(whole):
                yield from self._statements(sentence)

    def _statements(self, sentence: str) -> Iterator[_Hit]:
        if self._rules.guard and self._rules.guard.search(sentence):
            return
        task = bool(self._rules.task_marker and self._rules.task_marker.search(sentence))
        has_cjk = bool(CJK.search(sentence))
        has_latin = bool(_LATIN.search(sentence))
        found: list[tuple[int, _Hit]] = []
        for rule in self._statement_rules:
            if (rule.cjk and not has_cjk) or (not rule.cjk and not has_latin):
                continue
            for match in rule.regex.finditer(sentence):
                content = self._render(rule, match)
                if content:
                    found.append((match.start("value"), _Hit(content, rule, None, task)))
        # in the order they were said, so the later of two roles in a sentence wins
        found.sort(key=lambda item: item[0])
        for _, hit in found:
            yield hit

    def _corrections(self, plain: str, corrected: str | None, hinted: bool) -> Iterator[_Hit]:
        # A correction opens the message; with the capture-time hint, any sentence may.
        starts = [plain.lstrip()]
        if hinted:
            starts.extend(s for s, question in _sentences(plain) if not question)
        for start in starts:
            for rule in self._correction_rules:
                match = rule.regex.match(start)
                # "不对吧，这么贵？" asks; it does not correct.
                if match and not _QUESTION_NEXT.match(start, match.end()):
                    content = self._render(rule, match)
                    if content:
                        source_error = _first_sentence(corrected, plain) if corrected else None
                        yield _Hit(content, rule, source_error, False)
                        return

    def _clean(self, value: str) -> str:
        value = _SPACES.sub(" ", value).strip(_EDGE_PUNCT)
        for _ in range(3):
            before = value
            for trim in self._rules.trims:
                value = trim.sub("", value).strip(_EDGE_PUNCT)
            if value == before:
                break
        return value

    def _render(self, rule: Rule, match: re.Match[str]) -> str | None:
        value = self._clean(match.group("value") or "")
        # Capitalised only because it opened the sentence ("Answer briefly from now on").
        if (
            match.start("value") == 0
            and not rule.template.startswith("{value}")
            and value[:2].isascii()
            and value[:1].isupper()
            and value[1:2].islower()
        ):
            value = value[0].lower() + value[1:]
        if not value or len(value) > MAX_VALUE_CHARS or not _HAS_WORD.search(value):
            return None
        folded = value.casefold()
        if folded in rule.reject or folded in self._rules.reject_values:
            return None
        first_word = folded.split(" ", 1)[0]
        if first_word in self._rules.reject_leading_words:
            return None

        def fill(placeholder: re.Match[str]) -> str:
            name = placeholder.group(1)
            return value if name == "value" else self._clean(match.group(name) or "")

        content = _SPACES.sub(" ", PLACEHOLDER.sub(fill, rule.template)).strip()
        if content[:1].isascii() and content[:1].islower():
            content = content[0].upper() + content[1:]
        return content


# --- change set ------------------------------------------------------------------------


def _select(hits: Iterable[_Hit]) -> list[_Hit]:
    """Drop repeats; for an exclusive attribute (name, location…) the last statement wins."""
    chosen: list[_Hit] = []
    seen: set[str] = set()
    for hit in hits:
        key = _norm(hit.content)
        if key in seen:
            continue
        seen.add(key)
        if hit.rule.exclusive and not hit.task:
            chosen = [h for h in chosen if h.task or h.rule.exclusive != hit.rule.exclusive]
        chosen.append(hit)
    return chosen


def _change_set(document: MemoryDocument, hits: Iterable[_Hit], rules: RuleSet) -> ChangeSet:
    chosen = _select(hits)
    existing = {_norm(f.content) for f in document.facts}
    new_facts: list[NewFact] = []
    removals: list[FactRemoval] = []
    removed: set[str] = set()
    for hit in chosen:
        if _norm(hit.content) not in existing:
            new_facts.append(
                NewFact(
                    content=hit.content,
                    category=hit.rule.category,
                    confidence=hit.rule.confidence,
                    source_error=hit.source_error,
                    scope="task" if hit.task else "user",
                    durability="temporary" if hit.task else "durable",
                )
            )
        if hit.task or not hit.rule.exclusive:
            continue
        form = rules.exclusive_forms[hit.rule.exclusive]
        for fact in document.facts:
            if (
                fact.id not in removed
                and not fact.is_manual
                and _norm(fact.content) != _norm(hit.content)
                and form.fullmatch(fact.content.strip())
            ):
                removed.add(fact.id)
                replaced = len(new_facts) - 1 if _norm(hit.content) not in existing else None
                removals.append(
                    FactRemoval(
                        fact.id, reason=f"superseded by: {hit.content}", replaced_by=replaced
                    )
                )
    return ChangeSet(
        summaries=_summaries(document, [h for h in chosen if not h.task], rules),
        new_facts=tuple(new_facts),
        removals=tuple(removals),
    )


def _summaries(
    document: MemoryDocument, hits: Sequence[_Hit], rules: RuleSet
) -> tuple[SummaryUpdate, ...]:
    updates: list[SummaryUpdate] = []
    for section in USER_SECTIONS:
        clauses = [h for h in hits if section in h.rule.sections]
        if not clauses:
            continue
        current = document.summary(section)
        merged = _merge_summary(current, clauses, rules)
        if merged != current.strip():
            updates.append(SummaryUpdate(section=section, summary=merged))
    return tuple(updates)


def _merge_summary(current: str, hits: Sequence[_Hit], rules: RuleSet) -> str:
    """Existing clauses plus the new ones: superseded clauses replaced, repeats skipped,
    the oldest clauses dropped when the text would pass ``MAX_SUMMARY_CHARS``."""
    clauses = [c.strip(" .") for c in _CLAUSE_SPLIT.split(current) if c.strip(" .")]
    changed = False
    for hit in hits:
        new = _norm(hit.content)
        if hit.rule.exclusive:
            form = rules.exclusive_forms[hit.rule.exclusive]
            kept = [c for c in clauses if _norm(c) == new or not form.fullmatch(c)]
            changed = changed or len(kept) != len(clauses)
            clauses = kept
        if any(new in _norm(c) for c in clauses):
            continue
        clauses.append(hit.content)
        changed = True
    if not changed:
        return current.strip()
    joiner = "；" if not any(_LATIN.search(c) for c in clauses) else "; "
    while len(clauses) > 1 and len(joiner.join(clauses)) > MAX_SUMMARY_CHARS:
        clauses.pop(0)
    text = joiner.join(clauses)
    if len(text) > MAX_SUMMARY_CHARS:
        text = text[: MAX_SUMMARY_CHARS - 1].rstrip() + "…"
    return text
