"""Which facts the LLM extractor sees: all of them, or above ``max_facts`` a smaller view.

The extractor needs memory for two things: not to repeat a fact it already has, and to
see the fact the new turns contradict ("I moved to Oslo" must see "Lives in Stockholm",
so the old one can be replaced). Neither needs the whole memory. Above ``max_facts``
facts the view holds, in this order, until ``max_facts`` facts or ``max_tokens`` tokens:

1. every ``correction`` fact (they say how the assistant must not behave again);
2. the facts related to the new turns: the same slot (home, work, name, diet, languages,
   family, editor, programming languages, devices, transport, answer style…: keywords in
   English and Chinese, so "moved to Oslo" meets "Lives in Stockholm" without a shared
   word) and shared terms (``memfold.search`` terms, CJK-aware), each slot and term
   weighted by how rare it is in memory (a slot most facts are in says little);
3. the rest, most confident (then most recently updated) first.

Facts keep their document order in the view. A duplicate the model proposes of a fact
outside the view is caught by ``apply``'s duplicate check. Pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from memfold.model import Fact, Message
from memfold.search._terms import terms

__all__ = ["DEFAULT_VIEW_MAX_FACTS", "DEFAULT_VIEW_MAX_TOKENS", "select_facts", "slots"]

DEFAULT_VIEW_MAX_FACTS: Final = 40
DEFAULT_VIEW_MAX_TOKENS: Final = 1_000

# Slot → keywords (whole words, case-folded) and Chinese substrings. A fact and the new
# turns in one slot are related even when they share no word.
_SLOT_WORDS: Final[dict[str, tuple[str, str]]] = {
    "home": (
        r"live|lives|living|lived|based|moved|move|moving|relocat\w*|home|city|town|country|"
        r"hometown|flat|apartment|house|neighbourhood|neighborhood",
        r"住|搬|定居|老家|家乡|城市|来自|在.{0,3}(?:市|省)",
    ),
    "work": (
        r"works? (?:at|for|as|in)|working (?:at|for|as)|worked (?:at|for|as)|job|jobs|"
        r"company|employer|employed|joined|joining|startup|hired|quit|career|role|position|"
        r"promoted|boss|colleagues?|freelance\w*|self-employed|retired|unemployed|engineer|"
        r"developer|teacher|nurse|doctor|designer|founder|owner|intern|started at",
        r"工作|上班|公司|单位|入职|离职|跳槽|职位|岗位|老板|做.{0,4}的|是.{0,6}(?:师|员|生|经理)|"
        r"在.{1,10}(?:做|当|上班)|经理|退休|自由职业|转行|改行|(?:做|当).{0,4}(?:师|员)",
    ),
    "name": (r"name|named|call|called", r"叫|名字|姓"),
    "diet": (
        r"vegan|vegetarian|pescatarian|eat|eats|eating|food|diet|allergic|allergy|allergies|"
        r"intolerant|gluten|lactose|meat|pork|beef|seafood|halal|kosher|spicy|cook|cooking",
        r"吃|素|过敏|忌口|饮食|辣|海鲜|肉",
    ),
    "health": (
        r"health|condition|diabetes|diabetic|asthma|adhd|pregnant|injury|pain|medication|"
        r"allergic|allergy|sleep|therapy|therapist",
        r"病|血压|糖尿|怀孕|药|疼|睡眠|健康",
    ),
    "language": (
        r"language|languages|speak|speaks|speaking|english|chinese|mandarin|cantonese|"
        r"french|german|spanish|japanese|korean|portuguese|italian|russian|arabic|hindi|"
        r"native|fluent|bilingual",
        r"语|中文|英文|汉语|方言|母语",
    ),
    "family": (
        r"wife|husband|partner|spouse|married|divorced|single|girlfriend|boyfriend|son|"
        r"daughter|kids?|children|child|baby|twins|parents?|mother|father|mum|mom|dad|"
        r"sister|brother|family|dog|dogs|cat|cats|pets?",
        r"老公|老婆|妻子|丈夫|对象|男朋友|女朋友|孩子|女儿|儿子|宝宝|父母|爸|妈|家人|结婚|离婚|猫|狗|宠物",
    ),
    "age": (r"age|aged|old|years|birthday|born|retired|turned \d+", r"岁|年龄|生日|出生|年纪"),
    # tools, split by kind: a crowded slot ranks its facts by confidence alone, and a
    # developer's memory holds many facts about some tool
    "editor": (
        r"editor|editors|ide|ides|vim|neovim|nvim|emacs|vscode|vs code|jetbrains|pycharm|"
        r"intellij|sublime|cursor|xcode",
        r"编辑器|开发工具",
    ),
    "code": (
        r"programming|python|java|javascript|typescript|kotlin|swift|go|golang|rust|ruby|"
        r"php|scala|elixir|haskell|react|vue|angular|django|flask|rails|spring|"
        r"node|nodejs|script|scripts|scripting|stack",
        r"编程|语言|技术栈|框架|脚本",
    ),
    "device": (
        r"laptop|laptops|desktop|computer|pc|phone|mac|macbook|macos|windows|linux|ubuntu|"
        r"android|ios|iphone|ipad|tablet",
        r"电脑|手机|笔记本|系统|平板",
    ),
    "tools": (
        r"use|uses|using|used|tool|tools|library|framework|postgres|postgresql|mysql|app|apps",
        r"用|使用|工具",
    ),
    "transport": (
        r"car|cars|drive|drives|driving|drove|bike|bikes|biking|cycle|cycling|commute|"
        r"commutes|commuting|train|bus|subway|metro|scooter|motorbike|motorcycle|tesla",
        r"开车|车|骑|通勤|地铁|公交",
    ),
    "answers": (
        r"answer|answers|answering|reply|replies|respond|response|responses|explain|"
        r"explanation|explanations|format|formatting|short|shorter|brief|concise|long|"
        r"detailed|verbose|bullet|bullets|emoji|emojis|tone|style|formal|casual|language",
        r"回答|回复|解释|格式|简短|简洁|详细|语气|风格|啰嗦|表情",
    ),
    "schedule": (
        r"morning|mornings|evening|evenings|night|nights|weekend|weekends|daily|weekly|"
        r"schedule|routine|timezone|time zone|utc",
        r"早上|晚上|周末|每天|每周|时区|作息",
    ),
    "learning": (
        r"learn|learning|learnt|learned|study|studying|studies|course|exam|degree|"
        r"university|school|bootcamp|phd|master|student|students|graduat\w*|college",
        r"学|考|课程|大学|学校|读研|考研|留学",
    ),
}
_SLOT_RES: Final[dict[str, tuple[re.Pattern[str], re.Pattern[str]]]] = {
    slot: (re.compile(rf"\b(?:{words})\b", re.IGNORECASE), re.compile(zh))
    for slot, (words, zh) in _SLOT_WORDS.items()
}
# Fact lines and turns are scanned up to this many characters for slots.
_SLOT_SCAN_CHARS: Final = 2_000
# A fact in a slot of the turns counts as this many shared rare terms.
_SLOT_WEIGHT: Final = 2.0


def slots(text: str) -> frozenset[str]:
    """The slots ``text`` speaks about (``home``, ``work``, ``diet``, …)."""
    head = text[:_SLOT_SCAN_CHARS]
    return frozenset(
        slot for slot, (latin, zh) in _SLOT_RES.items() if latin.search(head) or zh.search(head)
    )


def _estimate(text: str) -> int:
    return max(1, len(text) // 4)


def select_facts(
    facts: Sequence[Fact],
    messages: Iterable[Message],
    *,
    max_facts: int = DEFAULT_VIEW_MAX_FACTS,
    max_tokens: int = DEFAULT_VIEW_MAX_TOKENS,
    count: Callable[[str], int] | None = None,
    line: Callable[[Fact], str] = lambda fact: fact.content,
) -> tuple[Fact, ...]:
    """The facts of the view (see the module doc), in document order.

    ``count`` measures one fact's ``line`` as the prompt shows it (an estimate of 4
    characters per token without it). At most ``max_facts`` facts, taken while the lines
    fit ``max_tokens``; with ``len(facts) <= max_facts`` every fact is in view.

    Raises:
        ValueError: ``max_facts`` or ``max_tokens`` is below 1.
    """
    if max_facts < 1 or max_tokens < 1:
        raise ValueError(f"max_facts={max_facts}, max_tokens={max_tokens}: must be at least 1")
    if len(facts) <= max_facts:
        return tuple(facts)
    measure = count if count is not None else _estimate
    said = "\n".join(m.content[:_SLOT_SCAN_CHARS] for m in messages)
    said_terms = set(terms(said))
    said_slots = slots(said)
    fact_terms = [set(terms(fact.content)) for fact in facts]
    frequency: dict[str, int] = {}
    for found in fact_terms:
        for term in found & said_terms:
            frequency[term] = frequency.get(term, 0) + 1
    total = len(facts)

    fact_slots = [slots(fact.content) & said_slots for fact in facts] if said_slots else []
    slot_frequency: dict[str, int] = {}
    for found_slots in fact_slots:
        for slot in found_slots:
            slot_frequency[slot] = slot_frequency.get(slot, 0) + 1

    def related(index: int) -> float:
        shared = fact_terms[index] & said_terms
        score = sum(math.log(1 + total / frequency[term]) for term in shared)
        if fact_slots:  # a slot few facts are in says more, like a rare term
            score += sum(
                _SLOT_WEIGHT * math.log(1 + total / slot_frequency[slot])
                for slot in fact_slots[index]
            )
        return score

    scores = [related(i) for i in range(total)]

    def order(index: int) -> tuple[int, float, float, str]:
        fact = facts[index]
        group = 0 if fact.category == "correction" else 1 if scores[index] > 0 else 2
        return (group, -scores[index], -fact.confidence, _negated(fact.updated_at))

    chosen: list[int] = []
    used = 0
    for index in sorted(range(total), key=order):
        if len(chosen) >= max_facts:
            break
        cost = measure(line(facts[index]))
        if used + cost > max_tokens:
            continue  # a shorter fact further down may still fit
        chosen.append(index)
        used += cost
    return tuple(facts[i] for i in sorted(chosen))


def _negated(stamp: str) -> str:
    """A key that sorts ISO times newest first."""
    return "".join(chr(0x10FFFF - ord(c)) if ord(c) < 0x10FFFF else c for c in stamp)
