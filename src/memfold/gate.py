"""The extraction gate: could the new turns hold anything about the user at all?

An LLM extraction costs a request whatever it finds, and most turns of a working session
are tasks ("fix this stack trace", "translate this paragraph") that teach nothing about the
user. ``ExtractionGate.decide`` reads the new user turns the way the rule extractor does
(``extract._rule_text.readable``: no code, logs, quotes, transcripts or pasted documents)
and lets the call go ahead when any of these is there:

- a correction or reinforcement signal (``memfold.signals``, the capture detectors);
- a statement the rule extractor recognises;
- a broader cue of a self-statement, a preference or instruction about answers, a stated
  plan, or a short reply to the assistant's question about the user (the patterns below,
  English and Chinese);
- failing all of those, a first-person word left once the first-person phrasing of a
  request ("how do I", "I'm getting", "my Docker build", 帮我) is taken out.

Otherwise the update makes no call and only moves the thread's watermark. The gate leans
towards calling: a missed fact is lost, a needless call only costs tokens; its figures on
the labelled corpus in ``corpora/gate`` are in the README. Pure and deterministic; every
pattern runs in linear time (bounded gaps, no nested repeats).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memfold.extract._rule_text import capped, readable, role_play
from memfold.extract.base import ExtractionRequest
from memfold.extract.rules import RuleExtractor
from memfold.model import MemoryDocument, Message
from memfold.signals import detect

__all__ = ["ExtractionGate", "GateDecision"]

_EMPTY = MemoryDocument()
# A gap inside one clause: a few words, never across a sentence end.
_GAP = r"[^.!?\n]{0,40}?"

_PEOPLE_EN = (
    r"wife|husband|partner|spouse|fianc[eé]e?|girlfriend|boyfriend|son|daughter|sons|"
    r"daughters|kids?|children|child|baby|babies|twins|toddler|mum|mom|mother|dad|father|"
    r"parents|sister|brother|siblings|family|grandkids|grandson|granddaughter|"
    r"dog|dogs|cat|cats|puppy|kitten|pets?|rabbit|horse"
)
# What a task is made of: "my code", "our API", "my essay" speak of the task, not the user.
_TASK_NOUNS = (
    r"code|codebase|function|functions|method|methods|class|classes|script|scripts|query|"
    r"queries|test|tests|unit|app|apps|repo|repository|project|file|files|folder|essay|"
    r"report|email|emails|text|paragraph|sentence|question|questions|homework|assignment|"
    r"data|dataset|table|tables|spreadsheet|slides|presentation|program|docker|build|server|"
    r"database|db|api|site|website|page|post|draft|letter|answer|output|list|loop|array|"
    r"variable|prompt|model|bug|error|issue|pr|branch|commit|config|configuration|component|"
    r"service|endpoint|schema|regex|cv|resume|notes|workers?|pipeline|deploy|deployment|"
    r"cluster|containers?|logs|dashboards?|tickets?|backlog|docs|documentation|readme|csv|"
    r"nginx"
)
_SELF_EN: Final = (
    # who: "I'm a nurse", "as a teacher", "I work at", "we're a 6-person startup"
    r"\bI(?:'m| am)(?: (?:just|only|also|actually|currently|now|still))? (?:an?|the|one of)"
    r" (?!(?:bit|little|lot|few|couple|total|complete)\b)",
    r"\b(?:as|being) an? (?:\w+ )?(?!(?:parameter|number|user|member|filter|header|"
    r"folder|container|wrapper|helper|buffer|marker|vector|cursor|error|string)\b)"
    r"(?:\w+(?:er|or|ist|ian|ant|ent|eer)|nurse|parent|mum|mom|dad|student|chef|cook|vet|"
    r"pilot|coach|dev|beginner|newbie|freelancer|junior|senior|native|vegan|vegetarian)\b",
    r"\bI do (?:all |most |much )?(?:of )?(?:my|our)\b",
    r"\bI (?:work|teach|study|run|own|manage|lead|coach|volunteer|freelance|moved|live|grew up)\b",
    r"\bI(?:'m| am) (?:based|from|in (?=[A-Z])|at (?=[A-Z])|on (?:linux|windows|mac|macos|"
    r"ubuntu|arch|fedora|android|ios)|retired|self-employed|freelance|unemployed|pregnant|"
    r"married|single|divorced|allergic|intolerant|vegan|vegetarian|pescatarian|diabetic|"
    r"colou?r[- ]?blind|dyslexic|autistic|deaf|blind|left-handed|right-handed|in my \d|"
    r"new (?:here|to (?:the|my|this) (?:team|job|company|city|country))|"
    r"(?:learning|studying|preparing|prepping|training|building|writing|leading|moving|"
    r"switching|starting|quitting|expecting|planning|hoping|trying to (?:quit|lose|get|learn|"
    r"become|save)|going back|saving|recovering|looking for a (?:job|new job|flat|house)))",
    r"\b(?:we(?:'re| are)|I(?:'m| am)) (?:an?|the) (?:\d+|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|small|tiny|big|large|remote|new)\b",
    r"\bmy (?:name|job|role|work|boss|manager|team|company|employer|startup|business|shop|"
    r"clients?|students?|patients?|doctor|therapist|school|university|degree|thesis|phd|"
    r"home|flat|apartment|house|city|country|town|commute|salary|budget|diet|health|"
    r"allergy|condition|age|birthday|hobby|hobbies|native|first language|"
    rf"{_PEOPLE_EN})\b",
    rf"\b(?:we|I) (?:have|'ve got|have got|own|adopted|got) (?:an?|two|three|four|five|\d+) "
    rf"(?:\w+ )?(?:{_PEOPLE_EN})\b",
    r"\bI(?:'ve| have)(?: got)? (?:type [12]|diabetes|adhd|asthma|autism|dyslexia|"
    r"high blood pressure|a (?:\w+ )?(?:allergy|condition|disability|bad back|bad knee))",
    r"\b(?:our|my) (?:stack|team|company|startup|office|product|codebase|org|organisation|"
    r"organization|department|school|clinic|shop|restaurant|bakery)\b",
    r"\bat my (?:company|job|work|office|school|university|workplace)\b",
    r"\b(?:call me|my name(?:'s| is)|I go by)\b",
    r"\bas (?:someone|somebody|a person|one of those people) (?:who|with|that)\b",
    r"\bI (?:come|came) from\b|\bI(?:'m| am) (?:a )?native\b|\bI speak\b",
    # any "my …"/"our …" but the material of a task ("my code", "our API", "my essay",
    # "my React component": a capitalised word is a product's name)
    rf"\b(?:my|our) (?!(?-i:[A-Z]))(?!(?:{_TASK_NOUNS}|"
    r"own|first|second|last|previous|next|current|new|old)\b)[a-z]",
    r"\bmine (?:is|are|was|were)\b",
    r"\bI(?:'ve| have) (?:only |just |already |never |recently |been )*(?:done|run|lived|"
    r"worked|had|owned|studied|played|trained|taught|raised|been (?:doing|living|working|"
    r"learning|running|playing|studying))\b",
    r"\b(?:we|I)(?:'re| are| am) (?:flying|moving|going to|travell?ing|heading|visiting|"
    r"relocating|expecting|getting married|having a baby|renovating|buying|selling|adopting)\b",
    r"\bwe (?:just |recently |finally )?(?:moved|switched|started|migrated|adopted|bought|"
    r"sold|got)\b",
    r"\b(?:find|look for|looking for|need) a new (?:place|flat|apartment|house|home|job|room)\b",
    # tastes and habits: "I hate when…", "I usually code in Neovim", "I don't eat pork"
    r"\bI (?:really |do |don't |do not |absolutely |kind of |kinda )?(?:like|love|hate|"
    r"dislike|prefer|enjoy|adore|detest|can't stand|cannot stand)\b",
    r"\bI(?:'m| am) (?:not )?(?:a (?:big |huge )?fan of|into|obsessed with|hopeless at|"
    r"terrible at|bad at|good at|great at)\b",
    r"\bI (?:usually|always|never|often|mostly|normally|generally|typically|rarely|tend to|"
    r"only|mainly|exclusively|still)\b",
    r"\bI (?:don't|do not|can't|cannot|never) (?:eat|drink|use|own|have|drive|fly|work|"
    r"speak|read|like|want|do)\b",
    r"\bI (?:use|code in|write in|program in|work in|work with|cook for|train|run|swim|"
    r"cycle|ride)\b",
    r"\bwe (?:use|always|never|run|deploy|ship|work|have)\b",
    r"\bI(?:'m| am) (?:a|an) \w+ person\b|\b\w+ person myself\b|\bmyself\b",
    # plans and goals: "I plan to", "next month I…", "my goal is"
    r"\bI (?:plan|intend|hope|want|would like|'d like|need|am going|'m going|'m about|am about)"
    r" to (?:learn|become|move|switch|start|get into|quit|lose|run|buy|study|apply|retire|"
    r"change|become|travel|visit|open|launch|build|write|finish|get better|improve|"
    r"stop|go back|take up|pick up|try out|prepare)\b",
    r"\b(?:my (?:goal|plan|dream|aim)|I(?:'m| am) aiming)\b",
    r"\b(?:about me|about myself|a bit about me|for context|some context|my background|"
    r"my situation|my setup)\b",
    r"\b(?:parental|maternity|paternity|sick|annual|medical) leave\b|\bI(?:'m| am) off "
    r"(?:on|for|from|next|until)\b",
    r"\bnext (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)\b",
    # a first-person plan on a day: "we pick him up on Saturday", "I fly out this Friday"
    r"\b(?:I|we)\b" + _GAP + r"\b(?:on|this|by|until) (?:monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)\b",
    r"\b(?:next|this coming) (?:week|month|year|quarter|term|semester|summer|winter|spring|"
    r"autumn|fall)\b|\bthis (?:year|quarter|term|semester|summer|winter|spring|autumn|fall)\b",
    r"\bin (?:january|february|march|april|june|july|august|september|october|november|"
    r"december|may(?! (?:be|have|not|need|want|also|or)\b))\b",
    r"(?<!like )(?<!as if )(?<!as though )\bI(?:'m| am) "
    r"(?:\d+|twenty|thirty|forty|fifty|sixty|seventy|eighty)(?: years)?\b",
    r"\bI (?:just |recently )?(?:started|joined|retired|graduated|moved|got married|"
    r"had a baby|became|switched|quit)\b",
    r"\bI (?:went|go|often go|'ve been|have been|got back from) (?!(?:getting|trying|seeing|"
    r"having|looking|using|wondering|thinking|struggling|stuck|working on (?:this|it|that)|"
    r"running into|reading (?:the|this|about))\b)\w+ing\b",
    r"\b(?:years|months) (?:in|of experience|into)\b|\bfirst (?:job|week|day|month)\b",
    # how answers should be: "from now on", "keep it short", "stop suggesting"
    r"\b(?:from now on|going forward|in future|in the future|next time|from here on|"
    r"moving forward|every time|each time)\b",
    r"\b(?:always|never|please|pls|don't|do not|stop|no more|avoid)"
    + _GAP
    + r"\b(?:answer|reply|respond|responses?|answers?|use|using|give|giving|write|writing|"
    r"include|including|suggest|suggesting|recommend|recommending|start|starting|add|"
    r"explain|format|emojis?|bullet|jargon|code|examples?|intro|summary|summaries|"
    r"apologi[sz]e|mention)\b",
    r"\b(?:make|keep|be)(?: the| your| it| them| things| explanations?| answers?| responses?| "
    r"replies)* (?:short|shorter|brief|briefer|concise|simple|simpler|longer|detailed|"
    r"casual|formal|friendlier|direct)\b",
    r"\b(?:too (?:long|short|verbose|wordy|formal|casual|technical|basic|detailed)|"
    r"(?:shorter|simpler|less verbose|more concise|more detailed)|walls? of text|"
    r"(?:skip|drop|no need for|don't need) the (?:basics|background|intro|theory|preamble|"
    r"explanation))\b",
    r"\b(?:that's|this is|it's) (?:how|the way|what) I (?:like|want|prefer|need)\b",
    # "I'd rather you didn't…", "I would prefer answers that…"
    r"\bI(?:'d| would)(?: really| much| honestly| strongly)? (?:rather|prefer|like you to)\b",
    r"\b(?:keep doing|do it (?:this|that) way|exactly (?:like|what)|that tone|that style|"
    r"this format|that format)\b",
    r"\b(?:I told you|I said|I mentioned|like I said|as I said|remember (?:that|me|my))\b",
)

_PEOPLE_ZH = (
    r"家|老公|老婆|妻子|丈夫|太太|先生|爱人|对象|男朋友|女朋友|男友|女友|未婚夫|未婚妻|女儿|儿子|"
    r"孩子|小孩|宝宝|闺女|爸|妈|父母|爸妈|公公|婆婆|岳父|岳母|爷爷|奶奶|外公|外婆|哥|姐|弟|妹|"
    r"猫|狗|宠物"
)
_SELF_ZH: Final = (
    r"我(?:是|叫|姓)(?!说|不是|想|问|指|要|在问)",
    r"叫我|我的名字|本人",
    r"作为一?[个名位]",
    r"我(?:现在|目前|一直|平时)?在(?!想|问|这|那|试|找|看这|写这|用这|弄|做这)",
    r"我(?:现在|目前|一直)?(?:住|工作|上班|读书|上学|念书|实习|退休|定居)",
    rf"我(?:们)?(?:的)?(?:{_PEOPLE_ZH})",
    r"我们(?:公司|团队|部门|学校|组|单位|家|这边|项目组|小组|店|工作室)|我司",
    r"我(?:们)?(?:用的是|使用的是|这边用|一般用|平时用|都用|主要用|习惯用)",
    r"我(?:很|特别|非常|比较|超|最|也|还|不太|不)?(?:喜欢|讨厌|爱吃|爱看|爱玩|偏好|偏爱|受不了|"
    r"不喜欢|害怕|怕)",
    r"我(?:一般|平时|通常|每天|每周|每个月|每年|经常|总是|从不|从来不|很少|习惯|基本上|一直)",
    r"我(?:不吃|不喝|不会|不能吃|吃素|戒|对[^，。！？,.!?\n]{1,10}过敏|过敏)",
    r"我(?:有|患有|得了)(?:高血压|糖尿病|哮喘|抑郁|焦虑|近视|鼻炎|胃病|心脏病|腰椎|颈椎)",
    r"我(?:有|养了?)(?:一|两|二|三|四|五|[0-9])(?:个|只|条|位|套)",
    r"我(?:今年)?[0-9一二三四五六七八九十]+岁|我(?:大|研|高|初)[一二三四]|我是?(?:[0-9]{2}|"
    r"[零一二三四五六七八九]{2})后",
    r"我(?:打算|计划|准备|决定|想要?(?:学|考|转|换|搬|去|减|开始|当|做|成为|辞职|创业|养)|"
    r"正在(?:学|准备|备考|考|做|写|找|减肥|健身)|在学|在备考|要考)",
    r"我[^，。！？,.!?\n]{0,6}(?:下个?(?:周|月|季度|学期)|明年|今年|年底)|"
    r"(?:下个?(?:周|月|季度|学期)|明年|今年|年底)[^，。！？,.!?\n]{0,6}我",
    r"我(?:刚|刚刚|最近|已经)?(?:从[^，。！？,.!?\n]{1,12})?(?:搬到|搬家|生完|生了|结婚|退休|"
    r"毕业|入职|离职|换了|转行|开始)",
    r"(?:以后|今后|往后|下次|从现在开始|从今天起|之后)(?:都|请|就|再|给我|你|回答|别|不要|每次)?",
    r"(?:别|不要|不用|请勿|能不能不要)再?(?:给我|推荐|用|加|写|说|提|发)",
    r"(?:回答|回复|解释|说明|讲得?)(?:能不能|可不可以|可以|请|太|再)?(?:短|简单|详细|长|少|简洁|"
    r"通俗|口语)",
    r"(?:太长|太啰嗦|太复杂|简单点|短一点|简洁一点|直接给|只要结论|只要代码)",
    r"记住|记一下|我说过|跟你说过|告诉过你|我的习惯|我的要求|关于我|我的情况|我的背景|介绍一下我",
    r"我(?:是|属于)?(?:初学者|新手|小白|学生|老师|医生|护士|程序员|工程师|设计师)",
    r"(?:就是这样|就这样|以后都|按这个|照这个)",
    r"我(?:比较|更|还是|一直)?(?:希望|倾向于?|想让你)",
    r"(?:孩子|小孩|女儿|儿子|宝宝|老公|老婆|爸妈|父母)(?:明年|今年|下个?月|下周|马上|快|刚|要|在)",
    r"我(?:要|得|会|准备|马上)(?:搬|回老家|换工作|辞职|出国|出差|考|结婚|生)",
    r"我们(?:现在|目前|一直)?(?:在|要|打算|准备|正在)(?!想|问|这|那|试|讨论)",
)

_SELF_EN_RE: Final = re.compile("|".join(f"(?:{p})" for p in _SELF_EN), re.IGNORECASE)
_SELF_ZH_RE: Final = re.compile("|".join(f"(?:{p})" for p in _SELF_ZH))
# The assistant asked about the user ("Where are you based?", "你平时喜欢看什么？").
_ASKED_ABOUT_USER: Final = re.compile(
    r"\b(?:you|your|yours|yourself)\b[^.!?\n]{0,80}\?\s*$|[你您][^。！？\n]{0,40}[？?]\s*$",
    re.IGNORECASE,
)
# "Translate this: …", "帮我翻译成英文：…": what follows the colon is the material of a
# task, not the user speaking.
_MATERIAL: Final = re.compile(
    r"(?:\b(?:translate|proofread|summari[sz]e|rewrite|paraphrase|reword|correct|check|"
    r"polish|shorten)\b|翻译|译成|润色|改写|改一下|检查|总结|概括|校对)[^:：\n]{0,40}[:：]",
    re.IGNORECASE,
)
# The last resort: with no cue found, the user still speaks of themselves when a
# first-person word is left once the first-person phrasing of a request is taken out ("how
# do I", "I'm getting", "I need a", "my Docker build", "帮我", "我想问一下"). Leaning
# this way keeps the gate from skipping facts said in words no cue knows.
_TASK_FRAME_EN: Final = re.compile(
    r"\b(?:how|what|where|when|why|which|whether|if|can|could|should|shall|may|do|did|"
    r"would|will|must|might)(?: (?:do|can|should|would|could|did|will|shall|might|must|"
    r"else))? I\b(?!')"
    r"|\bI(?:'m| am)? (?:keep |still |now |also |just |then |only )?(?:getting|get|got|see|"
    r"seeing|tried|try|trying|ran|run|running|wrote|write|writing|changed|added|removed|"
    r"installed|need|needed|want|wanted|wonder|wondering|think|thought|guess|mean|"
    r"understand|don't understand|do not understand|can't figure|cannot figure|can't get|"
    r"cannot get|can't seem|have this|have a question|'ve got this|got this|confused|stuck|"
    r"not sure|unsure|lost|curious)\b"
    rf"|\b(?:my|our) (?:(?-i:[A-Z])[\w.+#-]*|{_TASK_NOUNS})\b",
    re.IGNORECASE,
)
_TASK_FRAME_ZH: Final = re.compile(
    r"(?:帮|给|替|为|教|告诉|让|请)我|我想(?:问|知道|请教|了解|看看|确认|咨询)(?:一下)?|"
    r"我(?:这|那)(?:个|段|份|篇|张|条|里)|我想把|我(?:该|应该|需要|要|得)?怎么|"
    r"我(?:需要|要|想要)(?:一个|一份|一篇|个|份|篇)|我(?:运行|试了|装了|打开|点击|输入|执行)"
)
_FIRST_PERSON: Final = re.compile(
    # "I'm", "we've": the word before the apostrophe is enough
    r"\b(?:I|my|mine|myself|we|our|ours|ourselves|(?-i:us))\b|[我咱俺]",
    re.IGNORECASE,
)


def _speaks_of_self(plain: str) -> re.Match[str] | None:
    """A first-person word left once a request's first-person phrasing is taken out."""
    return _FIRST_PERSON.search(_TASK_FRAME_ZH.sub(" ", _TASK_FRAME_EN.sub(" ", plain)))


