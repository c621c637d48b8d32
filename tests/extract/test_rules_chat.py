"""The rule extractor on realistic chat (issue 15): what it finds, what it never invents,
how facts read, and which old facts a new statement replaces."""

from __future__ import annotations

import time

import pytest

from memfold.extract.base import ExtractionRequest
from memfold.extract.rules import RuleExtractor
from memfold.model import Fact, Message, Signals, empty_document


@pytest.fixture(scope="module")
def extractor() -> RuleExtractor:
    return RuleExtractor()


def _request(*turns: str, document=None) -> ExtractionRequest:
    messages = tuple(
        Message("assistant", t[2:]) if t.startswith("A:") else Message("user", t) for t in turns
    )
    return ExtractionRequest(document or empty_document(), messages, Signals(), "t1")


def _contents(extractor: RuleExtractor, *turns: str, document=None) -> list[str]:
    change = extractor.propose(_request(*turns, document=document)).change_set
    return [f.content for f in change.new_facts]


# --- open-vocabulary roles and the idioms people use -------------------------------------

FOUND = [
    # roles by morphology, and idioms (issue 15)
    ("I'm a beekeeper in Somerset", ["Is a beekeeper", "Based in Somerset"]),
    ("I'm a court stenographer and I've been teaching myself Python", None),
    ("as a paramedic on weekends I see a lot of burns", ["Works as a paramedic"]),
    ("I'm the only frontend person here so I own the design system", None),
    ("We moved last year and I work as a translator", ["Works as a translator"]),
    ("I work at a tiny fintech startup", ["Works at a tiny fintech startup"]),
    ("I teach chemistry to 16-year-olds", ["Teaches chemistry"]),
    ("hey, I'm a nurse practitioner in Ohio", ["Is a nurse practitioner", "Based in Ohio"]),
    ("I've been a welder for 12 years", ["Works as a welder"]),
    ("Im a teacher in a primary school", ["Is a teacher"]),
    ("i work in marketing at a small agency", ["Works in marketing", "Works at a small agency"]),
    ("我是做财务的", ["是做财务的"]),
    ("我是搞前端的，最近在学 Vue", ["是搞前端的", "在学Vue"]),
    ("我在银行做柜员", ["就职于银行", "职业是柜员"]),
    ("我在一家做跨境电商的公司做运营", ["就职于一家做跨境电商的公司", "职业是运营"]),
    ("我是一名钢琴调律师", ["职业是钢琴调律师"]),
    # S7: common self-statements that 0.1.0 missed
    ("I am a chef in Lyon", ["Is a chef", "Based in Lyon"]),
    ("I'm a chef in Lyon", ["Is a chef", "Based in Lyon"]),
    ("I am allergic to peanuts", ["Is allergic to peanuts"]),
    ("I am vegetarian", ["Is vegetarian"]),
    ("I have two kids", ["Has two kids"]),
    ("I use a Mac", ["Uses Mac"]),
    ("my dog is called Rex", ["Has a dog called Rex"]),
    # personal facts: diet, health, family, age, origin, languages
    ("I'm 62 and not as quick on stairs as I used to be", ["Is 62 years old"]),
    ("I have type 2 diabetes", ["Has type 2 diabetes"]),
    ("I'm lactose intolerant, what milk works in tea?", ["Is lactose intolerant"]),
    ("we have two cats and a dog", ["Has two cats and a dog"]),
    ("I'm flying with our two kids (7 and 10). Any tips?", ["Has two kids (7 and 10)"]),
    ("I'm Brazilian", ["Is Brazilian"]),
    ("I speak Spanish natively and a little Italian", None),
    ("my Chinese is pretty basic", ["Speaks Chinese (pretty basic)"]),
    ("我对海鲜过敏", ["对海鲜过敏"]),
    ("我家有两只猫", ["家里有两只猫"]),
    ("我今年35岁，老家在湖南", ["35岁", "老家在湖南"]),
    ("我是四川人，特别能吃辣", ["是四川人", "特别能吃辣"]),
    ("我会说一点日语", ["会说一点日语"]),
    # habits
    ("I go to the gym Monday, Wednesday and Friday before work", None),
    (
        "I batch cook every Sunday for the whole week",
        ["Batch cooks every Sunday for the whole week"],
    ),
    ("I never eat breakfast", ["Never eats breakfast"]),
    ("我每周日都会做一周的便当", ["每周日都会做一周的便当"]),
    # goals
    ("I'm preparing for the IELTS, writing is my weak point", None),
    ("I'm training for a half marathon in October", ["Training for a half marathon in October"]),
    ("I want to start investing", ["Wants to start investing"]),
    ("我在准备考研，目标是浙大的计算机", ["正在准备考研", "目标是浙大的计算机"]),
    ("数学是我的弱项", ["弱项是数学"]),
    # Chinese: a question does not hide the statement before it; subjects carry over;
    # adverbs do not break rules
    ("我对海鲜过敏，去厦门玩的话有什么能吃的？", ["对海鲜过敏"]),
    ("其实我一直在用 PyCharm", ["用 PyCharm"]),
    ("我老家是湖南的，现在在成都工作", ["老家在湖南", "在成都工作"]),
    # a question without a question word: its last clause asks, the ones before it state
    ("我在银行做柜员，想转行做数据分析，大概多久能找到工作？", None),
    # a city is a place, never an employer; what the user does there is read too
    ("我在宁德工作，做电池研发的", ["在宁德工作", "做电池研发"]),
    ("我在义乌做外贸", ["在义乌做外贸"]),
    ("我叫 Kevin，在上海做金融", ["名字叫Kevin", "在上海做金融"]),
    ("本人90后，目前在杭州一家互联网公司做测试", None),
    ("我家狗狗叫豆豆，是只柯基", ["家里的狗狗叫豆豆"]),
    ("我在上海工作，公司做的是 SaaS 客服产品", ["在上海工作", "公司做SaaS 客服产品"]),
    ("我英语不太好，回答尽量用中文", ["英语水平不太好", "希望回答尽量用中文"]),
]


