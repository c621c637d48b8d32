"""The offline extractor: explicit self-statements found by patterns, English and Chinese.

``RuleExtractor`` reads only what the user said themselves (``_rule_text`` drops code,
logs, pasted and quoted text, transcripts and role-play; plus, for a correction, the
assistant turn it corrects) and proposes a fact for every explicit statement a pattern
recognises: "I'm a beekeeper in Somerset" → ``Is a beekeeper``, ``Based in Somerset``;
"我是做财务的" → ``是做财务的``. It is deterministic and cheap, so it is the default when no
LLM is configured. It proposes facts only, never summaries, so the injected block says
nothing twice. A new value of a single-valued attribute (home, employer, role, name…) or
the opposite of a preference ("Likes X" / "Dislikes X", "Prefers short answers" /
"Prefers detailed answers") replaces the old fact: the change set removes it with the new
one as its replacement.

Patterns live in YAML files (``memfold/data/rules/*.yaml``, loaded by ``_rule_files``);
users add their own with ``RuleExtractor(extra_pattern_files=[...])``. The file format is
described at the top of ``common.yaml``.
"""

from __future__ import annotations

import logging
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
from memfold.extract._rule_text import (
    MAX_HEAD_CHARS,
    MAX_TAIL_CHARS,
    capped,
    carry_subject,
    readable,
    role_play,
    sentences,
    zh_clauses,
)
from memfold.extract._stance import answer_language, opposed, stance_key
from memfold.extract._wording import as_user, conjugate, third_person
from memfold.extract.base import (
    ChangeSet,
    Extraction,
    ExtractionRequest,
    FactRemoval,
    NewFact,
    Usage,
)
from memfold.model import Fact, MemoryDocument

__all__ = ["RuleExtractor"]

logger = logging.getLogger("memfold.extract.rules")

#: Longest captured value kept in a fact; longer captures are not explicit statements.
MAX_VALUE_CHARS = 120
#: ``source_error`` is the first sentence of the corrected assistant turn, cut to this.
MAX_SOURCE_ERROR_CHARS = 200

_LATIN = re.compile(r"[A-Za-z]")
_HAS_WORD = re.compile(r"[^\W_]")
_MARKUP = re.compile(r"\*\*|__|^#+ |^ ?[-*] ", re.MULTILINE)
_QUESTION_NEXT = re.compile(r" ?[?？]")
# Words a correction and the assistant sentence it corrects share ("MySQL", "Munich").
_WORD = re.compile(r"[a-z0-9][a-z0-9+#.'-]*[a-z0-9+#]")
_COMMON_WORDS = frozenset(
    {
        *("the", "and", "not", "but", "for", "with", "that", "this", "then", "than", "you"),
        *("your", "you're", "i'm", "it's", "was", "are", "were", "have", "has", "had", "use"),
        *("all", "any", "can", "will", "would", "should", "what", "which", "who", "how"),
        *("why", "when", "where", "there", "here", "from", "into", "just", "also", "only"),
        *("very", "more", "most", "some", "such"),
    }
)
_SPACES = re.compile(r"\s+")
# "I used to live in Paris, now I live in Berlin": the clause about now is read (and
# guarded) on its own, so the past in the first clause neither leaks into nor vetoes it
_NOW_CLAUSE = re.compile(
    r" ?[,;] ?(?:(?:but|and) )?(?=(?:now|these days|nowadays|today|currently) ?,? ?I\b)",
    re.IGNORECASE,
)
# (Chinese needs no such split: a past marker vetoes only its own clause.)
# A correction may open the message or any clause of its first sentence ("I'm Sara, by
# the way — it's Sara, not Sarah").
_FIRST_SENTENCE_PIECES = re.compile(r" ?(?:,|—|–| - |;|，) ?")  # where a clause starts
_EDGE_PUNCT = "\"'`*_ \t,.;:!?，。；：！？、…~～()（）[]【】"
_TOKEN = re.compile(r"[a-z]+|我")
# A reply this short may answer the assistant's last question ("Leeds", "护士").
MAX_ANSWER_CHARS = 40
MAX_ANSWER_WORDS = 5
MAX_QUESTION_CHARS = 400
_LAST_QUESTION = re.compile(r"[^.!?。！？\n]{3,200}[?？]\s*$")
_QUESTION_END = re.compile(r"[?？]")
_ARTICLE = re.compile(r"(?:an?|the|my) ", re.IGNORECASE)
_NO_ANSWER = re.compile(
    r"(?:no|nope|none|nothing|n/a|not really|yes|yeah|yep|ok|okay|sure|thanks|thank you|"
    r"why|what|idk|i don't know|not sure|没有|无|不知道|好的|谢谢|是的|对|嗯|不用)[ ,.!]*",
    re.IGNORECASE,
)
_PAIRS = (("(", ")"), ("（", "）"), ("“", "”"))
_SARCASM_TAG = re.compile(r"(?:^|\s)/s(?:arcasm)?\s*$", re.IGNORECASE)
# A clause whose subject is someone else yields nothing ("我老公是医生").
_SKIPPED_SUBJECTS = frozenset({"other", "family"})


