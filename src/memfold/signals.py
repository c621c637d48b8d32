"""Does the user's latest talk correct the assistant, or confirm what it did?

``detect`` scans the user text among the last few kept messages for a correction ("that's
wrong", "你理解错了") and for reinforcement ("yes, exactly", "完全正确"). The patterns are
deliberately narrow: a task instruction ("redo it", "改用 Rust"), a hedge ("let me know if
that's wrong"), a negation ("not perfect", "that's not wrong") or a collision ("对不起"
contains "对") must not count, because a false correction becomes a high-confidence fact.
Nor does a correction the user takes back later in the same message ("No wait, that's
wrong. Actually yes, exactly right.", "不对。算了，你是对的").
Pure: no LLM, no IO.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from memfold.model import Message, Signals

__all__ = ["DEFAULT_WINDOW", "detect", "detect_correction", "detect_reinforcement"]

#: How many of the latest kept messages (user and assistant) are scanned.
DEFAULT_WINDOW: Final = 6

# Corrections and praise are stated up front; long pasted material (logs, documents) is
# not scanned, which keeps detection fast and avoids matching quoted text.
_SCAN_CHARS: Final = 600

# --- corrections --------------------------------------------------------------------------

_CORRECTION_EN: Final = (
    # "that's wrong", "this is incorrect", "that's not right"
    r"\b(?:that|this|it|which)(?:'s| is| was)\s+(?:just\s+|completely\s+|totally\s+|all\s+)?"
    r"(?:wrong|incorrect|not\s+(?:right|correct|true|it))\b",
    r"\b(?:that|this|it)\s+(?:isn't|wasn't)\s+(?:right|correct|true|it)\b",
    # "you're wrong", "you got it wrong", "you are mistaken"
    r"\byou(?:'re| are| were)\s+(?:(?:completely|totally|still|just)\s+)?(?:wrong|mistaken)\b",
    r"\byou(?:'ve)?\s+(?:got|have|had|get)\s+(?:it|that|this|me)\s+(?:all\s+)?wrong\b",
    r"\byou(?:'ve| have)?\s+(?:completely\s+|totally\s+)?"
    r"(?:misunderstood|misunderstand|misread|misinterpreted|confused)\b",
    r"\byou\s+made\s+(?:a|an)\s+(?:mistake|error)\b",
    r"\byour\s+(?:answer|response|reply|code|output|summary|explanation|translation|"
    r"solution|calculation|assumption)\s+(?:is|was)\s+(?:wrong|incorrect|not\s+(?:right|correct))\b",
    r"\bwrong\s+(?:answer|again)\b",
    # "not what I asked", "that's not what I meant", "I didn't ask for that"
    r"\bnot\s+what\s+i\s+(?:asked|meant|wanted|said|requested|was\s+asking)\b",
    r"\bi\s+(?:didn't|did\s+not|never)\s+(?:ask(?:ed)?|say|said|tell\s+you|told\s+you)\b",
    r"\bi\s+(?:already|just)\s+told\s+you\b|\bi\s+already\s+said\b",
    # "no, I meant …", "I meant X, not Y", "not X — I meant Y": "I mean" only with a negation
    r"(?:^|[.!?\n]\s*)(?:no|nope|nah)\b[\s,.!—–-]*(?:what\s+)?i\s+mean[t]?\b",
    r"\bi\s+meant\b(?!\s+to\b)[^.!?\n]{1,80}?[,;]?\s*(?:not|instead\s+of|rather\s+than)\b",
    # "Wrong, it's 42" / "Incorrect." — but not a bug report ("Incorrect password error")
    r"(?:^|[.!?\n]\s*)(?:wrong|incorrect)(?=\s*(?:[,.!;:—–-]|$))",
)

_CORRECTION_ZH: Final = (
    # 不对 — but not 对不对 (a question), 不对劲/不对称/不对外/不对齐/不对应, 不对吗
    r"(?<![对是])不对(?![劲称外齐应付于吗么嘛])",
    r"[你您]们?(?:又|都|完全|根本|好像|可能|似乎|还是|也|全)?"
    r"(?:理解|说|搞|弄|算|写|答|看|想|记|翻译|改|读|听)(?:错|反|偏|岔)了?",
    r"[你您]们?(?:又|完全|根本|好像|可能|似乎|还是|全)?(?:误解|误会|搞混)",
    r"[你您]们?(?:又|完全|根本|全)?错了",
    r"[你您]的?(?:理解|回答|答案|说法|结论|代码|翻译|计算)(?:有误|不对|错了|是错的)",
    r"(?:这|那)(?:个|样|里)?(?:是|就|又|也|还是)?错(?:的|了)",
    r"(?:^|[。！？\n]\s*)错了",
    r"我(?:说|问|要|想要|指|需要|想)的(?:是|并|根本|可)?不是",
    r"我的意思(?:是|并|根本)?不是",
    r"我(?:并|根本)?不是(?:这个|那个)意思",
    r"不是我(?:要|想要|问|说|需要|想)的",
    r"答非所问|文不对题",
    # 我是说 only when it negates what the assistant took: "我是说X，不是Y" / "不是，我是说…"
    r"我(?:是说|的意思是|指的是)[^。！？\n]{1,40}?(?:而)?不是",
    r"(?:^|[。！？\n]\s*)不是[，,、\s]*我(?:是说|的意思是|指的是|说的是)",
)

# Hedges and negations just before a match that cancel it: "if that's wrong", "not that
# you misunderstood", "如果你理解错了", "不是你理解错了".
_CORRECTION_VETO_BEFORE: Final = re.compile(
    r"(?:\b(?:if|whether|unless|in\s+case|not\s+sure|don't\s+think|do\s+not\s+think|doubt|"
    r"wonder|not\s+that|isn't\s+that)\b[^.!?\n]{0,24}"
    r"|(?:如果|要是|假如|万一|是否|是不是|不知道|不确定|免得|以免|怕)[^，。！？,\n]{0,10}"
    r"|不是|并不是|不是说|并非)$"
)
_VETO_AFTER: Final = re.compile(r"\s*(?:\?|？|吗|么|嘛)")

# --- reinforcement ------------------------------------------------------------------------

# "works great on Linux but not on Mac", "perfect for small projects, except …": the
# praise is about a platform or a part, and the rest of the sentence takes it back.
_CONTRAST_AFTER_EN: Final = (
    r"(?![^.!?\n]*\b(?:but|except|though|although|however|whereas|yet|doesn't|does\s+not|"
    r"don't|isn't|won't|can't|fails?|failing|crash(?:es|ed|ing)?|breaks?|broken)\b)"
)

_REINFORCEMENT_EN: Final = (
    r"(?:^|[.!?\n]\s*)(?:yes|yep|yeah|yup)?[\s,!.]*exactly\b"
    r"(?!\s+(?:what\s+i\s+(?:didn't|did\s+not|don't)|the\s+(?:problem|issue|opposite)|wrong))",
    r"\bexactly\s+(?:right|correct|it|that|what\s+i\s+(?:wanted|needed|meant|asked|"
    r"was\s+looking\s+for|had\s+in\s+mind))\b",
    r"(?:^|[.!?\n]\s*)(?:perfect|excellent|brilliant|bingo|spot\s+on|nailed\s+it|correct)"
    r"(?=\s*(?:[,.!—–-]|$|thanks\b|thank\s+you\b))",
    r"\b(?:that's|that\s+is|this\s+is|it's|it\s+is|looks|sounds)\s+"
    r"(?:just\s+|absolutely\s+|really\s+)?(?:perfect|perfectly)\b" + _CONTRAST_AFTER_EN,
    r"\b(?:that's|that\s+is)\s+(?:absolutely\s+|exactly\s+|quite\s+)?(?:right|correct)\b",
    r"\byou(?:'re| are)\s+(?:absolutely\s+|totally\s+|quite\s+|completely\s+)?(?:right|correct)\b",
    r"\byou\s+(?:got\s+it(?:\s+right)?|nailed\s+it)\b",
    r"\b(?:that's|that\s+is|this\s+is|just)\s+(?:exactly\s+)?what\s+i\s+"
    r"(?:wanted|needed|meant|was\s+looking\s+for|had\s+in\s+mind)\b",
    r"\bkeep\s+(?:doing\s+(?:that|this|it)|it\s+up|it\s+(?:like\s+)?(?:this|that)|this\s+style)\b",
    r"\b(?:great|good|nice)\s+job\b|\bwell\s+done\b|\bspot\s+on\b",
    r"(?:^|[.!?\n]\s*|\b(?:that's|this\s+is|it's|now\s+it's)\s+)(?:much|way|so\s+much)\s+better\b",
    # the answer works, said of it ("it", "your fix") or of nothing: not "Python works
    # great", "the old version works perfectly"
    r"(?:^|[.!?\n,;:]\s*)(?:(?:yes|yeah|yep|ok|okay|wow|great|thanks)[,!]?\s+)?"
    r"(?:(?:it|that|this|everything|(?:your|the|this|that|my)\s+(?:new\s+|updated\s+|fixed\s+)?"
    r"(?:fix|code|change|changes|solution|version|patch|script|query|answer|approach|"
    r"suggestion|function|config|command|regex|snippet|example|workaround))\s+)?"
    r"(?:(?:now|still|also|really|just|all)\s+)?works\s+(?:perfectly|great)\b" + _CONTRAST_AFTER_EN,
    r"\bi\s+(?:love|like)\s+(?:it|this|that)(?=\s*(?:[,.!]|$|a\s+lot\b|very\s+much\b))",
)

_REINFORCEMENT_ZH: Final = (
    r"完全正确|非常正确|回答正确|很正确",
    # "你说得对", "说得对！" — not somebody else being right ("他说得对")
    r"(?:[你您]|^|(?<=[，。！？,.!?\s]))说得(?:太|很|非常)?对(?![不吗么嘛])",
    r"(?:就|正)是这样(?:的|子)?(?=$|[，。！？,.!~\s]|吧|啊|呀)|(?:就|正)是这个意思|就这样(?:做|写|办)",
    r"(?:这|这个)?(?:就|正|正好)是我(?:想要|要|需要|想)的",
    r"这就对了|没错[，,！!\s]*就是",
    r"非常好(?![用看吃听玩像奇几])|太好了|太棒了|好极了|很棒|真棒|真不错|干得(?:好|漂亮)|做得(?:好|很好|不错)",
    r"完美(?!主义)(?![^。！？!?\n]*(?:但|可是|不过|却|除了|只是))",
    r"继续保持|保持这样|以后(?:都|就)这样|照这样|就按这个",
    r"正合我意|没毛病|(?:很|非常|十分)满意",
)

# Negations just before praise cancel it: "not perfect", "not exactly", "不完美", "不是很好".
_REINFORCEMENT_VETO_BEFORE: Final = re.compile(
    r"(?:\b(?:not|never|hardly|far\s+from|no\s+longer|if|whether|don't|do\s+not|stop)"
    r"\s+(?:\w+\s+)?|n't\s+(?:\w+\s+)?"
    r"|不|没|没有|并非|算不上|谈不上|不是|不太|不够|并不|不算|如果|要是|是否)$"
)

# A correction the user takes back later in the same message: "No wait, that's wrong.
# Actually yes, exactly right.", "never mind, you were right", "算了，你是对的".
_RETRACTION: Final = re.compile(
    r"\b(?:never\s*mind|nevermind|scratch\s+that|ignore\s+(?:that|what\s+i\s+said)|"
    r"i\s+take\s+(?:that|it)\s+back|forget\s+(?:that|what\s+i\s+said)|"
    r"i\s+was\s+wrong|i\s+misread|"
    r"actually[\s,]+(?:yes|yeah|yep|no[\s,]+(?:it's|that's|you're)\s+(?:right|correct|fine))|"
    r"(?:you\s+were|you're|that\s+was|that's|it's|it\s+was)\s+(?:right|correct)\s+after\s+all)\b"
    r"|算了|没事了|当我没说|我(?:看|搞|弄|说|想)错了|是我(?:错了|的错|搞错了)|其实(?:是)?对的|其实你(?:说得|是)对"
)
_RETRACTION_KEYS: Final = (
    "mind",
    "scratch",
    "ignore",
    "back",
    "forget",
    "wrong",
    "misread",
    "actually",
    "after all",
    "算了",
    "没事",
    "没说",
    "错",
    "对",
)

_CORRECTION: Final = re.compile("|".join(_CORRECTION_EN + _CORRECTION_ZH))
_REINFORCEMENT: Final = re.compile("|".join(_REINFORCEMENT_EN + _REINFORCEMENT_ZH))

# Every match of a pattern above contains one of these substrings. Most messages contain
# none, and a substring test is far cheaper than running a large alternation, so the
# patterns only run on candidates. Keep these in step when editing a pattern.
_CORRECTION_KEYS_EN: Final = (
    "wrong",
    "incorrect",
    "not",
    "n't",
    "mis",
    "confused",
    "error",
    "never",
    "told",
    "already",
    "mean",
)
_CORRECTION_KEYS_ZH: Final = ("不对", "错", "误", "混", "反", "偏", "岔", "不是", "答非所问")
_REINFORCEMENT_KEYS_EN: Final = (
    "exactly",
    "perfect",
    "excellent",
    "brilliant",
    "bingo",
    "spot",
    "nailed",
    "right",
    "correct",
    "got it",
    "what",
    "keep",
    "job",
    "done",
    "better",
    "works",
    "love",
    "like",
)
_REINFORCEMENT_KEYS_ZH: Final = (
    "正确",
    "说得",
    "这样",
    "这个意思",
    "是我",
    "这就对了",
    "没错",
    "非常好",
    "太好",
    "好极",
    "棒",
    "不错",
    "干得",
    "做得",
    "完美",
    "保持",
    "按这个",
    "正合我意",
    "没毛病",
    "满意",
)
_CORRECTION_KEYS_ALL: Final = _CORRECTION_KEYS_EN + _CORRECTION_KEYS_ZH
_REINFORCEMENT_KEYS_ALL: Final = _REINFORCEMENT_KEYS_EN + _REINFORCEMENT_KEYS_ZH

# How far before a match the vetoes look.
_VETO_LOOKBACK: Final = 40


def _prepare(text: str) -> str:
    return text[:_SCAN_CHARS].casefold().replace("’", "'")


def _last_match_end(pattern: re.Pattern[str], veto_before: re.Pattern[str], text: str) -> int:
    """Where the last match that no veto cancels ends, or -1."""
    last = -1
    for match in pattern.finditer(text):
        start, end = match.span()
        before = text[max(0, start - _VETO_LOOKBACK) : start]
        if before and veto_before.search(before):
            continue
        if _VETO_AFTER.match(text, end):
            continue
        last = end
    return last


def _matches(pattern: re.Pattern[str], veto_before: re.Pattern[str], text: str) -> bool:
    return _last_match_end(pattern, veto_before, text) >= 0


def _taken_back(rest: str) -> bool:
    """True when the text after a correction withdraws it (a retraction, or praise)."""
    if any(key in rest for key in _RETRACTION_KEYS) and _RETRACTION.search(rest) is not None:
        return True
    return _is_reinforcement(rest)


def _is_correction(text: str) -> bool:
    keys = _CORRECTION_KEYS_EN if text.isascii() else _CORRECTION_KEYS_ALL
    for key in keys:
        if key in text:
            end = _last_match_end(_CORRECTION, _CORRECTION_VETO_BEFORE, text)
            return end >= 0 and not _taken_back(text[end:])
    return False


def _is_reinforcement(text: str) -> bool:
    keys = _REINFORCEMENT_KEYS_EN if text.isascii() else _REINFORCEMENT_KEYS_ALL
    for key in keys:
        if key in text:
            return _matches(_REINFORCEMENT, _REINFORCEMENT_VETO_BEFORE, text)
    return False


def _user_texts(messages: Sequence[Message], window: int) -> list[str]:
    if window < 1:
        raise ValueError(f"window={window}: must be at least 1")
    return [_prepare(m.content) for m in messages[-window:] if m.role == "user"]


def detect(messages: Sequence[Message], *, window: int = DEFAULT_WINDOW) -> Signals:
    """Correction and reinforcement in the user text of the last ``window`` messages.

    A message that corrects is never also counted as reinforcement ("you're right that X,
    but that's wrong" is a correction).

    Raises:
        ValueError: ``window`` is less than 1.
    """
    correction = reinforcement = False
    for text in _user_texts(messages, window):
        if _is_correction(text):
            correction = True
        elif not reinforcement and _is_reinforcement(text):
            reinforcement = True
    return Signals(correction=correction, reinforcement=reinforcement)


def detect_correction(messages: Sequence[Message], *, window: int = DEFAULT_WINDOW) -> bool:
    """True when a user message among the last ``window`` corrects the assistant.

    Raises:
        ValueError: ``window`` is less than 1.
    """
    return any(_is_correction(text) for text in _user_texts(messages, window))


def detect_reinforcement(messages: Sequence[Message], *, window: int = DEFAULT_WINDOW) -> bool:
    """True when a user message among the last ``window`` confirms the assistant's answer
    (and does not also correct it).

    Raises:
        ValueError: ``window`` is less than 1.
    """
    return any(
        not _is_correction(text) and _is_reinforcement(text)
        for text in _user_texts(messages, window)
    )
