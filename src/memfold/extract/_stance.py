"""When two preferences contradict each other.

"Likes Python" and "Dislikes Python" are a stance (+1 / -1) on the same object;
"Prefers short answers" and "Prefers detailed answers" are the same stance on one object
("answers") with opposite adjectives of one dimension (length). ``stance_key`` reduces a
preference to (object, dimension) and a sign; two preferences are ``opposed`` when they
share the key and their signs differ. ``answer_language`` reads the language a fact asks
the answers to be in ("Wants answers in English", "希望以后都用中文回答"): a user has one.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["StanceKey", "answer_language", "opposed", "stance_key"]

StanceKey = tuple[str, str, int]  # (object, dimension or "", sign)

# Opposite adjectives: dimension and direction.
_DIMENSIONS: dict[str, tuple[str, int]] = {
    **dict.fromkeys(
        (
            *("short", "shorter", "brief", "briefer", "concise", "succinct", "terse"),
            *("compact", "minimal", "quick", "snappy", "to-the-point", "简短", "简洁"),
            *("精简", "简要", "短", "简单"),
        ),
        ("length", -1),
    ),
    **dict.fromkeys(
        (
            *("long", "longer", "detailed", "verbose", "thorough", "lengthy", "in-depth"),
            *("elaborate", "comprehensive", "exhaustive", "full", "详细", "详尽", "具体"),
            *("完整", "长", "全面"),
        ),
        ("length", 1),
    ),
    **dict.fromkeys(("formal", "正式", "书面"), ("formality", 1)),
    **dict.fromkeys(("casual", "informal", "relaxed", "随意", "口语化", "轻松"), ("formality", -1)),
    **dict.fromkeys(("technical", "专业"), ("technicality", 1)),
    **dict.fromkeys(("non-technical", "plain", "通俗"), ("technicality", -1)),
}
_ZH_DIMENSION = re.compile(
    "|".join(sorted((w for w in _DIMENSIONS if not w.isascii()), key=len, reverse=True))
)
_STOP = frozenset(
    {
        *("the", "a", "an", "very", "really", "more", "much", "please", "that", "are", "is"),
        *("and", "to", "of", "in", "with", "my", "their", "your", "some", "any", "all", "be"),
        *("way", "kind", "style", "rather", "than", "over", "less", "a bit"),
    }
)
_ZH_FILLER = re.compile(r"[的一点些都很比较更太非常特别\s]")
_EN_WORD = re.compile(r"[a-z0-9+#'-]+")
_SUFFIX = re.compile(r"(?:ing|es|e|s)$")


def _stem(word: str) -> str:
    return _SUFFIX.sub("", word) if len(word) > 3 else word


def stance_key(value: str, stance: int) -> StanceKey:
    """(object, dimension, sign) of a preference for ``value`` with stance ±1."""
    text = unicodedata.normalize("NFKC", value).casefold()
    dimension, direction = "", 1
    if text.isascii():
        words = []
        for word in _EN_WORD.findall(text):
            if word in _DIMENSIONS and not dimension:
                dimension, direction = _DIMENSIONS[word]
            elif word not in _STOP:
                words.append(_stem(word))
        obj = " ".join(words)
    else:
        found = _ZH_DIMENSION.search(text)
        if found:
            dimension, direction = _DIMENSIONS[found.group()]
            text = text[: found.start()] + text[found.end() :]
        obj = _ZH_FILLER.sub("", text)
    return (obj, dimension, stance * direction)


def opposed(a: StanceKey, b: StanceKey) -> bool:
    """Whether two preferences contradict: same object and dimension, opposite signs."""
    return bool(a[0]) and a[:2] == b[:2] and a[2] != b[2]


_LANGUAGES = {
    "english": "english",
    "英文": "english",
    "英语": "english",
    "chinese": "chinese",
    "mandarin": "chinese",
    "中文": "chinese",
    "汉语": "chinese",
    "普通话": "chinese",
    "german": "german",
    "德语": "german",
    "french": "french",
    "法语": "french",
    "spanish": "spanish",
    "西班牙语": "spanish",
    "japanese": "japanese",
    "日语": "japanese",
    "korean": "korean",
    "韩语": "korean",
    "cantonese": "cantonese",
    "粤语": "cantonese",
}
_LANGUAGE_NAMES = "|".join(sorted(_LANGUAGES, key=len, reverse=True))
_ANSWER_LANGUAGE = re.compile(
    rf"\b(?:answers?|repl(?:y|ies)|respond|responses|talk|speak|explain)(?: to (?:me|them))?"
    rf"(?: only)? in (?P<en>{_LANGUAGE_NAMES})\b|"
    rf"用(?P<zh>{_LANGUAGE_NAMES})(?:来)?(?:回答|回复|交流|聊天?|说话|和我说|跟我说)",
    re.IGNORECASE,
)


def answer_language(content: str) -> str | None:
    """The language a fact asks answers to be in, or None."""
    match = _ANSWER_LANGUAGE.search(content)
    if match is None:
        return None
    return _LANGUAGES[(match.group("en") or match.group("zh")).casefold()]
