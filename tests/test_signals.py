from __future__ import annotations

import pytest

from memfold.model import Message, Signals
from memfold.signals import DEFAULT_WINDOW, detect, detect_correction, detect_reinforcement


def _turn(user_text: str) -> list[Message]:
    return [
        Message("user", "Write me a haiku about autumn."),
        Message("assistant", "Leaves fall, quiet pond; a crow calls twice at dusk."),
        Message("user", user_text),
    ]


CORRECTIONS = [
    "That's wrong.",
    "that is incorrect, the capital is Canberra",
    "No, that's not right.",
    "This isn't correct at all",
    "That's not what I asked for.",
    "not what I meant",
    "You misunderstood me: I want the Python version.",
    "I think you've misread the question",
    "You're wrong about the date.",
    "you got it wrong again",
    "You made a mistake in the second step",
    "Your answer is wrong.",
    "Wrong, it should be 42.",
    "No, I meant the other file.",
    "no I mean the 2023 report",
    "I meant Java, not JavaScript.",
    "I didn't ask for a summary",
    "I never said that",
    "I already told you I use Linux",
    "That’s wrong",  # curly apostrophe
    "不对，应该是北京。",
    "不对不对",
    "你理解错了",
    "你又搞错了，我要的是表格",
    "你误会我的意思了",
    "你们说错了",
    "你错了",
    "我说的不是这个",
    "我要的不是总结，是全文",
    "我的意思不是这样",
    "我不是这个意思",
    "这不是我想要的",
    "这是错的",
    "错了，是 2024 年",
    "答非所问",
    "我是说周二，不是周三",
    "不是，我是说另一个文件",
    "你的理解有误",
]

NOT_CORRECTIONS = [
    "Redo it in Rust.",
    "Try again with a shorter sentence.",
    "Please regenerate the answer with more detail.",
    "Not bad!",
    "No problem, take your time.",
    "That's not wrong, just incomplete.",
    "You're not wrong.",
    "There's nothing wrong with that approach.",
    "I mean, it works.",
    "I meant to ask: what about tests?",
    "Let me know if that's wrong.",
    "I'm not sure that's wrong",
    "Is that wrong?",
    "Correct me if I'm wrong, but isn't it O(n)?",
    "Nope, no more questions.",
    "What's the best way to handle wrong input in a form?",
    "Could you explain how it works?",
    "改用 Rust 写",
    "重新生成一下",
    "再试一次，用更短的句子",
    "换成表格",
    "没问题",
    "对不起，我刚才没说清楚",
    "我是说，这个方案可以试试",
    "这个这样对不对？",
    "我的电脑感觉不对劲",
    "这两个数组不对称",
    "你说得不错",
    "不错，继续",
    "如果你理解错了就告诉我",
    "不是你理解错了，是我没说清楚",
    "你理解错了吗？",
    "我错了，应该是周三",
    "别误会，我只是好奇",
    "这个错误怎么修复？",
    "你没有理解错",
    # bug reports that open with "wrong" / "incorrect"
    "Incorrect password error when logging in",
    "Wrong number of arguments error in line 3",
    "Incorrect results from the SUM query, any idea why",
]


@pytest.mark.parametrize("text", CORRECTIONS)
def test_correction_phrases_are_detected(text: str) -> None:
    assert detect_correction(_turn(text))
    assert detect(_turn(text)).correction


@pytest.mark.parametrize("text", NOT_CORRECTIONS)
def test_instructions_hedges_and_negations_are_not_corrections(text: str) -> None:
    assert not detect_correction(_turn(text))


REINFORCEMENTS = [
    "Yes, exactly!",
    "Exactly.",
    "exactly what I wanted",
    "Perfect, thanks!",
    "perfect",
    "That's perfect.",
    "That's right.",
    "Correct!",
    "You're absolutely right.",
    "you nailed it",
    "Spot on.",
    "That's exactly what I was looking for",
    "Keep doing that.",
    "keep it up",
    "Great job!",
    "Well done",
    "Much better.",
    "This works perfectly",
    "I love it!",
    "That’s right",  # curly apostrophe
    "完全正确",
    "就是这样！",
    "对，就是这样",
    "就是这个意思",
    "这正是我想要的",
    "非常好",
    "太棒了",
    "你说得对",
    "完美",
    "继续保持",
    "以后都这样写",
    "很满意",
    "这就对了",
    "做得好",
    # praise of the answer, worded like praise of something else
    "Perfect, that's exactly what I needed",
    "Works great, thanks!",
    "It works great now, thanks",
    "Your fix works perfectly.",
    "That works perfectly on my machine now",
    "This is perfect for my use case",
    "完美，就是我想要的",
]

NOT_REINFORCEMENTS = [
    "对",
    "没错",
    "对不起",
    "对了，还有一个问题",
    "Not perfect, but close.",
    "It's far from perfect",
    "That's not exactly what I wanted",
    "Not exactly.",
    "Exactly what I didn't want.",
    "Is that right?",
    "Correct me if I'm wrong, it's 1990?",
    "That's right?",
    "If that's right, go ahead.",
    "Don't keep doing that.",
    "I'd like it in Python",
    "I like this library a lot but it is slow",
    "Perfect tense in English, explain it",
    "Could you make it better?",
    "不完美",
    "不是很好",
    "并不完美",
    "说得对不对？",
    "我是完美主义者",
    "问题就是这个",
    "我的代码就是这样写的，但是报错",
    "我非常好奇这个",
    "不就是这样吗？",
    "我不太满意",
    "ok",
    # somebody else being right
    "他说得对",
    "我老板说得对，我们应该先写测试",
]