#: A reply this short may be an answer to the assistant's question about the user.
_MAX_ANSWER_CHARS: Final = 60


@dataclass(frozen=True, slots=True)
class GateDecision:
    """Whether to call the extractor, and why (for logs and tests)."""

    call: bool
    reason: str


class ExtractionGate:
    """Decides, cheaply and deterministically, whether new turns need an extraction call.

    ``rules`` is the rule extractor whose statements count; without it, one with the
    built-in patterns and ``rule_pattern_files`` is built on the first decision (compiling
    the patterns takes a moment that a process which never updates should not pay).

    Raises:
        ConfigError: (on the first decision) a pattern file cannot be used.
    """

    def __init__(
        self,
        rules: RuleExtractor | None = None,
        *,
        rule_pattern_files: Sequence[str | Path] = (),
    ) -> None:
        self._rules = rules
        self._files = tuple(rule_pattern_files)
        self._lock = threading.Lock()

    def _rule_extractor(self) -> RuleExtractor:
        if self._rules is None:
            with self._lock:
                if self._rules is None:
                    self._rules = RuleExtractor(self._files, log_misses=False)
        return self._rules

    def decide(self, messages: Sequence[Message]) -> GateDecision:
        """Call when a user turn of ``messages`` might say anything about the user (see
        the module doc). ``messages`` are the new turns, optionally with the assistant
        answer before them (a correction or a short answer refers to it)."""
        users = [m for m in messages if m.role == "user"]
        if not users:
            return GateDecision(False, "no user turn")
        signals = detect(messages, window=len(messages))
        if signals.correction:
            return GateDecision(True, "correction signal")
        if signals.reinforcement:
            return GateDecision(True, "reinforcement signal")
        asked: str | None = None
        in_role_play = False
        first_person: re.Match[str] | None = None
        for message in messages:
            if message.role == "assistant":
                asked = message.content
                continue
            plain, in_role_play = role_play(readable(capped(message.content)), in_role_play)
            material = _MATERIAL.search(plain)
            if material is not None:
                plain = plain[: material.start()]
            if in_role_play and not plain:
                continue
            cue = _SELF_EN_RE.search(plain) or _SELF_ZH_RE.search(plain)
            if cue is not None:
                return GateDecision(True, f"self-statement cue {cue.group()!r}")
            if first_person is None:
                first_person = _speaks_of_self(plain)
            reply = plain.strip()
            if (
                asked is not None
                and reply
                and len(reply) <= _MAX_ANSWER_CHARS
                and _ASKED_ABOUT_USER.search(readable(capped(asked))[-400:])
            ):
                return GateDecision(True, "reply to a question about the user")
            asked = None
        if first_person is not None:
            return GateDecision(True, f"first person {first_person.group()!r}")
        extraction = self._rule_extractor().propose(ExtractionRequest(_EMPTY, tuple(messages)))
        if extraction.change_set.new_facts:
            return GateDecision(True, "rule extractor statement")
        return GateDecision(False, "nothing about the user")