@pytest.mark.parametrize(("text", "contents"), FOUND)
def test_statement_in_realistic_chat_is_found(
    extractor: RuleExtractor, text: str, contents: list[str] | None
) -> None:
    found = _contents(extractor, text)
    assert found, text
    if contents is not None:
        assert found == contents


# --- precision first: nothing invented ------------------------------------------------

INVENTED = [
    # pasted and introduced text
    "Here's the README, can you summarize it?\n\n# ledgerline\n"
    "I built it at Stripe and we moved to Kafka.",
    "My manager sent feedback. He wrote:\nI'm disappointed. I prefer people who speak up.\n"
    "How do I answer?",
    "I had this chat with your bot, here it is:\nUser: I live in Denver\n"
    "Bot: I'm a delivery assistant",
    "这是我同学的简历：我叫张三，是一名护士，住在武汉。",
    "同事写的注释如下：\n# 这里我们从 MySQL 迁到了 TiDB\n这个函数还用不用？",
    "Can you write a LinkedIn summary? Something like: I'm a senior accountant at Deloitte.",
    # code, logs and stack traces without fences
    "what does this do?\n    # TODO(mark): I moved to Berlin, ping me\n"
    "    cache = LRU(maxsize=512)",
    "this log line confuses me:\n"
    "2026-03-02T11:04:55Z INFO moved user 4411 to eu-west-1, home=Dublin",
    "ERROR 2026-04-01 10:22:13 [order] 用户 张伟 住在杭州，地址校验失败",
    "java.lang.IllegalStateException: User profile: name=Wang Fang, city=Nanjing\n"
    "    at com.acme.P(P.java:7)",
    # quotes and transcripts
    'My coworker keeps saying "I live in Vim, I don\'t need an IDE". Is she right?',
    "Tom: I work at Google\nAnna: I live in Zurich\nwho said what?",
    # role-play until the user steps out
    "Let's do a role-play. You're the interviewer, I'm a senior Java developer from Munich.",
    "我们来玩角色扮演，你演面试官，我是一名有十年经验的厨师。",
    # sarcasm
    "lol sure, I just LOVE debugging CSS at 2am. anyway, why is my flexbox broken?",
    "Sure, I love spending my weekend fixing printers. /s",
    "呵呵，我可太喜欢写正则了",
    "你们这服务真是太棒了，退款等了一个月还没到，我可真是开心死了",
    # third parties, hypotheticals, questions, examples
    "My sister lives in Vancouver and is a nurse there.",
    "我妈妈住在大连，她想来看我",
    "If I moved to Lisbon, would I need Portuguese?",
    "假如我去日本待一个月，大概要花多少钱？",
    "Are you a student? What's your favourite subject?",
    "你是程序员吗？",
    'Give me five example bios, e.g. "I\'m a dentist from Ohio and I love hiking"',
    "Translate: I have three children and I live in Rome.",
    "Write a story where the narrator is a beekeeper in Somerset.",
    # hedges and the past
    "I get seasick, so whale watching is probably out",  # the hedged clause only
    "以前我住在北京",
    "帮我写一段自我介绍：我叫李华，是一名工程师",
    "我爸今年七十了，有高血压",
    "朋友说她在深圳做产品经理",
    "这段代码是我同事写的，他是做后端的",
    "我觉得我是个好厨师",
]


