"""Facts read as facts about the user: the user's own words put in the third person.

"give me the commands in one block I can copy" → "give the commands in one block they
can copy"; "Writing my first novel" → "Writing their first novel"; "回答我的时候" →
"回答的时候". A fact that opens with the user's verb takes the third person ("go to the
gym on Mondays" → "Goes to the gym on Mondays").
"""

from __future__ import annotations

import re

__all__ = ["as_user", "conjugate", "third_person"]

_EN_PRONOUNS = {
    "i'm": "they're",
    "i am": "they are",
    "i've": "they've",
    "i'd": "they'd",
    "i'll": "they'll",
    "i was": "they were",
    "i": "they",
    "me": "them",
    "my": "their",
    "mine": "theirs",
    "myself": "themselves",
    "we're": "they're",
    "our": "their",
    "ours": "theirs",
    "us": "them",
}
# "give me X" → "give X": the assistant gives it to the user anyway.
_EN_DATIVE = re.compile(
    r"\b(?P<verb>give|show|send|tell|write|answer|reply to|call|remind|ask|teach|help)\s+me\b",
    re.IGNORECASE,
)
_EN_PRONOUN = re.compile(
    r"(?-i:\bI(?:'m| am|'ve|'d|'ll| was)?\b)|\b(?:me|my|mine|myself|we're|our|ours|us)\b",
    re.IGNORECASE,
)
# Chinese: "回答我" → "回答", "我的" → "", "给我" → "给"; a subject "我" is dropped.
_ZH_OBJECT = re.compile(r"(?:给|帮|为|替)我(?=[\u4e00-\u9fff])|(?<=[回答复告诉叫提醒问教和跟对])我")
_ZH_MINE = re.compile(r"^我的|(?<=[，,])我的|^我(?!们)")
_ZH_SELF_LEFT = re.compile(r"我(?!们)")
_ZH_TEAM = re.compile(r"我们(?=\s?(?:公司|团队|组|部门|team))")

_IRREGULAR = {
    "be": "is",
    "am": "is",
    "'m": "is",
    "have": "has",
    "do": "does",
    "go": "goes",
    "don't": "doesn't",
    "can": "can",
    "can't": "can't",
    "will": "will",
    "won't": "won't",
    "must": "must",
    "should": "should",
    "would": "would",
    "could": "could",
    "may": "may",
    "might": "might",
}
# Words a habit may open with before its verb ("usually cycles", "batch cooks").
_LEADING = frozenset(
    {
        *("usually", "always", "normally", "generally", "often", "typically", "only"),
        *("mostly", "also", "still", "never", "rarely", "sometimes", "really", "just"),
        *("batch", "meal", "speed", "power", "deep", "cold", "home", "bulk", "slow"),
    }
)


def _third_person_verb(verb: str) -> str:
    low = verb.casefold()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def conjugate(phrase: str) -> str:
    """Third person of a phrase that opens with the user's verb ("go to the gym" →
    "goes to the gym", "batch cook on Sundays" → "batch cooks on Sundays")."""
    words = phrase.split(" ")
    for index, word in enumerate(words[:3]):
        if word.casefold() in _LEADING and index + 1 < len(words):
            continue
        words[index] = _third_person_verb(word)
        break
    return " ".join(words)


def third_person(text: str) -> str:
    """``text`` with the user's first-person words in the third person."""
    if _EN_PRONOUN.search(text):
        text = _EN_DATIVE.sub(lambda m: m.group("verb"), text)

        def swap(match: re.Match[str]) -> str:
            word = match.group()
            return _EN_PRONOUNS.get(word.casefold(), word)

        text = _EN_PRONOUN.sub(swap, text)
    if "我" in text:
        text = _ZH_OBJECT.sub("", text)
        text = _ZH_MINE.sub("", text)
        text = _ZH_SELF_LEFT.sub("自己", text)
    return text


# Corrections name the user: "No, I'm in Leeds, not London" → "Correction: the user is in
# Leeds, not London" (a correction is shown first, on its own, so it needs a subject).
_PAST_OR_MODAL = frozenset(
    {
        *("meant", "said", "was", "had", "did", "got", "went", "told", "thought", "knew"),
        *("made", "took", "gave", "wrote", "ran", "came", "saw", "left", "bought", "sent"),
        *("spent", "built", "paid", "asked", "wanted", "can", "could", "will", "would"),
        *("should", "must", "might", "may", "can't", "won't", "wouldn't", "never", "also"),
        *("only", "just", "really", "still", "already", "always", "actually"),
    }
)
_AS_USER = re.compile(
    r"(?-i:\bI)(?:'m| am)\b|(?-i:\bI)(?:'ve| have)\b|(?-i:\bI)(?:'d)\b|"
    r"(?-i:\bI) (?P<verb>[a-z']+)\b|(?-i:\bI\b)|\b(?:my|mine)\b|\bme\b|\bwe(?:'re| are)\b|"
    r"\bwe (?P<wverb>[a-z']+)\b|\bour\b|\bus\b",
    re.IGNORECASE,
)
_AS_USER_FIXED = {
    "i'm": "the user is",
    "i am": "the user is",
    "i've": "the user has",
    "i have": "the user has",
    "i'd": "the user would",
    "i": "the user",
    "my": "the user's",
    "mine": "the user's",
    "me": "the user",
    "we're": "the team is",
    "we are": "the team is",
    "our": "the team's",
    "us": "the team",
}


def _subject_verb(subject: str, verb: str) -> str:
    if verb.casefold() in _PAST_OR_MODAL or verb.endswith("ed"):
        return f"{subject} {verb}"
    return f"{subject} {_third_person_verb(verb)}"


def as_user(text: str) -> str:
    """``text`` with the user (and their team) named instead of "I", "my", "we", "我"."""

    def swap(match: re.Match[str]) -> str:
        if match.group("verb"):
            return _subject_verb("the user", match.group("verb"))
        if match.group("wverb"):
            return _subject_verb("the team", match.group("wverb"))
        return _AS_USER_FIXED.get(match.group().casefold(), match.group())

    text = _AS_USER.sub(swap, text)
    text = _ZH_TEAM.sub("", text).replace("我们", "团队")
    return text.replace("我的", "用户的").replace("我", "用户")
