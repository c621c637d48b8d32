"""The rule extractor: explicit statements in, facts and summaries out; nothing invented."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from memfold.errors import ConfigError
from memfold.extract.base import ExtractionRequest, Extractor, NewFact, Usage
from memfold.extract.rules import RuleExtractor
from memfold.model import (
    MANUAL_SOURCE,
    Fact,
    Message,
    Signals,
    Summary,
    empty_document,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "conversations.jsonl"


@pytest.fixture(scope="module")
def extractor() -> RuleExtractor:
    return RuleExtractor()


def _request(*turns: str | Message, document=None, signals=None) -> ExtractionRequest:
    """Plain strings are user turns; strings starting with "A:" are assistant turns."""
    messages = []
    for turn in turns:
        if isinstance(turn, Message):
            messages.append(turn)
        elif turn.startswith("A:"):
            messages.append(Message("assistant", turn[2:]))
        else:
            messages.append(Message("user", turn))
    return ExtractionRequest(
        document=document or empty_document(),
        messages=tuple(messages),
        signals=signals or Signals(),
        thread_id="t1",
    )


def _facts(extractor: RuleExtractor, *turns: str, **kwargs) -> list[NewFact]:
    return list(extractor.propose(_request(*turns, **kwargs)).change_set.new_facts)


def _contents(extractor: RuleExtractor, *turns: str) -> list[str]:
    return [f.content for f in _facts(extractor, *turns)]


# --- positive statements ---------------------------------------------------------------

POSITIVE = [
    # name
    ("My name is Alice", "Name is Alice", "context"),
    ("my name's Alice Schmidt.", "Name is Alice Schmidt", "context"),
    ("Hi! I'm Alice.", "Name is Alice", "context"),
    ("Hello, I am Bob and I need help with SQL.", "Name is Bob", "context"),
    ("You can call me Al.", "Prefers to be called Al", "preference"),
    ("我叫王伟。", "名字叫王伟", "context"),
    ("我的名字是李娜", "名字叫李娜", "context"),
    ("你好，我叫王小明，今年刚毕业", "名字叫王小明", "context"),
    # role
    ("I work as a data engineer.", "Works as a data engineer", "context"),
    ("I'm a backend developer", "Is a backend developer", "context"),
    ("I am a senior data scientist at Acme", "Is a senior data scientist", "context"),
    ("I'm Alice, a data engineer in Berlin.", "Is a data engineer", "context"),
    ("我是一名产品经理", "职业是产品经理", "context"),
    ("我是前端工程师，主要写 React", "职业是前端工程师", "context"),
    ("你好，我叫王伟，是一名产品经理", "职业是产品经理", "context"),
    # employer
    ("I work at Acme.", "Works at Acme", "context"),
    ("I work for Bank of America as an analyst", "Works at Bank of America", "context"),
    ("I'm a data engineer at Zalando", "Works at Zalando", "context"),
    ("我在字节跳动工作", "就职于字节跳动", "context"),
    ("我目前就职于阿里巴巴", "就职于阿里巴巴", "context"),
    # location
    ("I live in Berlin", "Lives in Berlin", "context"),
    ("I currently live in Frankfurt am Main with my wife", "Lives in Frankfurt am Main", "context"),
    ("I'm based in Berlin, Germany", "Based in Berlin, Germany", "context"),
    ("I moved to Lisbon last year", "Lives in Lisbon", "context"),
    ("I'm originally from Spain", "Comes from Spain", "context"),
    ("I'm German", "Is German", "context"),
    ("我住在上海", "住在上海", "context"),
    ("我现在住在杭州，离公司很近", "住在杭州", "context"),
    ("我在上海工作", "在上海工作", "context"),
    ("I live in 上海 now", "Lives in 上海", "context"),
    # languages
    ("I speak German and English", "Speaks German and English", "context"),
    ("I speak fluent Spanish", "Speaks fluent Spanish", "context"),
    ("My native language is Polish", "Native language is Polish", "context"),
    ("我会说英语和日语", "会说英语和日语", "context"),
    ("我的母语是粤语", "母语是粤语", "context"),
    # tools and stack
    ("I use Postgres and FastAPI", "Uses Postgres and FastAPI", "knowledge"),
    ("I mostly use Python and dbt for the pipelines", "Uses Python and dbt", "knowledge"),
    ("I'm using Postgres 16 and Redis", "Uses Postgres 16 and Redis", "knowledge"),
    ("we run Airflow on Kubernetes", "Team uses Airflow on Kubernetes", "knowledge"),
    (
        "Our stack is Python, dbt and Snowflake.",
        "Stack includes Python, dbt and Snowflake",
        "knowledge",
    ),
    ("我用 Go 写后端", "用 Go 写后端", "knowledge"),
    ("我们团队用 Go 和 PostgreSQL", "团队用 Go 和 PostgreSQL", "knowledge"),
    # likes and dislikes
    ("I prefer concise answers", "Prefers concise answers", "preference"),
    ("I really prefer tabs over spaces, honestly", "Prefers tabs over spaces", "preference"),
    ("I hate emojis", "Dislikes emojis", "preference"),
    ("I don't like long answers.", "Dislikes long answers", "preference"),
    ("I'm not a fan of long intros", "Dislikes long intros", "preference"),
    ("I love Rust", "Likes Rust", "preference"),
    ("I'm a big fan of functional programming", "Likes functional programming", "preference"),
    ("我喜欢简洁的回答", "喜欢简洁的回答", "preference"),
    ("我更喜欢用表格对比", "喜欢用表格对比", "preference"),
    ("我不喜欢表情符号", "不喜欢表情符号", "preference"),
    ("我讨厌冗长的开场白", "讨厌冗长的开场白", "preference"),
    # standing instructions
    ("always answer in Chinese", "Wants the assistant to always answer in Chinese", "preference"),
    ("Please never use emojis.", "Wants the assistant to never use emojis", "preference"),
    (
        "One thing: please always include type hints",
        "Wants the assistant to always include type hints",
        "preference",
    ),
    (
        "From now on, answer in English",
        "Wants the assistant to answer in English from now on",
        "preference",
    ),
    (
        "Answer briefly from now on",
        "Wants the assistant to answer briefly from now on",
        "preference",
    ),
    ("Stop using emojis", "Wants the assistant to stop using emojis", "preference"),
    ("以后都用中文回答", "希望以后都用中文回答", "preference"),
    ("以后回答都简短一点", "希望以后回答都简短一点", "preference"),
    ("请始终用中文回答，谢谢", "希望始终用中文回答", "preference"),
    ("永远不要用表情符号", "希望永远不要用表情符号", "preference"),
    # projects and goals
    ("I'm working on a migration to Kubernetes", "Working on a migration to Kubernetes", "goal"),
    (
        "I'm building a data platform for our team",
        "Building a data platform for their team",
        "goal",
    ),
    ("I'm learning Japanese", "Learning Japanese", "goal"),
    ("My goal is to ship v2 by March", "Goal is to ship v2 by March", "goal"),
    ("I want to learn Spanish", "Wants to learn Spanish", "goal"),
    ("我正在做一个迁移项目", "正在做一个迁移项目", "goal"),
    ("我最近在开发一个 AI 客服系统", "正在开发一个 AI 客服系统", "goal"),
    ("我的目标是今年转岗做数据分析", "目标是今年转岗做数据分析", "goal"),
    ("我最近在学日语", "在学日语", "goal"),
    ("我想学Rust", "打算学Rust", "goal"),
    # mixed Chinese and English
    ("我的技术栈是 Python 和 FastAPI", "技术栈包括 Python 和 FastAPI", "knowledge"),
    (
        "好的。I prefer bullet points over paragraphs",
        "Prefers bullet points over paragraphs",
        "preference",
    ),
    ("对了 I work at Tencent 深圳", "Works at Tencent", "context"),
]


@pytest.mark.parametrize(("text", "content", "category"), POSITIVE)
def test_explicit_statement_becomes_fact_with_content_and_category(
    extractor: RuleExtractor, text: str, content: str, category: str
) -> None:
    facts = _facts(extractor, text)
    found = {f.content: f for f in facts}
    assert content in found, f"{text!r} gave {[f.content for f in facts]}"
    fact = found[content]
    assert fact.category == category
    assert fact.confidence == 0.9
    assert (fact.scope, fact.durability) == ("user", "durable")
    assert fact.source_error is None


# --- negative statements: nothing may be invented --------------------------------------

NEGATIVE = [
    # not a name
    "I'm going to use Rust",
    "I'm Happy to help",
    "I'm sorry, that was my fault",
    "call me later",
    "Never mind",
    "我叫你帮我改代码",
    "我是说，这个方案不太对",
    "我是说我们应该先做测试",
    # hypotheticals
    "If I were a manager I would reorganise the team",
    "Suppose I live in Tokyo, what time zone is that",
    "假如我是老板，我会怎么做",
    "如果我住在北京，通勤要多久",
    "Imagine I'm a backend developer at Google",
    # questions
    "am I a good engineer?",
    "Do I use Postgres or MySQL here?",
    "Should I prefer tabs",
    "我是不是产品经理？",
    "我是不是应该用 Go",
    "我喜欢这个方案吗",
    # third parties
    "my sister lives in Paris",
    "My boss prefers short emails",
    "我妈妈住在北京",
    "我妈妈是老师，住在北京",
    "我同事喜欢用 Vim",
    # negations and the past
    "I don't live in Berlin anymore",
    "I no longer work at Acme",
    "I used to live in Munich",
    "I don't use Java",
    "我以前住在北京",
    "我已经不在字节跳动工作了",
    # reported speech and quotes
    'he said "I live in Rome"',
    "she told me I'm a genius",
    "My manager thinks I prefer remote work",
    "He said that I live in a bubble",
    "Bob says I use Emacs",
    "他说我是一名设计师",
    "听说我喜欢咖啡",
    "Use the text 'I live in Rome' as the sample",
    "引用原文：“我住在罗马”",
    # code, quoted replies, uploads
    "```\nI live in Rome\nmy name is Mallory\n```",
    "Please check `I use Java` in the docs",
    "> I live in Rome\n> I prefer tabs",
    "<uploaded_files>\nnotes.txt: I live in Rome, I hate tests\n</uploaded_files>",
    # pronouns, vague values, acknowledgements
    "I like it",
    "I love that",
    "I'm working on it",
    "I like your answer",
    "ok",
    "thanks!",
    "好的",
    "谢谢",
    "以后再说吧",
    "我在家工作",
    "我在公司上班",
    # requests, not statements
    "I'd like you to summarize this",
    "I would like a shorter answer",
    "Translate: I live in Berlin",
    "把这句话翻译成英文：我住在上海",
    "For example, I live in Berlin and work remotely",
    # lower-case proper nouns are not trusted as names or places
    "i live in berlin",
    "I work at home",
    "I work for myself",
    # negated names, hedges, verbs after 叫, surprise, reported and example lines
    "My name is not Bob",
    "My name is actually not Bob, it's a nickname",
    "I'm not sure I prefer Python",
    "Maybe I prefer Python",
    "Perhaps I live in Berlin, perhaps not",
    "我叫了外卖",
    "我叫外卖了",
    "我可能住在上海",
    "我也许喜欢Rust",
    "The user said: I live in Paris.",
    "Write a story where the hero says I live in Paris.",
    "Example: I live in Paris.",
]

WRONG_VALUES = [
    # "I" is not a tool; the rest of the sentence is still read
    ("I use Python and I like Go.", ["Uses Python", "Likes Go"]),
    ("我是说，我住在上海不是北京。", ["住在上海"]),
]


@pytest.mark.parametrize(("text", "contents"), WRONG_VALUES)
def test_statement_values_stop_where_the_statement_does(
    extractor: RuleExtractor, text: str, contents: list[str]
) -> None:
    assert _contents(extractor, text) == contents


@pytest.mark.parametrize(
    ("text", "contents"),
    [
        ("I live in Berlin but I work in Potsdam.", ["Lives in Berlin", "Works in Potsdam"]),
        ("我住在苏州，在上海工作。", ["住在苏州", "在上海工作"]),
    ],
)
def test_work_place_does_not_supersede_home(
    extractor: RuleExtractor, text: str, contents: list[str]
) -> None:
    assert _contents(extractor, text) == contents


def test_work_place_does_not_remove_home_fact(extractor: RuleExtractor) -> None:
    document = empty_document().with_changes(facts=[Fact("fact_home", "住在苏州", source="t0")])
    changes = extractor.propose(_request("我在上海工作。", document=document)).change_set
    assert changes.removals == ()


@pytest.mark.parametrize("text", NEGATIVE)
def test_non_statement_yields_no_fact(extractor: RuleExtractor, text: str) -> None:
    facts = _facts(extractor, text)
    durable = [f.content for f in facts if f.scope == "user"]
    assert durable == [], f"{text!r} gave {durable}"


def test_going_to_use_is_not_an_identity_or_stack_statement(extractor: RuleExtractor) -> None:
    assert _contents(extractor, "I'm going to use Rust for the parser.") == []


# self-judgements and hedges about oneself are not a job; past jobs and homes are not
# current ones
SELF_JUDGEMENTS_AND_PAST = [
    "我觉得我是个好老师",
    "我是个好老师",
    "我是个半吊子程序员",
    "我算是半个程序员吧",
    "我感觉自己是个失败的产品经理",
    "I think I'm a decent engineer",
    "I feel like I'm a terrible manager",
    "I'm a bad developer",
    "I'm a good teacher, I hope",
    "I think I'm bad at SQL",
    "I'm a former teacher",
    "I'm a former engineer at Google",
    "之前我在阿里工作",
    "我在阿里工作过",
    "我之前是老师",
    "我原来住在北京",
    "I previously worked at Google",
    "I was an engineer at Google",
    "I used to live in Paris",
]


@pytest.mark.parametrize("text", SELF_JUDGEMENTS_AND_PAST)
def test_self_judgement_or_past_statement_yields_no_fact(
    extractor: RuleExtractor, text: str
) -> None:
    assert _contents(extractor, text) == []


@pytest.mark.parametrize(
    ("text", "contents"),
    [
        (
            "I'm an engineer by training but I work as a PM",
            ["Is an engineer by training", "Works as a PM"],
        ),
        ("I'm a student and I work as a tutor.", ["Works as a tutor"]),
        ("I moved from Paris to Berlin", ["Lives in Berlin"]),
        ("I recently moved to Berlin from Paris.", ["Lives in Berlin"]),
        ("I used to live in Paris, now I live in Berlin.", ["Lives in Berlin"]),
        ("我从北京搬到了上海", ["住在上海"]),
        ("我去年从北京搬到上海。", ["住在上海"]),
        ("我以前在阿里工作，现在我在腾讯工作", ["就职于腾讯"]),
    ],
)
def test_the_current_role_or_place_wins_over_training_and_the_past(
    extractor: RuleExtractor, text: str, contents: list[str]
) -> None:
    assert _contents(extractor, text) == contents


def test_trained_role_does_not_supersede_the_current_one(extractor: RuleExtractor) -> None:
    doc = empty_document().with_changes(facts=[Fact("fact_role", "Works as a PM", source="t0")])
    change = extractor.propose(_request("I'm an engineer by training.", document=doc)).change_set
    assert [f.content for f in change.new_facts] == ["Is an engineer by training"]
    assert change.removals == ()


# --- task-scoped instructions -------------------------------------------------------------

TASK_SCOPED = [
    ("Always use tabs for this PR", "Wants the assistant to always use tabs for this PR"),
    ("Just for now, always answer in English", "Wants the assistant to always answer in English"),
    ("In this file, never use print", "Wants the assistant to never use print"),
    ("以后都用英文回答，这次先这样", "希望以后都用英文回答"),
]


@pytest.mark.parametrize(("text", "content"), TASK_SCOPED)
def test_task_scoped_instruction_is_labelled_task_and_temporary(
    extractor: RuleExtractor, text: str, content: str
) -> None:
    facts = {f.content: f for f in _facts(extractor, text)}
    assert content in facts, list(facts)
    assert (facts[content].scope, facts[content].durability) == ("task", "temporary")


def test_task_scoped_fact_stays_out_of_summaries(extractor: RuleExtractor) -> None:
    change = extractor.propose(_request("For now I live in Hamburg")).change_set
    assert [f.scope for f in change.new_facts] == ["task"]
    assert change.summaries == ()


# --- corrections --------------------------------------------------------------------------

CORRECTIONS = [
    (
        "A:You should use MySQL 8 for this. It is fast.",
        "No, I meant PostgreSQL 16.",
        "Correction: the user meant PostgreSQL 16",
        "You should use MySQL 8 for this",
    ),
    (
        "A:Berlin is the capital of France! Let me explain.",
        "That's wrong, it's Paris.",
        "Correction: it's Paris",
        "Berlin is the capital of France",
    ),
    (
        "A:Sure! Here's the **plan**: deploy to production first.",
        "You misunderstood, I asked for the staging cluster",
        "Correction: the user asked for the staging cluster",
        "Here's the plan: deploy to production first",
    ),
    (
        "A:Spark 2.4 supports that.",
        "Actually, I said Spark 3.5",
        "Correction: the user said Spark 3.5",
        "Spark 2.4 supports that",
    ),
    ("A:用 MySQL 吧。它很快。", "不对，是 PostgreSQL", "纠正：应该是PostgreSQL", "用 MySQL 吧"),
    ("A:你用的是 Java。", "我说的是 Kotlin", "纠正：用户说的是Kotlin", "你用的是 Java"),
    ("A:周二开会。", "错了，应该是周三", "纠正：应该是周三", "周二开会"),
    (
        "A:你应该用 MySQL。",
        "不是MySQL，是PostgreSQL",
        "纠正：是PostgreSQL，不是MySQL",
        "你应该用 MySQL",
    ),
    (
        "A:Use pandas for that.",
        "你理解错了，我要的是 Polars 版本",
        "纠正：用户要的是 Polars 版本",
        "Use pandas for that",
    ),
]


@pytest.mark.parametrize(("assistant", "user", "content", "source_error"), CORRECTIONS)
def test_correction_records_fact_with_source_error_of_previous_assistant_turn(
    extractor: RuleExtractor, assistant: str, user: str, content: str, source_error: str
) -> None:
    facts = {f.content: f for f in _facts(extractor, "earlier question", assistant, user)}
    assert content in facts, list(facts)
    fact = facts[content]
    assert fact.category == "correction"
    assert fact.confidence == 0.95
    assert fact.source_error == source_error


NOT_CORRECTIONS = [
    "I said hello to my mom yesterday.",
    "I meant to ask about Rust.",
    "不是吧，这么贵？",
    "不对吧，这么贵？",
]


@pytest.mark.parametrize("text", NOT_CORRECTIONS)
def test_remark_opening_like_a_correction_is_not_one(extractor: RuleExtractor, text: str) -> None:
    for signals in (Signals(), Signals(correction=True)):
        facts = _facts(extractor, "A:Here you go.", text, signals=signals)
        assert [f.content for f in facts if f.category == "correction"] == []


def test_source_error_is_the_assistant_sentence_the_correction_talks_about(
    extractor: RuleExtractor,
) -> None:
    assistant = (
        "A:The model references updated_at, which is missing. Since you're on MySQL 8, "
        "add the column."
    )
    user = "No, I meant the Postgres warehouse. We don't use MySQL at all."
    (fact,) = _facts(extractor, assistant, user)
    assert fact.content == "Correction: the user meant the Postgres warehouse"
    assert fact.source_error == "Since you're on MySQL 8, add the column"


def test_correction_source_error_is_cut_to_200_characters(extractor: RuleExtractor) -> None:
    long_answer = "A:" + "word " * 100 + "end."
    (fact,) = _facts(extractor, long_answer, "No, I meant the other table")
    assert fact.source_error is not None
    assert len(fact.source_error) <= 200
    assert fact.source_error.startswith("word word")


def test_correction_without_assistant_turn_has_no_source_error(extractor: RuleExtractor) -> None:
    (fact,) = _facts(extractor, "No, I meant the staging cluster")
    assert (fact.category, fact.source_error) == ("correction", None)


def test_correction_refers_to_the_assistant_turn_just_before_it(extractor: RuleExtractor) -> None:
    facts = _facts(
        extractor,
        "q1",
        "A:First answer is here.",
        "q2",
        "A:Second answer is wrong.",
        "不对，是周五",
    )
    assert [f.source_error for f in facts] == ["Second answer is wrong"]


TASK_NOT_CORRECTION = ["Redo it with pandas", "改用 Polars 重写", "Please try again", "再来一次"]


@pytest.mark.parametrize("text", TASK_NOT_CORRECTION)
def test_task_instruction_is_not_a_correction(extractor: RuleExtractor, text: str) -> None:
    facts = _facts(extractor, "A:Here is the code.", text, signals=Signals(correction=True))
    assert [f for f in facts if f.category == "correction"] == []


def test_correction_mid_message_needs_the_signal_hint(extractor: RuleExtractor) -> None:
    turns = ("A:Use MySQL here.", "Thanks for the help. No, I meant Postgres though.")
    assert _facts(extractor, *turns) == []
    hinted = _facts(extractor, *turns, signals=Signals(correction=True))
    assert [f.content for f in hinted] == ["Correction: the user meant Postgres"]


def test_signal_hint_alone_creates_no_correction(extractor: RuleExtractor) -> None:
    assert _facts(extractor, "A:Use MySQL.", "hmm", signals=Signals(correction=True)) == []


# --- only the user's words ------------------------------------------------------------------


def test_assistant_text_never_produces_facts(extractor: RuleExtractor) -> None:
    statements = [text for text, _, _ in POSITIVE]
    request = _request(*("A:" + text for text in statements))
    change = extractor.propose(request).change_set
    assert change.is_empty


def test_user_statement_among_assistant_turns_is_the_only_fact(extractor: RuleExtractor) -> None:
    contents = _contents(extractor, "A:I live in Rome.", "I live in Berlin", "A:I prefer tabs.")
    assert contents == ["Lives in Berlin"]


def test_code_block_is_ignored_but_text_around_it_is_read(extractor: RuleExtractor) -> None:
    text = "I live in Berlin.\n```python\n# I live in Rome\nname = 'my name is Eve'\n```\nthanks"
    assert _contents(extractor, text) == ["Lives in Berlin"]


def test_uploaded_files_block_is_ignored(extractor: RuleExtractor) -> None:
    text = (
        "<UPLOADED_FILES>\nI live in Rome\n</UPLOADED_FILES>\nI'm working on a Snowflake migration"
    )
    assert _contents(extractor, text) == ["Working on a Snowflake migration"]


def test_several_statements_in_one_message_are_all_found_in_order(
    extractor: RuleExtractor,
) -> None:
    text = "Hi! I'm Alice. I'm a data engineer at Zalando and I live in Berlin. I hate emojis."
    assert _contents(extractor, text) == [
        "Name is Alice",
        "Is a data engineer",
        "Works at Zalando",
        "Lives in Berlin",
        "Dislikes emojis",
    ]


def test_repeated_statement_is_proposed_once(extractor: RuleExtractor) -> None:
    assert _contents(extractor, "I live in Berlin", "I live in Berlin.") == ["Lives in Berlin"]


def test_later_statement_of_exclusive_attribute_wins_within_request(
    extractor: RuleExtractor,
) -> None:
    assert _contents(extractor, "I live in Berlin", "Update: I moved to Munich") == [
        "Lives in Munich"
    ]


def test_fact_already_in_document_is_not_proposed_again(extractor: RuleExtractor) -> None:
    doc = empty_document().with_changes(facts=[Fact("fact_1", "lives in  berlin")])
    assert _facts(extractor, "I live in Berlin", document=doc) == []


def test_new_location_supersedes_extracted_location_fact(extractor: RuleExtractor) -> None:
    doc = empty_document().with_changes(
        facts=[
            Fact("fact_old", "Lives in Munich", source="t0"),
            Fact("fact_other", "Prefers concise answers", source="t0"),
        ]
    )
    change = extractor.propose(_request("I live in Berlin", document=doc)).change_set
    assert [f.content for f in change.new_facts] == ["Lives in Berlin"]
    assert [(r.fact_id, r.replaced_by) for r in change.removals] == [("fact_old", 0)]


def test_manual_fact_is_never_removed(extractor: RuleExtractor) -> None:
    doc = empty_document().with_changes(
        facts=[Fact("fact_manual", "Lives in Munich", source=MANUAL_SOURCE)]
    )
    change = extractor.propose(_request("I live in Berlin", document=doc)).change_set
    assert change.removals == ()


# --- no summaries: the injected block says nothing twice ------------------------------------


def _doc_with(**summaries: str):
    merged = dict(empty_document().summaries)
    merged.update({name: Summary(text) for name, text in summaries.items()})
    return empty_document().with_changes(summaries=merged)


def test_rule_extractor_writes_facts_and_never_summaries(extractor: RuleExtractor) -> None:
    change = extractor.propose(
        _request(
            "I'm Alice, a data engineer in Berlin. I use Python and dbt.",
            "I'm working on a migration to Snowflake. I prefer concise answers.",
            "我住在上海。我喜欢简洁的回答。",
            document=_doc_with(workContext="Leads the analytics platform team"),
        )
    ).change_set
    assert change.summaries == ()
    assert "Is a data engineer" in {f.content for f in change.new_facts}


def test_a_wife_is_a_fact_about_the_user_but_her_job_is_not(extractor: RuleExtractor) -> None:
    assert _contents(extractor, "My wife is a doctor") == ["Has a wife"]


# --- pattern files --------------------------------------------------------------------------

USER_RULES = """
defines:
  TEAM: '[A-Z][a-z]+'
