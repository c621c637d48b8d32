"""Search terms of a text, for English, Chinese and text that mixes them.

Latin, Cyrillic and other space-separated scripts are split into words, case-folded,
stripped of a small list of English function words and of plural endings. Chinese (and
Japanese kana, Korean Hangul) has no spaces, so each run of such characters becomes its
single characters (less a few function characters such as 的, 了, 是) and its overlapping
character bigrams. This was measured against the jieba segmenter on the labelled retrieval
set (``benchmarks/bench_search.py --tokenizers``): it finds more answers, needs no
dictionary, and treats words a dictionary has never seen (names, products) like any other.

Every regular expression here is a single character class with ``+``: linear time on any
input (DESIGN.md rule 14).
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["CJK_STOP_CHARS", "MIN_PREFIX", "STOPWORDS", "terms"]

# Han (with extensions and compatibility forms), kana, Bopomofo, Hangul, half-width kana.
_CJK_RANGES = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")
_WORD = re.compile(f"[^\\W_{_CJK_RANGES}]+")

#: Shortest word that matches longer words it begins (``postgres`` → ``postgresql``).
MIN_PREFIX = 4

#: English function words: they say nothing about which fact answers a message.
_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing don down during each few
    for from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just let me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own please same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves s t ll re ve d m im id ive youre
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _singular(word: str) -> str:
    """A plural ending removed (``dishes`` → ``dish``, ``stories`` → ``story``); other
    words unchanged. Deliberately light: stemming further merges words that differ."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")) or (
        len(word) >= 7 and word.endswith("oes")  # tomatoes, potatoes; not shoes, canoes
    ):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


#: Function characters left out as single-character terms (they stay inside bigrams).
CJK_STOP_CHARS = frozenset("的了是我你他她它在有和与吗呢吧啊呀也就都要会这那个么のはがをにでと")


def _cjk_terms(run: str) -> list[str]:
    """Single characters (but function characters) and overlapping bigrams of a run."""
    singles = [char for char in run if char not in CJK_STOP_CHARS]
    return singles + [run[i : i + 2] for i in range(len(run) - 1)]


@functools.lru_cache(maxsize=8192)
def _terms(text: str) -> tuple[str, ...]:
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    position = 0
    for match in _CJK_RUN.finditer(text):
        out.extend(_words(text[position : match.start()]))
        out.extend(_cjk_terms(match.group()))
        position = match.end()
    out.extend(_words(text[position:]))
    return tuple(out)


def _words(text: str) -> list[str]:
    return [_singular(w) for w in _WORD.findall(text) if w not in STOPWORDS]


def terms(text: str) -> tuple[str, ...]:
    """The search terms of ``text`` in order, repeats kept (cached per string)."""
    return _terms(text)
