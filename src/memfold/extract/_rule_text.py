"""What the rule extractor reads of a user message: the user's own words, in short units.

A message is cut to its head and tail (``MAX_HEAD_CHARS`` + ``MAX_TAIL_CHARS``), then
everything the user did not say about themselves is dropped: uploads, code (fenced or
not: comments, logs, stack traces), quoted replies and quotes, transcripts with speaker
labels (``Bot:``, ``用户：``), and whatever follows "here it is:", "he wrote:", "如下：" or a
pasted document's heading. What is left is split into sentences; a Chinese sentence is
split further into its comma clauses, and a clause without a subject inherits the
subject of the clause before it ("我是四川人，特别能吃辣" → "我特别能吃辣"). English clauses
joined by "and"/"," get their "I" back the same way ("I'm based in Leeds and work at
…" → "… and I work at …").

Every regular expression here runs in linear time: none starts with an unanchored
``\\s*`` or nests unbounded repeats, whitespace runs are collapsed first, and the units
the rules see are at most ``MAX_UNIT_CHARS`` long.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "MAX_HEAD_CHARS",
    "MAX_TAIL_CHARS",
    "MAX_UNIT_CHARS",
    "Clause",
    "Sentence",
    "capped",
    "carry_subject",
    "readable",
    "role_play",
    "sentences",
    "zh_clauses",
]

#: The rules read at most this much of the start of a message …
MAX_HEAD_CHARS = 4000
#: … and of its end (the LLM prompt keeps head and tail the same way).
MAX_TAIL_CHARS = 1000
#: A sentence or clause longer than this is not a statement about oneself.
MAX_UNIT_CHARS = 400

CJK_CHAR = "\u3400-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{CJK_CHAR}]")

# --- blocks that are never the user's own words ---------------------------------------

_UPLOADS = re.compile(r"<uploaded_files>.*?(?:</uploaded_files>|\Z)", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"(```|~~~).*?(?:\1|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_HSPACE = re.compile(r"[ \t\f\v\u00a0\u2000-\u200b\u3000]+")
_BLANKS = re.compile(r"\n(?: ?\n)+")
# A quote of a few words is an object ("words like 'delve'", "start with 'Dear …'");
# a longer one is somebody's speech and is dropped.
_QUOTED = re.compile(
    r"\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』|《[^》\n]*》|(?<![\w'])'[^'\n]+'(?![\w'])"
)
_OBJECT_QUOTE_BEFORE = re.compile(
    r"(?:\b(?:with|like|use|using|word|words|phrase|phrases|term|terms|called|named|as|avoid|"
    r"ban|not|or|and)|[用叫像和或、])[ ,:]*$",
    re.IGNORECASE,
)
_MAX_OBJECT_QUOTE_WORDS = 8

# Lines of code, logs and stack traces, matched at the start of a line.
_CODE_LINE = re.compile(
    r"[ ]{0,3}(?:Traceback \(|File \"|at [\w$.<>]+\(|Caused by:|\.\.\. \d+ more|\$ |>>> |"
    r"//|/\*|\*/|--(?!-)|<!--|</?[A-Za-z][\w-]*[ >/]|[{}\[\]]|@\w+|#include|"
    r"import [\w.]+|from [\w.]+ import|def \w+\(|class \w+[(:]|(?:const|let|var) \w+ ?=|"
    r"function\s*\w*\(|(?:public|private|protected|static) \w|func \w+\(|fn \w+\(|"
    r"(?-i:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP) (?-i:[A-Z*(])|"
    r"(?:pip|pip3|npm|npx|yarn|pnpm|git|docker|kubectl|sudo|brew|apt|apt-get|curl|wget|cargo|"
    r"uv|poetry|conda) [-\w.]+)"
)
_LOG_LINE = re.compile(
    r"[ ]{0,3}\[?(?:\d{4}-\d{2}-\d{2}[T ]|\d{1,2}:\d{2}(?::\d{2})?\]? |"
    r"(?-i:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL|SEVERE)\b)|"
    r"[ ]{0,3}[\w.$]+(?:Error|Exception|Warning)\b"
)
_CODE_SYMBOLS = frozenset("{}[];=<>$\\|")
# A heading or a "# comment": a pasted document or code starts here.
_HEADING = re.compile(r"[ ]{0,3}#{1,6}[ \t]*\S")
_BLOCKQUOTE = re.compile(r"[ \t]*>")
# "Bot: …", "Tom: …", "客服机器人：…" — a transcript line. Labels of the user's own notes
# ("Update: …", "纠正：…") are not speakers.
_LABEL = re.compile(
    rf"[ \t]*(?:[-*•][ \t]*)?(?P<label>[A-Za-z][\w.'-]{{0,20}}(?: [A-Za-z][\w.'-]{{0,20}})?|"
    rf"[{CJK_CHAR}]{{1,8}})[ \t]*[:：]"
)
_SPEAKERS = frozenset(
    {
        *("user", "bot", "assistant", "ai", "agent", "customer", "support", "me", "human"),
        *("system", "q", "a", "b", "interviewer", "candidate", "chatbot", "moderator"),
        *("operator", "client", "patient", "host", "guest", "caller", "rep", "staff"),
        *("representative", "admin", "mod", "him", "her", "them", "you", "narrator"),
    }
)
# Labels of the user's own notes; a first word of these ("about me", "for context") too.
_OWN_LABELS = frozenset(
    {
        *("correction", "update", "edit", "note", "ps", "p.s", "p.s.", "context"),
        *("background", "fyi", "also", "btw", "about", "tl;dr", "tldr", "summary"),
        *("question", "goal", "important", "nb", "reminder", "details", "my", "for", "some"),
    }
)
_ZH_SPEAKER = re.compile(
    r"(?:用户|客服|机器人|助手|客户|顾客|买家|卖家|老师|学生|面试官|记者|医生|患者|病人|主持人|"
    r"嘉宾|甲|乙|我|他|她|对方|同事|老板|朋友|妈妈|爸爸|网友|楼主|小[\u4e00-\u9fff])$"
)
# What introduces someone else's text. A line ending in ":" introduces pasted text
# unless it introduces the user's own details ("for context:", "about me:", "背景：").
_INTRODUCER = re.compile(
    r"(?:\bhere(?:'s| is| are)? (?:it|they|the \w+)(?: is| are)?|\bas follows|\bbelow|"
    r"\b(?:wrote|writes|said|says|sent|replied|posted|commented|texted|emailed|forwarded)\b|"
    r"\bcopy-?pasted|\bpasted|\b(?:something|anything|sth) (?:like|along the lines of)|\blike|"
    r"'s (?:resume|cv|bio|profile|message|email|post|comment|review|letter|text|reply)|如下|以下|"
    r"原文|转发|写道|写着|留言|发来|说道|自我介绍|范文|示例|模板|的(?:简历|介绍|消息|邮件|留言|评论|帖子|文章|回复|原话|信|"
    r"朋友圈|微博|作文)|比如|例如)[^:：]{0,40}[:：]",
    re.IGNORECASE,
)
_OWN_INTRODUCER = re.compile(
    r"\b(?:about me|(?:some |for )?context|my (?:situation|background|details|profile|info|"
    r"setup|requirements|preferences|constraints|stats))\b|关于我|我的(?:情况|信息|背景|要求)|背景",
    re.IGNORECASE,
)


def capped(text: str, head: int = MAX_HEAD_CHARS, tail: int = MAX_TAIL_CHARS) -> str:
    """The first ``head`` and last ``tail`` characters of ``text`` (all of it if shorter)."""
    if len(text) <= head + tail:
        return text
    return text[:head] + "\n\n" + text[-tail:]


def _is_code(line: str) -> bool:
    if line[:1] == "\t" or line[:4] == "    ":
        return True
    if _CODE_LINE.match(line) or _LOG_LINE.match(line):
        return True
    symbols = sum(1 for ch in line if ch in _CODE_SYMBOLS)
    return symbols >= 3 and symbols * 10 >= len(line)


def _speaker(line: str) -> str | None:
    """ "speaker" for a line a transcript's speaker says, "maybe" for "Name: …", else None."""
    match = _LABEL.match(line)
    if match is None:
        return None
    label = match.group("label")
    if _CJK.match(label):
        return "speaker" if _ZH_SPEAKER.search(label) else None
    folded = label.casefold()
    if folded in _OWN_LABELS or folded.split(" ", 1)[0] in _OWN_LABELS:
        return None
    if folded in _SPEAKERS:
        return "speaker"
    # "Tom: …" is a transcript only next to another such line ("Quick one: …" is not)
    return "maybe" if label[:1].isupper() and " " not in label else None