# "great" / "perfect" about a platform, a tool or an old version, or only in part: no
# judgement of the assistant's answer.
PRAISE_OF_SOMETHING_ELSE = [
    "It works great on Linux but not on Mac",
    "It works perfectly on Linux but crashes on Windows",
    "Works great locally but fails in CI",
    "The old version works perfectly, the new one doesn't",
    "The library works great, but your code throws an error",
    "Python works great for this kind of task",
    "It looks perfect in Chrome but broken in Safari",
    "It's perfect for small projects but not for large ones",
    "Everything works great except the login",
    "在Linux上完美运行，但Mac上不行",
    "这个库很完美，可是你的代码报错了",
]


@pytest.mark.parametrize("text", PRAISE_OF_SOMETHING_ELSE)
def test_great_or_perfect_about_something_else_or_only_in_part_is_not_reinforcement(
    text: str,
) -> None:
    assert not detect_reinforcement(_turn(text))


@pytest.mark.parametrize("text", REINFORCEMENTS)
def test_reinforcement_phrases_are_detected(text: str) -> None:
    assert detect_reinforcement(_turn(text))
    assert detect(_turn(text)) == Signals(correction=False, reinforcement=True)


@pytest.mark.parametrize("text", NOT_REINFORCEMENTS)
def test_bare_agreement_negated_praise_and_questions_are_not_reinforcement(text: str) -> None:
    assert not detect_reinforcement(_turn(text))


@pytest.mark.parametrize(
    "text",
    [
        "You're right about the syntax, but that's wrong for Python 2.",
        "Perfect formatting, but you misunderstood the question",
        "说得对，但是这个结论不对",
    ],
)
def test_message_with_correction_is_not_counted_as_reinforcement(text: str) -> None:
    assert detect(_turn(text)) == Signals(correction=True, reinforcement=False)
    assert not detect_reinforcement(_turn(text))


def test_correction_and_reinforcement_in_different_messages_both_count() -> None:
    messages = [
        Message("user", "Summarise it."),
        Message("assistant", "Here is a summary."),
        Message("user", "That's wrong, I wanted bullet points."),
        Message("assistant", "- point one"),
        Message("user", "Perfect!"),
    ]
    assert detect(messages) == Signals(correction=True, reinforcement=True)


def test_assistant_text_never_triggers_a_signal() -> None:
    messages = [
        Message("user", "Is 7 prime?"),
        Message("assistant", "That's wrong of me to say earlier. Yes, exactly: 7 is prime."),
        Message("assistant", "你理解错了。完全正确。"),
    ]
    assert detect(messages) == Signals()


def test_correction_older_than_the_window_is_not_seen() -> None:
    messages = [Message("user", "That's wrong.")]
    for i in range(3):
        messages += [Message("assistant", f"answer {i}"), Message("user", f"question {i}")]
    assert len(messages) == DEFAULT_WINDOW + 1
    assert detect(messages) == Signals()
    assert detect(messages, window=DEFAULT_WINDOW + 1).correction


def test_correction_exactly_at_the_window_edge_is_seen() -> None:
    messages = [Message("user", "That's wrong.")]
    messages += [Message("assistant", f"answer {i}") for i in range(DEFAULT_WINDOW - 1)]
    assert detect_correction(messages)
    assert not detect_correction(messages, window=DEFAULT_WINDOW - 1)


def test_text_far_into_a_long_paste_is_not_scanned() -> None:
    long_paste = "Here is my log:\n" + "INFO ok\n" * 200 + "ERROR: that's wrong"
    assert not detect_correction(_turn(long_paste))


def test_empty_conversation_has_no_signals() -> None:
    assert detect([]) == Signals()


@pytest.mark.parametrize("window", [0, -1])
def test_window_below_one_is_rejected(window: int) -> None:
    with pytest.raises(ValueError, match="window"):
        detect(_turn("ok"), window=window)
    with pytest.raises(ValueError, match="window"):
        detect_correction(_turn("ok"), window=window)
    with pytest.raises(ValueError, match="window"):
        detect_reinforcement(_turn("ok"), window=window)


@pytest.mark.parametrize(
    "text",
    CORRECTIONS + NOT_CORRECTIONS + REINFORCEMENTS + NOT_REINFORCEMENTS + PRAISE_OF_SOMETHING_ELSE,
)
def test_keyword_prefilter_never_changes_the_answer(text: str) -> None:
    from memfold import signals

    prepared = signals._prepare(text)
    assert signals._is_correction(prepared) == signals._matches(
        signals._CORRECTION, signals._CORRECTION_VETO_BEFORE, prepared
    )
    assert signals._is_reinforcement(prepared) == signals._matches(
        signals._REINFORCEMENT, signals._REINFORCEMENT_VETO_BEFORE, prepared
    )