@pytest.mark.parametrize("text", INVENTED)
def test_text_that_is_not_the_user_speaking_about_themselves_yields_nothing(
    extractor: RuleExtractor, text: str
) -> None:
    found = _contents(extractor, text)
    planted = ("Stripe", "Kafka", "Berlin", "Dublin", "Denver", "张三", "TiDB", "Deloitte",
               "杭州", "Nanjing", "Vim", "Google", "Zurich", "Java", "厨师", "CSS", "printers",
               "正则", "开心", "Vancouver", "nurse", "大连", "Lisbon", "日本", "student",
               "程序员", "dentist", "Rome", "beekeeper", "whale", "北京", "李华", "工程师",
               "高血压", "深圳", "后端")  # fmt: skip
    assert not [f for f in found if any(p in f for p in planted)], found


def test_a_user_who_steps_out_of_the_role_play_is_read_again(extractor: RuleExtractor) -> None:
    found = _contents(
        extractor,
        "let's role-play a customer call. you're the customer. I'll be the agent",
        "A:Hi, I work from home as an accountant.",
        "I'm so sorry. I'm a pilot myself.",
        "ok let's stop the role-play there. real me here: I'm new on the support team",
    )
    assert found == ["Is new on the support team"]


def test_a_place_is_never_a_technology_word(extractor: RuleExtractor) -> None:
    assert _contents(extractor, "I work in Python") == []
    assert _contents(extractor, "I'm based in Berlin and I work in Kubernetes") == [
        "Based in Berlin"
    ]


# --- facts read as facts about the user ---------------------------------------------------

WORDING = [
    ("Please always give me the shell commands in one code block I can copy",
     "Wants the assistant to always give the shell commands in one code block they can copy"),
    ("I'm writing my first novel", "Writing their first novel"),
    ("I like my team", "Likes their team"),
    ("希望以后回答我的时候代码注释都用中文写", "希望以后回答的时候代码注释都用中文写"),
    ("No, I'm in Leeds, not London", "Correction: the user is in Leeds, not London"),
    ("我们用的是 TiDB，不是 MySQL", "纠正：团队用的是 TiDB，不是 MySQL"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "content"), WORDING)
def test_facts_speak_about_the_user_in_the_third_person(
    extractor: RuleExtractor, text: str, content: str
) -> None:
    assert _contents(extractor, text)[0] == content


def test_a_clause_is_cut_where_it_ends_not_mid_word(extractor: RuleExtractor) -> None:
    (fact,) = _contents(
        extractor,
        "Please always give me the shell commands in one code block, not spread across the "
        "explanation, because it drives me nuts when I have to copy them one by one",
    )
    assert fact == "Wants the assistant to always give the shell commands in one code block"


def test_a_correction_without_a_fixed_opener_is_found(extractor: RuleExtractor) -> None:
    assert _contents(extractor, "It's Sara, not Sarah") == ["Correction: it's Sara, not Sarah"]
    assert _contents(extractor, "No, it's the Pro plan, not Basic.") == [
        "Correction: it's the Pro plan, not Basic"
    ]
    assert _contents(extractor, "not quite, but it works") == []


# --- supersession: a single value, or the opposite preference, replaces the old fact ------


def _doc(*contents: str):
    facts = tuple(
        Fact(f"fact_{i:08x}", c, "preference" if c.startswith(("Likes", "Dislikes", "Prefers",
             "喜欢", "不喜欢", "Wants")) else "context", 0.9, "2026-01-01T00:00:00Z",
             "2026-01-01T00:00:00Z", "t0")
        for i, c in enumerate(contents)
    )  # fmt: skip
    return empty_document().with_changes(facts=facts)