@dataclass(frozen=True, slots=True)
class _Hit:
    content: str
    value: str
    rule: Rule
    source_error: str | None
    task: bool


# --- the assistant sentence a correction is about ---------------------------------------


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 2} - _COMMON_WORDS


def _first_sentence(text: str, correction: str = "") -> str | None:
    """What the assistant got wrong, cut to 200: the first of its sentences that shares a
    word with the user's ``correction`` ("We don't use MySQL" → "Since you're on MySQL 8,
    …"), else its first informative sentence ("Sure!" is skipped)."""
    found: list[str] = []
    said = [s.text for s in sentences(_MARKUP.sub("", readable(capped(text))), limit=None)]
    wanted = _words(correction)
    shared = [s for s in said if wanted & _words(s)] if wanted else []
    if shared:
        found.append(shared[0])
    for short in () if shared else said:
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

    Each user message is read up to ``max_head_chars`` from its start and
    ``max_tail_chars`` from its end (statements about oneself open or close a message;
    the middle of a long one is pasted material).

    Raises (at construction):
        ConfigError: a pattern file cannot be read, is not valid YAML, or has a bad rule;
            the message names the file, the rule and the problem.
    """

    name = "rules"

    def __init__(
        self,
        extra_pattern_files: Sequence[str | Path] = (),
        *,
        max_head_chars: int = MAX_HEAD_CHARS,
        max_tail_chars: int = MAX_TAIL_CHARS,
        log_misses: bool = True,
    ) -> None:
        """``log_misses=False`` leaves out the INFO line for a conversation in which
        nothing was recognised (the extraction gate asks about every conversation)."""
        if isinstance(extra_pattern_files, str | Path):
            raise TypeError("extra_pattern_files must be a sequence of paths, not one path")
        if max_head_chars < 0 or max_tail_chars < 0:
            raise ValueError("max_head_chars and max_tail_chars must be >= 0")
        self._rules = load_rules(extra_pattern_files) if extra_pattern_files else builtin_rule_set()
        self._head = max_head_chars
        self._tail = max_tail_chars
        self._log_misses = log_misses
        self._correction_rules = tuple(r for r in self._rules.rules if r.category == CORRECTION)
        statements = [r for r in self._rules.rules if r.category != CORRECTION]
        self._latin_rules = tuple(r for r in statements if not r.cjk)
        self._cjk_rules = tuple(r for r in statements if r.cjk)
        self._question_rules = tuple(r for r in statements if r.question)
        self._family_rules = tuple(r for r in self._cjk_rules if r.family)

    def propose(self, request: ExtractionRequest) -> Extraction:
        """Facts for the explicit statements in the request's user messages."""
        hits: list[_Hit] = []
        corrected: str | None = None
        in_role_play = False
        said = 0
        for message in request.messages:
            if message.role == "assistant":
                corrected = message.content
            elif message.role == "user":
                text = message.content
                if len(text) > self._head + self._tail:
                    logger.debug(
                        "rules read %d of %d characters of a message (head and tail)",
                        self._head + self._tail,
                        len(text),
                    )
                plain = readable(capped(text, self._head, self._tail))
                plain, in_role_play = role_play(plain, in_role_play)
                if corrected and not in_role_play:
                    plain = self._answer(corrected, plain)
                hits.extend(self._scan(plain, corrected, request.signals.correction))
                said += 1
        if said and not hits and self._log_misses:
            logger.info(
                "the rule extractor recognised no statement in %d user message(s) of thread "
                "%s; it knows the statement shapes listed in the README (Extractors); "
                "configure an llm for broader extraction",
                said,
                request.thread_id,
            )
        return Extraction(_change_set(request.document, hits, self._rules), Usage())

    # -- scanning --

    def _answer(self, asked: str, reply: str) -> str:
        """A short reply to the assistant's question about the user, as the statement it
        makes ("Where are you based?" → "Leeds" → "I live in Leeds")."""
        short = reply.strip().rstrip("。.!！")
        if (
            not short
            or len(short) > MAX_ANSWER_CHARS
            or len(short.split()) > MAX_ANSWER_WORDS
            or _QUESTION_END.search(short)
            or _NO_ANSWER.fullmatch(short)
        ):
            return reply
        last = _LAST_QUESTION.search(readable(capped(asked))[-MAX_QUESTION_CHARS:])
        if last is None:
            return reply
        for question, statement in self._rules.answers:
            if question.search(last.group()):
                if statement.endswith(" as {answer}") and not _ARTICLE.match(short):
                    short = ("an " if short[:1].lower() in "aeiou" else "a ") + short
                return statement.replace("{answer}", short)
        return reply

    def _scan(self, plain: str, corrected: str | None, hinted: bool) -> Iterator[_Hit]:
        if _SARCASM_TAG.search(plain):
            return  # "… /s": the whole message is sarcastic
        yield from self._corrections(plain, corrected, hinted)
        sarcasm = self._rules.sarcasm
        for sentence in sentences(plain):
            if sarcasm and sarcasm.search(sentence.text):
                continue
            if sentence.question:
                # standing requests asked as questions: "Could you keep answers short?"
                yield from self._matches(self._question_rules, sentence.text, False)
                if CJK.search(sentence.text):
                    for clause in zh_clauses(sentence.text)[1:]:
                        yield from self._matches(self._question_rules, clause.text, False)
            if sentence.statement is None:
                continue
            for part in _NOW_CLAUSE.split(sentence.statement):
                if part.strip():
                    yield from self._read(part.strip())

    def _vetoed(self, text: str) -> bool:
        return bool(
            (self._rules.guard and self._rules.guard.search(text))
            or (self._rules.past_marker and self._rules.past_marker.search(text))
        )

    def _unhedged(self, text: str) -> str:
        """``text`` up to the clause a hedge is in ("I get seasick, so whale watching is
        probably out" → "I get seasick")."""
        hedge = self._rules.hedge.search(text) if self._rules.hedge else None
        if hedge is None:
            return text
        cut = max(text.rfind(mark, 0, hedge.start()) for mark in (",", ";", " — ", "，", "；"))
        return text[: max(cut, 0)]

    def _read(self, part: str) -> Iterator[_Hit]:
        task = bool(self._rules.task_marker and self._rules.task_marker.search(part))
        english = self._unhedged(part)
        if _LATIN.search(english) and not self._vetoed(english):
            yield from self._matches(self._latin_rules, carry_subject(english), task)
        if not CJK.search(part):
            return
        guard = self._rules.guard
        hedge = self._rules.hedge
        past = self._rules.past_marker
        for clause in zh_clauses(part):
            if (guard and guard.search(clause.text)) or (hedge and hedge.search(clause.text)):
                break  # a hypothetical, a guess or reported speech runs to the sentence end
            if past and past.search(clause.text):
                continue
            if clause.subject == "family":
                yield from self._matches(self._family_rules, clause.text, task)
            elif clause.subject not in _SKIPPED_SUBJECTS:
                yield from self._matches(self._cjk_rules, clause.text, task)

    def _matches(self, rules: Sequence[Rule], text: str, task: bool) -> list[_Hit]:
        found: list[tuple[int, _Hit]] = []
        words = set(_TOKEN.findall(text.casefold()))
        if "im" in words:
            words.add("i")  # "Im a teacher"
        for rule in rules:
            if rule.needs is not None and rule.needs not in words:
                continue
            for match in rule.regex.finditer(text):
                rendered = self._render(rule, match)
                if rendered:
                    content, value = rendered
                    found.append((match.start("value"), _Hit(content, value, rule, None, task)))
        if any(not hit.rule.fallback for _, hit in found):
            found = [item for item in found if not item[1].rule.fallback]
        # in the order they were said, so the later of two roles in a sentence wins
        found.sort(key=lambda item: item[0])
        return [hit for _, hit in found]

    def _corrections(self, plain: str, corrected: str | None, hinted: bool) -> Iterator[_Hit]:
        # A correction opens the message (or a clause of its first sentence); with the
        # capture-time hint, any sentence may.
        said = list(sentences(plain))
        starts = [plain.lstrip()]
        if said:
            first = said[0].text
            starts.extend(first[m.end() :] for m in _FIRST_SENTENCE_PIECES.finditer(first))
        if hinted:
            starts.extend(s.text for s in said if not s.question)
        for start in starts:
            for rule in self._correction_rules:
                match = rule.regex.match(start)
                # "不对吧，这么贵？" asks; it does not correct.
                if match and not _QUESTION_NEXT.match(start, match.end()):
                    rendered = self._render(rule, match)
                    if rendered:
                        source_error = _first_sentence(corrected, plain) if corrected else None
                        yield _Hit(rendered[0], rendered[1], rule, source_error, False)
                        return

    def _clean(self, value: str) -> str:
        raw = value = _SPACES.sub(" ", value).strip()
        value = value.strip(_EDGE_PUNCT)
        for _ in range(3):
            before = value
            for trim in self._rules.trims:
                value = trim.sub("", value).strip(_EDGE_PUNCT)
            if value == before:
                break
        return _closed(raw, value)

    def _rejected(self, rule: Rule, value: str) -> bool:
        if not value or len(value) > MAX_VALUE_CHARS or not _HAS_WORD.search(value):
            return True
        folded = value.casefold()
        if folded in rule.reject or folded in self._rules.reject_values:
            return True
        if rule.category == CORRECTION:
            return False  # "it's Sara, not Sarah" opens with a pronoun
        leading = self._rules.reject_leading_words
        if folded.split(" ", 1)[0] in leading:
            return True
        return bool(CJK.match(folded)) and any(
            folded.startswith(word) for word in leading if CJK.match(word)
        )

    def _render(self, rule: Rule, match: re.Match[str]) -> tuple[str, str] | None:
        """(fact content, cleaned value), or None when the value is not a statement."""
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
        if self._rejected(rule, value):
            return None
        if rule.conjugate:
            value = conjugate(value)

        def fill(placeholder: re.Match[str]) -> str:
            name = placeholder.group(1)
            return value if name == "value" else self._clean(match.group(name) or "")

        content = _SPACES.sub(" ", PLACEHOLDER.sub(fill, rule.template)).strip()
        content = as_user(content) if rule.category == CORRECTION else third_person(content)
        content = _closed(content, content.strip(_EDGE_PUNCT + "，"))
        if content[:1].isascii() and content[:1].islower():
            content = content[0].upper() + content[1:]
        return content, value