def _without_quotes(text: str) -> str:
    def drop(match: re.Match[str]) -> str:
        inner = match.group()[1:-1].strip()
        before = text[max(0, match.start() - 24) : match.start()]
        if (
            inner
            and len(inner.split()) <= _MAX_OBJECT_QUOTE_WORDS
            and not re.search(r"[.!?。！？]", inner)
            and _OBJECT_QUOTE_BEFORE.search(before)
        ):
            return match.group()
        return " … "

    return _QUOTED.sub(drop, text)


def readable(text: str) -> str:
    """The parts of a user message that are the user speaking, whitespace collapsed
    (callers cut a long message with :func:`capped` first)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("’", "'").replace("‘", "'")
    text = _UPLOADS.sub("\n", text)
    text = _FENCE.sub("\n", text)
    text = _INLINE_CODE.sub(" ", text)
    lines = text.split("\n")
    speakers = [_speaker(line) for line in lines]
    transcript = sum(1 for kind in speakers if kind) >= 2
    kept: list[str] = []
    for line, speaker in zip(lines, speakers, strict=True):
        if not line.strip():
            kept.append("")
            continue
        if speaker == "speaker" or (speaker and transcript):
            continue
        if _BLOCKQUOTE.match(line) or _is_code(line):
            continue
        if _HEADING.match(line):
            break  # a pasted document or code from here on
        introducer = _INTRODUCER.search(line)
        if introducer and not _OWN_INTRODUCER.search(line[: introducer.end()]):
            kept.append(line[: introducer.start()])
            break  # someone else's text from here on
        if line.rstrip().endswith((":", "：")) and not _OWN_INTRODUCER.search(line):
            kept.append(line.rstrip()[:-1])
            break
        kept.append(line)
    joined = "\n".join(kept)
    joined = _HSPACE.sub(" ", joined)
    joined = _BLANKS.sub("\n\n", joined)
    return _without_quotes(joined).strip()


# --- role-play --------------------------------------------------------------------------

_ROLE_PLAY_START = re.compile(
    r"\b(?:role-?play(?:ing)?|pretend (?:you(?:'re| are)|to be|I(?:'m| am)|we(?:'re| are)|"
    r"that)|play the (?:role|part) of|in character|act as (?:if|though|an?|my)|"
    r"you(?:'re| are| will be|'ll be) (?:the|my) (?:interviewer|customer|patient|doctor|"
    r"teacher|examiner|recruiter|client|manager|boss|user|villain|hero|character|caller|"
    r"landlord|buyer|seller|opponent|date))\b|角色扮演|扮演|你演|我演|假装你是|假装我是|模拟面试",
    re.IGNORECASE,
)
_ROLE_PLAY_END = re.compile(
    r"\b(?:(?:stop|end|drop|quit|exit|pause|break|leave) (?:the |this |our )?(?:role-?play|"
    r"game|scene|character|act)|out of character|ooc|real me(?: here)?|back to (?:reality|"
    r"real life|me)|for real now|no more role-?play|step(?:ping)? out of (?:the |this )?"
    r"(?:role|character|role-?play))\b|不演了|不玩了|角色扮演结束|结束角色扮演|回到正题|言归正传|出戏",
    re.IGNORECASE,
)


def role_play(text: str, active: bool) -> tuple[str, bool]:
    """(the part of ``text`` said outside a role-play, whether one goes on after it).

    A role-play starts with the user's "let's role-play …", "pretend you're …", "你演…";
    nothing said in it is a fact, until the user steps out ("stop the role-play", "real
    me here", "不演了").
    """
    read: list[str] = []
    position = 0
    while position <= len(text):
        if active:
            end = _ROLE_PLAY_END.search(text, position)
            if end is None:
                break
            position, active = end.end(), False
            continue
        start = _ROLE_PLAY_START.search(text, position)
        if start is None:
            read.append(text[position:])
            break
        read.append(text[position : start.start()])
        position, active = start.end(), True
    return " ".join(read), active


# --- sentences and clauses ---------------------------------------------------------------

_SENTENCE_END = re.compile(r"[.!?…]+(?=[\s)\"'”]|$)|[。！？!?；;]+|\n+")
_QUESTION_MARK = re.compile(r"[?？]")
# Where an English question starts after a statement: "I'm vegan — where can I eat?"
_EN_QUESTION_START = re.compile(
    r"(?:,|—|–| - |;|:)\s*(?:so |and |but |then )?(?=(?:what|where|how|which|who|whom|why|when|"
    r"is|are|am|was|were|do|does|did|can|could|should|would|will|shall|may|might|any|anything|"
    r"anyone|ideas|tips|thoughts|suggestions|recommendations|advice|is there|are there)\b)",
    re.IGNORECASE,
)
_EN_QUESTION_WORD = re.compile(
    r"(?:what|where|how|which|who|why|when|is|are|do|does|did|can|could|should|would|will|any)\b",
    re.IGNORECASE,
)
_EN_BECAUSE = re.compile(r"\b(?:since|because|as|given that|now that) (?=I(?:'m| am| have|'ve)\b)")
_ZH_QUESTION_WORD = re.compile(
    r"什么|怎么|咋|吗|么|呢|哪|多少|几[个天岁次点号种年月周]|是否|能不能|可不可以|有没有|要不要|会不会|"
    r"行不行|好不好|对不对|是不是|为什么|如何|谁|啥|还是|[?？]"
)
_ZH_CLAUSE_SPLIT = re.compile(r"[，,]+")
# A clause also ends before a conjunction: "华语还可以但是看不太懂繁体字".
_ZH_SUBCLAUSE_SPLIT = re.compile(r"[，,]+|(?<=[\u4e00-\u9fffA-Za-z0-9])(?=但是|不过|可是|而且)")


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence as said, and the statement part the rules read (None: nothing to read)."""

    text: str
    statement: str | None
    question: bool


def sentences(text: str, limit: int | None = MAX_UNIT_CHARS) -> Iterator[Sentence]:
    """Sentences of prepared text, those longer than ``limit`` left out; of a question
    only the statement before it is read ("I'm allergic to peanuts, what can I use?" →
    "I'm allergic to peanuts")."""
    start = 0
    for match in _SENTENCE_END.finditer(text):
        question = bool(_QUESTION_MARK.search(match.group()))
        yield from _sentence(text[start : match.start()], question, limit)
        start = match.end()
    yield from _sentence(text[start:], False, limit)


def _sentence(piece: str, question: bool, limit: int | None) -> Iterator[Sentence]:
    piece = piece.strip()
    if not piece or (limit is not None and len(piece) > limit):
        return
    if not question:
        yield Sentence(piece, piece, False)
        return
    if _CJK.search(piece):
        # Chinese: the clauses before the first one that asks
        clauses = _ZH_CLAUSE_SPLIT.split(piece)
        kept: list[str] = []
        for clause in clauses:
            if _ZH_QUESTION_WORD.search(clause) or _EN_QUESTION_WORD.match(clause.strip()):
                break
            kept.append(clause)
        if len(kept) == len(clauses):
            kept = kept[:-1]  # no question word: the last clause is the question
        statement = "，".join(kept).strip()
    else:
        cut = _EN_QUESTION_START.search(piece)
        statement = piece[: cut.start()].strip() if cut else ""
        because = None if statement else _EN_BECAUSE.search(piece)
        if because:
            # "Do I need a visa since I'm on a student visa?" states its reason
            statement = piece[because.end() :].strip()
    yield Sentence(piece, statement or None, True)


# Chinese clause subjects. A clause that starts with none inherits the one before it.
_ZH_LEAD = re.compile(
    r"(?:现在|目前|如今|最近|其实|另外|而且|并且|但是|但|不过|可是|所以|因为|然后|还有|对了|说真的|老实说|讲真|"
    r"好的|好吧|嗯|哦|啊|哈哈|顺便说一下|顺便|话说)+[，,\s]*"
)
_ZH_OTHER_PERSON = (
    r"妈妈?|爸爸?|父母|爸妈|哥哥?|姐姐?|弟弟?|妹妹?|老公|老婆|丈夫|妻子|先生|太太|爱人|男朋友|女朋友|"
    r"对象|儿子|女儿|孩子|宝宝|爷爷|奶奶|外公|外婆|姥姥|姥爷|婆婆|公公|岳父|岳母|表[哥姐弟妹]|"
    r"堂[哥姐弟妹]|叔叔|阿姨|舅舅|同事|朋友|同学|室友|邻居|老板|领导|上司|客户|老师|导师|医生|"
    r"家人|亲戚|闺蜜|兄弟|队友|网友"
)
_ZH_SUBJECT = re.compile(
    rf"(?P<team>我们|咱们)|(?P<family>我(?:的)?(?:{_ZH_OTHER_PERSON}))|"
    r"(?P<self>我|I(?=['’ ]))|"
    rf"(?P<other>你们|您|他们|她们|它们|他|她|它|大家|别人|有人|人家|对方|(?:{_ZH_OTHER_PERSON})"
    r"(?=说|告诉|觉得|认为|问|让|叫|要|想|是|在|住|有|也|都|就|会|和|跟|跟我))|(?P<you>你)"
)


@dataclass(frozen=True, slots=True)
class Clause:
    """A Chinese clause with its subject made explicit where it was carried over."""

    text: str
    subject: str  # "self", "team", "family", "other", "you" or "none"


def zh_clauses(sentence: str, carried: str = "self") -> list[Clause]:
    """The comma clauses of a Chinese sentence, each with its subject (carried over).

    A user's own message that opens without a subject speaks about the user ("目标是明年
    拿到 offer"), so the first clause inherits ``carried``, "self" by default.
    """
    clauses: list[Clause] = []
    for raw in _ZH_SUBCLAUSE_SPLIT.split(sentence):
        text = raw.strip()
        lead = _ZH_LEAD.match(text)
        if lead:
            text = text[lead.end() :].strip()
        if not text:
            continue
        if text.startswith("本人"):
            text = "我" + text[2:]  # "本人90后": the user, formally
        match = _ZH_SUBJECT.match(text)
        if match is None:
            subject = carried
            if carried == "self":
                text = "我" + text
            elif carried == "team":
                text = "我们" + text
        else:
            subject = match.lastgroup or "none"
        clauses.append(Clause(text, subject))
        if subject in ("self", "team", "family", "other"):
            carried = subject
    return clauses


# "I'm based in Leeds and work at a startup": the second clause's "I" comes back.
_EN_CONTINUATION = re.compile(
    r"(?P<sep>,\s+(?:and|but)\s+|\s+(?:and|but)\s+|"
    r",\s+(?=(?:living|working|based|originally|currently living|now living)\b))"
    r"(?=(?:(?:also|now|currently|mostly|mainly|still|usually|always|often|just|only|really|"
    r"then|even|actually)\s+)?(?P<verb>work|live|teach|speak|use|have|love|like|hate|prefer|"
    r"enjoy|run|own|study|do|don't|can|can't|cannot|want|need|write|code|go|cycle|train|play|"
    r"eat|drink|cook|bake|post|read|travel|moved|started|got|quit|am|will|'ll|also|don't|"
    r"(?P<participle>living|working|based|originally|currently living|now living))\b)",
    re.IGNORECASE,
)
_EN_SUBJECT = re.compile(
    r"(?-i:\bI\b)|\b(?:we|he|she|they|you)\b|"
    r"\b(?:my|his|her|our|their|your) (?!own\b)[a-z]+(?= (?:is|are|was|were|has|have|lives|"
    r"works|says|said|thinks|wants|keeps|loves|hates|likes|who)\b)|"
    r"(?-i:[A-Z][a-z]+)(?= (?:is|was|has|lives|works|says|said|thinks|wants|keeps|loves|hates|"
    r"likes)\b)",
    re.IGNORECASE,
)


def carry_subject(sentence: str) -> str:
    """Put the user's "I" back into clauses that continue an I-clause without one."""
    if "I" not in sentence:
        return sentence
    out: list[str] = []
    position = 0
    for match in _EN_CONTINUATION.finditer(sentence):
        subjects = list(_EN_SUBJECT.finditer(sentence, 0, match.start()))
        if not subjects or subjects[-1].group() != "I":
            continue
        out.append(sentence[position : match.end()])
        out.append("I'm " if match.group("participle") else "I ")
        position = match.end()
    out.append(sentence[position:])
    return "".join(out)