rules:
  - id: mine.team
    pattern: '\\bI(?:''m| am) on the (?P<value><<TEAM>>) team'
    category: context
    template: 'On the {value} team'
    section: workContext
  - id: mine.pet
    pattern: '\\bmy dog is called (?P<value>\\w+)'
    category: personal
    template: 'Has a dog called {value}'
    confidence: 0.8
guards:
  - '\\bjoking\\b'
"""


def test_user_pattern_file_extends_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(USER_RULES, encoding="utf-8")
    extended = RuleExtractor(extra_pattern_files=[path])
    change = extended.propose(
        _request("I'm on the Payments team. My dog is called Rex.")
    ).change_set
    facts = {f.content: f for f in change.new_facts}
    assert facts["On the Payments team"].category == "context"
    assert (facts["Has a dog called Rex"].category, facts["Has a dog called Rex"].confidence) == (
        "personal",
        0.8,
    )
    assert change.summaries == ()  # 'section' is accepted for 0.1 files and ignored
    # built-in rules still apply, and the user's guard vetoes a sentence
    assert [f.content for f in _facts(extended, "I live in Berlin")] == ["Lives in Berlin"]
    assert _facts(extended, "just joking, I live in Berlin") == []


def test_builtin_extractor_does_not_know_user_rules() -> None:
    assert _facts(RuleExtractor(), "I'm on the Payments team") == []


_GOOD_RULE = (
    "  - pattern: 'I am (?P<value>\\w+)'\n    category: context\n    template: 'x {value}'\n"
)


def _rules(rule: str = _GOOD_RULE, extra: str = "") -> str:
    return "rules:\n" + rule + extra


BROKEN = [
    ("rules: [\n  - id: x\n", "not valid YAML"),
    ("- just\n- a list\n", "top level must be a mapping"),
    ("rulez: []\n", "unknown keys ['rulez']"),
    (_rules(_GOOD_RULE.replace("(?P<value>\\w+)", "(unclosed")), "not a valid regular expression"),
    (_rules(_GOOD_RULE.replace("(?P<value>\\w+)", "(\\w+)")), "(?P<value>...)"),
    (_rules(_GOOD_RULE.replace("x {value}", "x {who}")), "template uses {who}"),
    (_rules(_GOOD_RULE.replace("\\w+", "<<NOPE>>")), "unknown macro <<NOPE>>"),
    (_rules(extra="    section: hobbies\n"), "'section' must be one of"),
    (_rules(extra="    confidence: 1.5\n"), "confidence=1.5"),
    (_rules(extra="    reject: [yes, no]\n"), "quote yes/no"),
    (_rules(_GOOD_RULE.replace("    category: context\n", "")), "'category' is required"),
    (_rules(extra="    colour: red\n"), "unknown keys ['colour']"),
    (_rules(extra="    id: en.name.my_name_is\n"), "already used"),
    ("guards: ['(bad']\n", "not a valid regular expression"),
]


@pytest.mark.parametrize(("text", "problem"), BROKEN)
def test_broken_pattern_file_raises_config_error_naming_file_and_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "broken_rules.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        RuleExtractor(extra_pattern_files=[path])
    message = str(raised.value)
    assert "broken_rules.yaml" in message
    assert problem in message


def test_missing_pattern_file_raises_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.yaml.*cannot be read"):
        RuleExtractor(extra_pattern_files=[tmp_path / "missing.yaml"])


def test_single_path_instead_of_sequence_is_a_type_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="sequence of paths"):
        RuleExtractor(extra_pattern_files=str(tmp_path / "x.yaml"))


# --- contract, determinism, speed --------------------------------------------------------------


def test_rule_extractor_satisfies_the_extractor_protocol(extractor: RuleExtractor) -> None:
    assert isinstance(extractor, Extractor)
    assert extractor.name == "rules"
    assert extractor.propose(_request("I live in Berlin")).usage == Usage()


def test_same_input_gives_same_output(extractor: RuleExtractor) -> None:
    turns = [text for text, _, _ in POSITIVE] + [a for a, _, _, _ in CORRECTIONS]
    request = _request(*turns)
    first = extractor.propose(request)
    assert extractor.propose(request) == first
    assert RuleExtractor().propose(request) == first


def _twenty_turns() -> ExtractionRequest:
    user = [
        "Hi! I'm Alice, a data engineer in Berlin. I work at Zalando.",
        "I mostly use Python and dbt, and we run Airflow on Kubernetes.",
        "I prefer concise answers. Please never use emojis.",
        "我是一名产品经理，住在上海。以后都用中文回答。",
        "No, I meant the Postgres warehouse, dbt-postgres 1.8.",
        "I'm working on a migration of our warehouse to Snowflake.",
        "Can you show me how to write an incremental model with a unique key?",
        "My goal is to finish the migration by the end of Q3.",
        "thanks",
        "ok, and how do I backfill only the last 7 days without a full refresh?",
    ]
    assistant = (
        "Here is an example of an incremental model. It uses `is_incremental()` to filter new "
        "rows, and a unique key so updated rows are merged rather than appended. " * 3
    )
    turns: list[str] = []
    for text in user:
        turns.extend([text, "A:" + assistant])
    return _request(*turns)


def test_twenty_turn_conversation_is_read_without_stalling(extractor: RuleExtractor) -> None:
    # A guard, not the target: the 20 ms target is met in benchmarks/bench_rules.py. The
    # bound leaves room for a loaded CI machine with coverage on (seen: > 20 ms there).
    request = _twenty_turns()
    assert len(request.messages) == 20
    extractor.propose(request)  # warm up
    best = min(_timed(extractor, request) for _ in range(20))
    assert best < 0.2, f"best of 20 runs: {best * 1000:.2f} ms"


def _timed(extractor: RuleExtractor, request: ExtractionRequest) -> float:
    start = time.perf_counter()
    extractor.propose(request)
    return time.perf_counter() - start


# --- the README example conversations -----------------------------------------------------------


def _example_requests() -> dict[str, ExtractionRequest]:
    requests = {}
    for line in EXAMPLES.read_text(encoding="utf-8").splitlines():
        conversation = json.loads(line)
        messages = tuple(
            Message(m["role"], m["content"], m.get("id"))
            for m in conversation["messages"]
            if m["role"] in ("user", "assistant") and m.get("content") and not m.get("tool_calls")
        )
        requests[conversation["thread_id"]] = ExtractionRequest(
            empty_document(), messages, thread_id=conversation["thread_id"]
        )
    return requests


def test_example_conversations_have_the_documented_shape() -> None:
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()
    assert 8 <= len(lines) <= 12
    users = set()
    for line in lines:
        conversation = json.loads(line)
        assert set(conversation) == {"thread_id", "user_id", "agent", "messages"}
        assert conversation["agent"] in (None, "coder")
        users.add(conversation["user_id"])
        for message in conversation["messages"]:
            assert message["role"] in ("system", "user", "assistant", "tool")
    assert users == {"alice", "wei"}
    text = EXAMPLES.read_text(encoding="utf-8")
    assert "<uploaded_files>" in text
    assert '"tool_calls"' in text
    assert '"role": "tool"' in text


def test_example_conversations_give_a_sensible_memory(extractor: RuleExtractor) -> None:
    by_user: dict[str, list[NewFact]] = {"alice": [], "wei": []}
    for thread, request in _example_requests().items():
        user = "alice" if thread.startswith("alice") else "wei"
        by_user[user].extend(extractor.propose(request).change_set.new_facts)
    alice = {f.content: f for f in by_user["alice"]}
    wei = {f.content: f for f in by_user["wei"]}
    for content in [
        "Name is Alice",
        "Is a data engineer",
        "Works at Zalando",
        "Correction: the user lives in Berlin, not Munich",
        "Prefers concise answers",
        "Wants the assistant to never use emojis",
        "Working on a migration of their warehouse to Snowflake",
        "Speaks German and English",
    ]:
        assert content in alice, content
    for content in ["名字叫王伟", "职业是产品经理", "住在上海", "希望以后都用中文回答"]:
        assert content in wei, content
    assert any(f.category == "correction" and f.source_error for f in by_user["alice"])
    assert any(f.category == "correction" and f.source_error for f in by_user["wei"])
    everything = " ".join(alice) + " ".join(wei)
    for planted in ("Rome", "Paris", "Munich", "manager", "老板"):
        # upload blocks, code, hypotheticals, third parties and assistant text
        assert planted not in everything.replace("not Munich", ""), planted