def _closed(raw: str, stripped: str) -> str:
    """``stripped`` with the closing quote or bracket stripping took from an object it
    opens: "Has two kids (7 and 10)", 'Dislikes it when answers start with "Great"'."""
    for opening, closing in _PAIRS:
        if raw.rstrip().endswith(closing) and stripped.count(opening) > stripped.count(closing):
            return stripped + closing
    if raw.rstrip().endswith('"') and stripped.count('"') % 2:
        return stripped + '"'
    return stripped


# --- change set ------------------------------------------------------------------------


def _select(hits: Iterable[_Hit]) -> list[_Hit]:
    """Drop repeats; for an exclusive attribute (name, location…) and for opposite
    preferences the last statement wins."""
    chosen: list[_Hit] = []
    seen: set[str] = set()
    for hit in hits:
        key = _norm(hit.content)
        if key in seen:
            # the same fact twice: the later rule (a user's file over a built-in) wins
            chosen = [hit if _norm(h.content) == key else h for h in chosen]
            continue
        seen.add(key)
        if not hit.task:
            chosen = [h for h in chosen if h.task or not _supersedes(hit, h)]
        chosen.append(hit)
    return chosen


def _supersedes(new: _Hit, old: _Hit) -> bool:
    if new.rule.exclusive and new.rule.exclusive == old.rule.exclusive:
        return True
    if new.rule.stance and old.rule.stance:
        return opposed(
            stance_key(new.value, new.rule.stance), stance_key(old.value, old.rule.stance)
        )
    language = answer_language(new.content)
    return language is not None and answer_language(old.content) not in (None, language)