SUPERSEDED = [
    ("Prefers short answers", "I prefer detailed answers", "Prefers detailed answers"),
    ("Likes Python", "I hate Python", "Dislikes Python"),
    ("Dislikes Python", "I love Python", "Likes Python"),
    ("喜欢简洁的回答", "我更喜欢详细的回答", "喜欢详细的回答"),
    ("Wants the assistant to always use emojis", "never use emojis",
     "Wants the assistant to never use emojis"),
    ("Wants answers in English", "以后都用中文回答", "希望以后都用中文回答"),
    ("Lives in Paris", "I moved to Berlin", "Lives in Berlin"),
    ("Works at Acme", "I work at Zalando now", "Works at Zalando"),
    ("Is a teacher", "I'm a court stenographer", "Is a court stenographer"),
    ("Name is Bob", "my name is Rob", "Name is Rob"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "said", "new"), SUPERSEDED)
def test_new_value_or_opposite_preference_replaces_the_old_fact(
    extractor: RuleExtractor, old: str, said: str, new: str
) -> None:
    document = _doc(old, "Has a dog called Rex")
    change = extractor.propose(_request(said, document=document)).change_set
    assert [f.content for f in change.new_facts] == [new]
    (removal,) = change.removals
    assert removal.fact_id == document.facts[0].id
    assert removal.replaced_by == 0
    assert removal.reason == f"superseded by: {new}"


NOT_SUPERSEDED = [
    ("Prefers short answers", "I prefer short variable names"),
    ("Likes Python", "I love Rust"),
    ("Dislikes long answers", "I prefer short answers"),  # the same preference, twice
    ("Lives in Berlin", "I work in Potsdam"),
]


@pytest.mark.parametrize(("old", "said"), NOT_SUPERSEDED)
def test_compatible_statements_stand_side_by_side(
    extractor: RuleExtractor, old: str, said: str
) -> None:
    change = extractor.propose(_request(said, document=_doc(old))).change_set
    assert change.new_facts
    assert change.removals == ()


def test_contradictions_in_separate_threads_leave_only_the_latest_through_memory() -> None:
    # S7: "I prefer short answers" / "I prefer detailed answers" / "I love Python" /
    # "I hate Python" in four threads produced all four facts in 0.1.0
    from memfold import Memory

    with Memory(storage="memory", start_workers=False) as memory:
        for index, text in enumerate(
            [
                "I prefer short answers",
                "I prefer detailed answers",
                "I love Python",
                "I hate Python",
            ]
        ):
            memory.update(
                [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}],
                thread_id=f"t{index}",
                user_id="u",
            )
        facts = sorted(f.content for f in memory.get(user_id="u").facts)
    assert facts == ["Dislikes Python", "Prefers detailed answers"]


def test_a_correction_holding_a_statement_stores_it_once_and_replaces_the_old_value(
    extractor: RuleExtractor,
) -> None:
    document = _doc("Lives in Munich")
    change = extractor.propose(
        _request(
            "A:Since you live in Munich…", "No, I live in Berlin, not Munich", document=document
        )
    ).change_set
    assert [f.content for f in change.new_facts] == [
        "Correction: the user lives in Berlin, not Munich"
    ]
    assert [(r.fact_id, r.replaced_by) for r in change.removals] == [(document.facts[0].id, 0)]


# --- D11: linear time, bounded reading ---------------------------------------------------


HOSTILE = [
    "I live in Berlin" + "\n" * 1_000_000,
    "I live in" + " " * 1_000_000 + "Berlin",
    "> x\n" * 250_000,
    "```\n" * 250_000,
    "我，" * 500_000,
    '"' * 1_000_000,
    "I use " + "A" * 1_000_000,
]


@pytest.mark.parametrize("text", HOSTILE, ids=lambda t: repr(t[:12]))
def test_a_megabyte_of_hostile_text_is_read_in_well_under_a_second(
    extractor: RuleExtractor, text: str
) -> None:
    # 0.1.0 needed ~13 minutes for a megabyte of newlines; bench_rules.py has the figures
    # A guard, not a target: generous enough for a loaded CI machine with coverage on,
    # minutes short of what a quadratic pattern needs.
    started = time.perf_counter()
    extractor.propose(_request(text))
    assert time.perf_counter() - started < 10.0


def test_the_uncapped_reading_is_linear_too() -> None:
    text = "I live in Berlin" + "\n" * 1_000_000 + "I'm a nurse. " * 200
    whole = RuleExtractor(max_head_chars=len(text), max_tail_chars=0)
    started = time.perf_counter()
    whole.propose(_request(text))
    assert time.perf_counter() - started < 30.0  # quadratic took ~13 minutes; see bench_rules


