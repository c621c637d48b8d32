"""What a model sends is evidence, not truth (DESIGN rule 13): the checks ``apply`` runs on
every summary, fact and removal an extractor proposes.

- A placeholder (``...``, ``N/A``, ``none``, ``TBD``, ``<summary>``) or an echo of the
  prompt's own instructions is not content.
- Text that comes from the assistant's turns and not the user's is not a fact about the
  user, unless the user confirmed that answer.
- A removal needs a real reason and a fact plausibly related to its replacement or to
  what the user just said.

Pure functions over plain text; words are compared as crude stems (English) and character
bigrams (Chinese, Japanese, Korean), which is enough to tell a copy from a paraphrase.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

from memfold.model import Message
from memfold.signals import detect_reinforcement

__all__ = [
    "Evidence",
    "content_problem",
    "content_words",
    "echo_of_instructions",
    "from_assistant",
    "is_placeholder",
    "removal_problem",
    "sentences",
]

_CJK: Final = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN: Final = re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+")
_CJK_CHAR: Final = re.compile(f"[{_CJK}]")
_STOPWORDS: Final = frozenset(
    """
    a an the and or but if of to in on at by for from with as into about over than then so
    is are was were be been being am do does did has have had i me my mine you your he she
    his her they them their we our it its this that these those there here not no yes very
    also just only all any some each every can could will would should may might must shall
    user users
    """.split()  # noqa: SIM905 - a word list reads better as running text
)
# Words a fact uses to frame what the user said ("Prefers …", "Wants …", "用户…"): they
# tell nothing about where the content came from.
_FRAMING: Final = frozenset(
    "prefer want like love enjoy dislike hate use need usually always often currently now".split()  # noqa: SIM905 - as above
)
_FRAMING_ZH: Final = ("用户", "该用户")

_PLACEHOLDER_WORDS: Final = frozenset(
    {
        "n/a",
        "na",
        "none",
        "null",
        "nil",
        "nothing",
        "empty",
        "tbd",
        "tba",
        "todo",
        "unknown",
        "unspecified",
        "not specified",
        "not applicable",
        "not available",
        "no information",
        "no info",
        "no data",
        "no update",
        "no change",
        "no changes",
        "same",
        "same as before",
        "unchanged",
        "string",
        "text",
        "summary",
        "content",
        "reason",
        "example",
        "placeholder",
        "lorem ipsum",
        "无",
        "暂无",
        "未知",
        "空",
    }
)
_EDGE_CHARS: Final = " \t\r\n\"'`<>[]{}()*_.:;,!?…-—–/\\|#=+~"
# A template slot left in: "<summary>", "[user's name]", "{role}", "<...>".
# (Not a redaction marker: "[REDACTED:github_token]" stands for real content.)
_SLOT: Final = re.compile(r"(?!\[REDACTED\b)[<\[{][^<>\[\]{}\n]{0,80}[>\]}]")
_ELLIPSIS: Final = re.compile(r"\.{2,}|…+")
# A memory ref ("f3") copied where content belongs.
_REF_ONLY: Final = re.compile(r"f\d{1,4}", re.IGNORECASE)
_SENTENCE_END: Final = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])|\n+")

#: Share of a text's words found in one instruction clause that makes it an echo.
ECHO_SHARE: Final = 0.8
#: A fact is the assistant's when at least this share of its words is in one assistant
#: message and less than ``USER_SHARE`` of them in every user message.
ASSISTANT_SHARE: Final = 0.6
USER_SHARE: Final = 0.25
#: Shorter texts are too short to tell a copy from a paraphrase.
MIN_WORDS_TO_JUDGE: Final = 3


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) >= 4:
        word = word[:-1]
    return word


def _words(text: str, *, framing: bool) -> frozenset[str]:
    if not framing:
        for prefix in _FRAMING_ZH:
            text = text.replace(prefix, " ")
    out: set[str] = set()
    for token in _TOKEN.findall(text.casefold()):
        if _CJK_CHAR.match(token):
            if len(token) == 1:
                out.add(token)
            out.update(token[i : i + 2] for i in range(len(token) - 1))
            continue
        if token in _STOPWORDS or (token.isdigit() and len(token) < 2):
            continue
        stem = _stem(token)
        if framing or stem not in _FRAMING:
            out.add(stem)
    return frozenset(out)


def content_words(text: str) -> frozenset[str]:
    """The words that carry a text's content: stems without stopwords or framing verbs
    ("prefers", "wants", "用户"), CJK as character bigrams."""
    return _words(text, framing=False)


def is_placeholder(text: str) -> bool:
    """True for text with no content: empty, ``...``, ``N/A``, ``none``, ``TBD``, a
    template slot like ``<summary>`` or ``[name]``, or only such pieces and labels."""
    stripped = text.strip()
    core = stripped.strip(_EDGE_CHARS)
    if not core:
        return True
    if " ".join(core.casefold().split()) in _PLACEHOLDER_WORDS:
        return True
    if _SLOT.fullmatch(stripped) or _REF_ONLY.fullmatch(core):
        return True
    if _ELLIPSIS.search(stripped) or _SLOT.search(stripped):
        # "Work: ...", "<role> at <company>": what is left once the slots go is only labels.
        rest = _SLOT.sub(" ", _ELLIPSIS.sub(" ", stripped))
        pieces = [p.strip(_EDGE_CHARS) for p in re.split(r"[,;:\n]", rest)]
        return all(len(_words(p, framing=True)) <= 1 for p in pieces)
    return False


def _clauses(instructions: Iterable[str]) -> list[frozenset[str]]:
    out = []
    for text in instructions:
        for clause in re.split(r"[.;:()\n]|\s-\s", text):
            words = _words(clause, framing=True)
            if words:
                out.append(words)
    return out


class Evidence:
    """What the extractor saw: the prompt's fixed instructions and the new turns.

    ``turns=None`` means unknown (a caller of ``apply`` that passes no conversation): the
    checks that need the turns are then skipped.
    """

    def __init__(
        self, instructions: Sequence[str] = (), turns: Sequence[Message] | None = None
    ) -> None:
        self.instructions = tuple(instructions)
        self.turns = None if turns is None else tuple(turns)
        self.clauses = _clauses(self.instructions)
        self.user: list[frozenset[str]] = []
        self.assistant: list[frozenset[str]] = []
        self.confirmed: list[frozenset[str]] = []  # assistant answers the user confirmed
        turns = self.turns or ()
        for position, message in enumerate(turns):
            words = content_words(message.content)
            if message.role == "user":
                self.user.append(words)
            elif message.role == "assistant":
                after = turns[position + 1] if position + 1 < len(turns) else None
                if after is not None and after.role == "user" and detect_reinforcement([after]):
                    self.confirmed.append(words)
                else:
                    self.assistant.append(words)
        self.user_words: frozenset[str] = frozenset().union(*self.user)


def echo_of_instructions(text: str, evidence: Evidence) -> bool:
    """True when nearly every word of ``text`` is in one clause of the prompt's own
    instructions (a field description or rule copied back as content)."""
    words = _words(text, framing=True)
    if not words:
        return False
    need = ECHO_SHARE * len(words)
    return any(len(words & clause) >= need for clause in evidence.clauses)


def _share(words: frozenset[str], others: Iterable[frozenset[str]]) -> float:
    return max((len(words & other) / len(words) for other in others), default=0.0)


def from_assistant(text: str, evidence: Evidence, *, also_users: Sequence[str] = ()) -> bool:
    """True when ``text`` repeats an assistant message and not what the user said.

    ``also_users`` are texts that count as the user's (e.g. a summary's old text).
    """
    if evidence.turns is None:
        return False
    words = content_words(text)
    if len(words) < MIN_WORDS_TO_JUDGE:
        return False
    if _share(words, evidence.assistant) < ASSISTANT_SHARE:
        return False
    users = [*evidence.user, *evidence.confirmed, *map(content_words, also_users)]
    return _share(words, users) < USER_SHARE


def removal_problem(
    *,
    reason: str,
    fact_content: str,
    fact_category: str,
    replacement: tuple[str, str] | None,
    evidence: Evidence,
) -> str | None:
    """Why a proposed removal must not apply, or None.

    ``replacement`` is (content, category) of the new fact replacing it, when there is one.
    A removal needs a reason that is not a placeholder or an echo, and a fact related to
    its replacement (shared content words or the same category) or to the user's new
    turns (shared content words). Only judged when the turns are known.
    """
    if evidence.turns is None:
        return None
    if is_placeholder(reason):
        return "removal without a real reason" if reason.strip() else "removal without a reason"
    if echo_of_instructions(reason, evidence):
        return "removal reason only repeats the prompt's instructions"
    fact_words = content_words(fact_content)
    if replacement is not None:
        content, category = replacement
        if category == fact_category or fact_words & content_words(content):
            return None
    if fact_words & evidence.user_words:
        return None
    if replacement is not None:
        return "removal of a fact unrelated to its replacement and to the new turns"
    return "removal of a fact unrelated to the new turns"


def sentences(text: str) -> list[str]:
    """``text`` split after sentence ends (``. ! ?`` and their CJK forms) and newlines."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def content_problem(text: str, evidence: Evidence, *, also_users: Sequence[str] = ()) -> str | None:
    """Why ``text`` (a fact, or one sentence of a summary) is not content about the user,
    or None: a placeholder, an echo of the prompt, or the assistant's words."""
    if is_placeholder(text):
        return "placeholder, not content"
    if echo_of_instructions(text, evidence):
        return "echo of the prompt's instructions"
    if from_assistant(text, evidence, also_users=also_users):
        return "the assistant's words, not the user's"
    return None