def _replaces(hit: _Hit, fact: Fact, rules: RuleSet) -> bool:
    """Whether the new statement ``hit`` makes the stored ``fact`` untrue."""
    content = fact.content.strip()
    if hit.rule.exclusive and rules.exclusive_forms[hit.rule.exclusive].fullmatch(content):
        return True
    if hit.rule.stance:
        new = stance_key(hit.value, hit.rule.stance)
        for form, sign in rules.stance_forms:
            match = form.fullmatch(content)
            if match and opposed(new, stance_key(match.group("value"), sign)):
                return True
    language = answer_language(hit.content)
    return language is not None and answer_language(content) not in (None, language)


def _change_set(document: MemoryDocument, hits: Iterable[_Hit], rules: RuleSet) -> ChangeSet:
    chosen = _select(hits)
    existing = {_norm(f.content) for f in document.facts}
    new_facts: list[NewFact] = []
    removals: list[FactRemoval] = []
    removed: set[str] = set()
    # "No, I live in Berlin, not Munich" is one correction, not also "Lives in Berlin":
    # the statement a correction holds is not stored twice, but it still replaces the
    # old value (with the correction as the replacement).
    corrections: list[tuple[str, int | None]] = []
    for hit in chosen:
        key = _norm(hit.content)
        holder = next((index for text, index in corrections if key in text), False)
        index: int | None = None
        if holder is not False:
            index = holder
        elif key not in existing:
            index = len(new_facts)
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
        if hit.rule.category == CORRECTION:
            corrections.append((key, index))
        if hit.task:
            continue
        for fact in document.facts:
            if (
                fact.id not in removed
                and not fact.is_manual
                and _norm(fact.content) != key
                and _replaces(hit, fact, rules)
            ):
                removed.add(fact.id)
                removals.append(
                    FactRemoval(fact.id, reason=f"superseded by: {hit.content}", replaced_by=index)
                )
    return ChangeSet(new_facts=tuple(new_facts), removals=tuple(removals))