def test_only_the_head_and_tail_of_a_long_message_are_read(extractor: RuleExtractor) -> None:
    filler = "lorem ipsum dolor sit amet. " * 2_000
    text = "I live in Berlin. " + filler + "I'm a nurse. " + filler + "I speak German."
    assert _contents(extractor, text) == ["Lives in Berlin", "Speaks German"]


def test_a_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        RuleExtractor(max_head_chars=-1)


def test_recognising_nothing_says_so_and_how_to_get_more(
    extractor: RuleExtractor, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("INFO", logger="memfold.extract.rules"):
        assert _contents(extractor, "the weather is nice today", "A:It is!") == []
    assert "recognised no statement in 1 user message(s)" in caplog.text
    assert "configure an llm" in caplog.text


ANSWERS = [
    (("A:Happy to help. Where are you based?", "Leeds"), ["Lives in Leeds"]),
    (("A:What do you do for a living?", "nurse"), ["Works as a nurse"]),
    (("A:What do you do for a living?", "an architect"), ["Works as an architect"]),
    (("A:How old are you?", "34"), ["Is 34 years old"]),
    (("A:Any dietary restrictions?", "vegetarian"), ["Is vegetarian"]),
    (("A:你住在哪里？", "杭州"), ["住在杭州"]),
    (("A:你是做什么的？", "产品经理"), ["职业是产品经理"]),
    (("A:Any dietary restrictions?", "no"), []),
    (("A:Where are you based?", "why do you ask?"), []),
    (("A:Is this for production?", "yes, Leeds"), []),
    (("A:Where are you based?", "Leeds is where my sister lives, and I'm still deciding"), []),
]


@pytest.mark.parametrize(("turns", "contents"), ANSWERS)
def test_a_short_reply_to_the_assistants_question_about_the_user_is_read(
    extractor: RuleExtractor, turns: tuple[str, str], contents: list[str]
) -> None:
    assert _contents(extractor, *turns) == contents


BROKEN_NEW_KEYS = [
    ("answers:\n  - {question: 'x'}\n", "'answers' must be a list of {question: regex"),
    ("answers:\n  - {question: 'x', statement: 'no placeholder'}\n", "'answers' must be a list"),
    (
        "rules:\n  - {pattern: 'I like (?P<value>\\w+)', category: preference, "
        "template: 'Likes {value}', stance: maybe}\n",
        "'stance' must be 'positive' or 'negative'",
    ),
    (
        "rules:\n  - {pattern: 'I (?P<verb>like) (?P<value>\\w+)', category: preference, "
        "template: '{verb} {value}', stance: positive}\n",
        "a rule with a stance needs a template with only {value}",
    ),
    (
        "rules:\n  - {pattern: 'I like (?P<value>\\w+)', category: preference, "
        "template: 'Likes {value}', fallback: 'yes'}\n",
        "'fallback' must be true or false",
    ),
]


@pytest.mark.parametrize(("text", "problem"), BROKEN_NEW_KEYS)
def test_a_bad_new_key_in_a_pattern_file_names_the_problem(
    tmp_path, text: str, problem: str
) -> None:
    from memfold.errors import ConfigError

    path = tmp_path / "mine.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        RuleExtractor(extra_pattern_files=[path])
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)


def test_a_users_answer_and_stance_rules_work_like_the_built_in_ones(tmp_path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "answers:\n"
        "  - {question: 'favourite editor', statement: 'I use {answer}'}\n"
        "rules:\n"
        "  - id: mine.adore\n"
        "    pattern: '\\bI adore (?P<value>[A-Z]\\w+)'\n"
        "    category: preference\n"
        "    template: 'Adores {value}'\n"
        "    stance: positive\n",
        encoding="utf-8",
    )
    mine = RuleExtractor(extra_pattern_files=[path])
    assert _contents(mine, "A:What's your favourite editor?", "Neovim") == ["Uses Neovim"]
    document = empty_document().with_changes(
        facts=(Fact("fact_00000001", "Adores Python", "preference", 0.9, "t", "t", "t0"),)
    )
    change = mine.propose(_request("I hate Python", document=document)).change_set
    assert [f.content for f in change.new_facts] == ["Dislikes Python"]
    assert [r.fact_id for r in change.removals] == ["fact_00000001"]
