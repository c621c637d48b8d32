"""Content terms of short memory texts, for "does this text mention that fact?".

Used by ``forgetting`` (is a removed fact still mentioned in a summary?) and ``history``
(which user message does a new fact come from?). Latin-script words are case-folded
whole words; Chinese, Japanese and Korean runs, written without spaces, give character
bigrams. Function words and the verbs fact templates start with ("Lives in", "Prefers")
are left out: they say nothing about *which* fact a text is about. Pure and linear.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["terms"]

_CJK_CLASS = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# A word: letters/digits, with inner . + # ' - kept ("3.12", "c++", "node.js", "don't").
_TOKEN = re.compile(rf"[{_CJK_CLASS}]+|[^\W_{_CJK_CLASS}](?:[\w.+#'-]*[^\W_{_CJK_CLASS}])?[+#]*")
_CJK_RUN = re.compile(rf"[{_CJK_CLASS}]+")

_STOP_WORD_TEXT = """
    a an the and or but nor of in on at to for from by with without into onto about over
    under as is am are was were be been being it its this that these those there here
    i me my mine we our you your he him his she her they them their user user's users
    has have had do does did not no yes very so too also just only more most less than
    then now still always never often usually sometimes really quite much many some any
    all each every other another same such own via per etc like likes liked dislike
    dislikes disliked love loves loved hate hates hated prefer prefers preferred want
    wants wanted wish wishes need needs use uses used using live lives lived living work
    works worked working name named called is's s t re ve ll d m would should could can
    will may might must shall correction
"""
_STOP_WORDS = frozenset(_STOP_WORD_TEXT.split())
# Bigrams of the words fact templates and ordinary Chinese put around the content.
_STOP_BIGRAM_TEXT = """
    用户 我是 我的 我在 住在 生活 喜欢 不喜 讨厌 偏好 希望 以后 回答 名字 叫做 工作 使用
    正在 现在 目前 一个 这个 那个 他们 我们 你们 就是 还是 但是 因为 所以 如果 可以 需要
    想要 觉得 认为 已经 没有 不是 什么 怎么 时候
"""
_STOP_BIGRAMS = frozenset(_STOP_BIGRAM_TEXT.split())


def terms(text: str) -> frozenset[str]:
    """The content terms of ``text``: case-folded words and CJK bigrams, minus
    function words (single Latin letters are dropped, single CJK characters kept)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    found: set[str] = set()
    for token in _TOKEN.findall(folded):
        if _CJK_RUN.fullmatch(token):
            if len(token) == 1:
                found.add(token)
            found.update(
                token[i : i + 2]
                for i in range(len(token) - 1)
                if token[i : i + 2] not in _STOP_BIGRAMS
            )
        elif len(token) > 1 and token not in _STOP_WORDS:
            found.add(token)
    return frozenset(found)
