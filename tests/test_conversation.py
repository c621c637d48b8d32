from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from memfold.conversation import (
    capture,
    format_for_prompt,
    has_minimum_dialogue,
    is_trivial,
    strip_uploads,
    truncate_middle,
)
from memfold.model import Message


def _roles_and_text(messages: tuple[Message, ...]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


# --- OpenAI-style dicts ---------------------------------------------------------------------


def test_user_and_final_assistant_dicts_are_kept_in_order_with_ids() -> None:
    kept = capture(
        [
            {"role": "user", "content": "I live in Lyon.", "id": "m1"},
            {"role": "assistant", "content": "Noted, Lyon it is.", "id": "m2"},
        ]
    )
    assert kept == (
        Message("user", "I live in Lyon.", "m1"),
        Message("assistant", "Noted, Lyon it is.", "m2"),
    )


@pytest.mark.parametrize("role", ["human", "HUMAN", "User"])
def test_user_role_aliases_are_normalised(role: str) -> None:
    assert capture([{"role": role, "content": "hello there, I am Ana"}])[0].role == "user"


@pytest.mark.parametrize("role", ["ai", "Assistant", "model"])
def test_assistant_role_aliases_are_normalised(role: str) -> None:
    kept = capture([{"role": "user", "content": "Hi, I am Ana"}, {"role": role, "content": "Hi"}])
    assert kept[1].role == "assistant"


@pytest.mark.parametrize("role", ["system", "developer", "tool", "function"])
def test_system_developer_and_tool_messages_are_dropped(role: str) -> None:
    kept = capture(
        [
            {"role": role, "content": "You are helpful. <memory>secret</memory>"},
            {"role": "user", "content": "What is a monad?"},
        ]
    )
    assert _roles_and_text(kept) == [("user", "What is a monad?")]


def test_text_parts_of_a_content_list_are_joined_and_images_ignored() -> None:
    kept = capture(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {"type": "text", "text": "Answer briefly."},
                ],
            }
        ]
    )
    assert kept[0].content == "What is in this picture?\nAnswer briefly."


def test_content_none_on_assistant_is_dropped() -> None:
    kept = capture(
        [{"role": "user", "content": "Plan my week"}, {"role": "assistant", "content": None}]
    )
    assert _roles_and_text(kept) == [("user", "Plan my week")]


def test_whitespace_only_assistant_answer_is_dropped() -> None:
    kept = capture(
        [{"role": "user", "content": "Plan my week"}, {"role": "assistant", "content": " \n"}]
    )
    assert len(kept) == 1


def test_text_is_stripped_of_surrounding_whitespace() -> None:
    assert capture([{"role": "user", "content": "  I use vim \n"}])[0].content == "I use vim"


@pytest.mark.parametrize(
    "extra",
    [
        {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search"}}]},
        {"function_call": {"name": "search", "arguments": "{}"}},
    ],
)
def test_assistant_tool_call_turn_is_dropped_but_final_answer_kept(extra: dict[str, Any]) -> None:
    kept = capture(
        [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "Let me check.", **extra},
            {"role": "tool", "content": "18C sunny", "tool_call_id": "c1"},
            {"role": "assistant", "content": "It is 18C and sunny."},
        ]
    )
    assert _roles_and_text(kept) == [
        ("user", "Weather in Paris?"),
        ("assistant", "It is 18C and sunny."),
    ]


def test_empty_tool_calls_list_does_not_make_a_tool_call_turn() -> None:
    kept = capture(
        [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "Sunny.", "tool_calls": []},
        ]
    )
    assert len(kept) == 2


def test_assistant_content_with_tool_use_block_is_a_tool_call_turn() -> None:
    kept = capture(
        [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "t1", "name": "weather", "input": {}},
                ],
            },
        ]
    )
    assert _roles_and_text(kept) == [("user", "Weather in Paris?")]


@pytest.mark.parametrize(
    "hidden",
    [
        {"additional_kwargs": {"hide_from_ui": True}},
        {"metadata": {"hidden": True}},
        {"response_metadata": {"hidden": 1}},
    ],
)
def test_hidden_messages_are_dropped(hidden: dict[str, Any]) -> None:
    kept = capture(
        [
            {"role": "user", "content": "<memory>Ana likes tea</memory>", **hidden},
            {"role": "user", "content": "Recommend a drink"},
            {"role": "assistant", "content": "Maybe a green tea?", **hidden},
            {"role": "assistant", "content": "Try a sencha."},
        ]
    )
    assert _roles_and_text(kept) == [
        ("user", "Recommend a drink"),
        ("assistant", "Try a sencha."),
    ]


@pytest.mark.parametrize(
    "flags",
    [
        {"additional_kwargs": {"hide_from_ui": False}},
        {"metadata": {"hidden": False}},
        {"metadata": None},
    ],
)
def test_false_hidden_flags_keep_the_message(flags: dict[str, Any]) -> None:
    assert len(capture([{"role": "user", "content": "I am Ana", **flags}])) == 1


def test_hidden_user_message_does_not_drop_the_following_reply() -> None:
    kept = capture(
        [
            {"role": "user", "content": "What is 2+2?"},
            {"role": "user", "content": "reminder", "metadata": {"hidden": True}},
            {"role": "assistant", "content": "4"},
        ]
    )
    assert _roles_and_text(kept) == [("user", "What is 2+2?"), ("assistant", "4")]


@pytest.mark.parametrize(("raw_id", "expected"), [(17, "17"), ("", None), (None, None)])
def test_ids_are_kept_as_strings_and_empty_ids_become_none(
    raw_id: object, expected: str | None
) -> None:
    assert capture([{"role": "user", "content": "I am Ana", "id": raw_id}])[0].id == expected


# --- uploads and trivial turns --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "<uploaded_files>\n- /mnt/data/report.pdf\n</uploaded_files>\nSummarise the report",
        "<UPLOADED_FILES>a.txt</Uploaded_Files>Summarise the report",
        "Summarise the report<uploaded_files path='x'>\na.txt\nb.txt\n</uploaded_files>",
    ],
)
def test_upload_blocks_are_stripped_from_user_text(text: str) -> None:
    assert capture([{"role": "user", "content": text}])[0].content == "Summarise the report"


def test_unclosed_upload_block_is_stripped_to_the_end() -> None:
    assert strip_uploads("Read this <uploaded_files>\na.txt\nb.txt") == "Read this"


def test_several_upload_blocks_are_all_stripped() -> None:
    text = "<uploaded_files>a</uploaded_files>keep<uploaded_files>b</uploaded_files> me"
    assert strip_uploads(text) == "keep me"


def test_text_without_upload_block_is_unchanged() -> None:
    assert strip_uploads("a < b and c > d") == "a < b and c > d"


def test_upload_only_user_turn_is_dropped_with_the_reply_that_follows() -> None:
    kept = capture(
        [
            {"role": "user", "content": "I work on compilers."},
            {"role": "assistant", "content": "Nice field."},
            {"role": "user", "content": "<uploaded_files>x.pdf</uploaded_files>"},
            {"role": "assistant", "content": "I see you uploaded x.pdf."},
            {"role": "user", "content": "Which parser generator should I use?"},
            {"role": "assistant", "content": "Try a PEG generator."},
        ]
    )
    assert _roles_and_text(kept) == [
        ("user", "I work on compilers."),
        ("assistant", "Nice field."),
        ("user", "Which parser generator should I use?"),
        ("assistant", "Try a PEG generator."),
    ]


def test_upload_blocks_in_assistant_text_are_left_alone() -> None:
    answer = "Wrap the list in <uploaded_files>...</uploaded_files> tags."
    kept = capture([("user", "How do I mark uploads?"), ("assistant", answer)])
    assert kept[1].content == answer


TRIVIAL = [
    "ok",
    "OK!",
    "Okay.",
    "okkk",
    "k",
    "thanks",
    "Thank you!",
    "thank you so much :)",
    "thx",
    "Got it",
    "got it, thanks!",
    "ok thanks",
    "Sounds good.",
    "👍",
    "🙏🙏",
    "...",
    "  ok  \n",
    "好的",
    "好",
    "好的，谢谢！",
    "谢谢",
    "谢谢你",
    "嗯",
    "嗯嗯",
    "收到",
    "收到了",
    "明白了",
    "知道了",
    "ok，谢谢",
    "没问题",
]

NOT_TRIVIAL = [
    "ok, now write it in Rust",
    "Thanks, but I prefer tabs",
    "ok I live in Berlin",
    "yes",
    "no",
    "2",
    "Perfect!",
    "Exactly.",
    "That's wrong",
    "好的，改成英文",
    "谢谢，我是前端工程师",
    "不对",
    "对",
    "好好学习",
    "ok " * 30,
]


@pytest.mark.parametrize("text", TRIVIAL)
def test_acknowledgements_are_trivial(text: str) -> None:
    assert is_trivial(text)


@pytest.mark.parametrize("text", NOT_TRIVIAL)
def test_requests_facts_answers_and_signals_are_not_trivial(text: str) -> None:
    assert not is_trivial(text)


def test_trivial_user_turn_is_dropped_with_the_reply_that_follows() -> None:
    kept = capture(
        [
            {"role": "user", "content": "I prefer metric units."},
            {"role": "assistant", "content": "Metric from now on."},
            {"role": "user", "content": "Thanks!"},
            {"role": "assistant", "content": "You're welcome! Anything else?"},
            {"role": "user", "content": "好的"},
        ]
    )
    assert _roles_and_text(kept) == [
        ("user", "I prefer metric units."),
        ("assistant", "Metric from now on."),
    ]


def test_reply_to_a_trivial_turn_is_dropped_even_after_tool_calls() -> None:
    kept = capture(
        [
            {"role": "user", "content": "ok"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c"}]},
            {"role": "tool", "content": "done"},
            {"role": "assistant", "content": "Done, anything else?"},
            {"role": "user", "content": "Book a table for two"},
            {"role": "assistant", "content": "Booked."},
        ]
    )
    assert _roles_and_text(kept) == [("user", "Book a table for two"), ("assistant", "Booked.")]


def test_user_turn_with_only_an_image_is_dropped_with_its_reply() -> None:
    kept = capture(
        [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
            {"role": "assistant", "content": "A cat."},
        ]
    )
    assert kept == ()


def test_conversation_of_only_trivial_turns_has_no_minimum_dialogue() -> None:
    kept = capture([("user", "ok"), ("assistant", "Great!"), ("user", "thanks"), ("ai", "Bye")])
    assert kept == ()
    assert not has_minimum_dialogue(kept)


# --- pairs, Message, errors -----------------------------------------------------------------


def test_role_text_pairs_are_accepted() -> None:
    kept = capture([("human", "I am vegetarian"), ["assistant", "Noted."], ("system", "x")])
    assert kept == (Message("user", "I am vegetarian"), Message("assistant", "Noted."))


def test_memfold_messages_pass_through_the_same_filters() -> None:
    kept = capture(
        [
            Message("user", "I am vegetarian", "a"),
            Message("assistant", "Noted.", "b"),
            Message("user", "ok"),
            Message("assistant", "Anything else?"),
        ]
    )
    assert kept == (Message("user", "I am vegetarian", "a"), Message("assistant", "Noted.", "b"))


@pytest.mark.parametrize("item", [42, "user: hi", object(), ("user",), ("user", "hi", "id")])
def test_unsupported_item_raises_type_error_naming_index_and_shapes(item: object) -> None:
    with pytest.raises(TypeError, match=r"messages\[1\]") as info:
        capture([("user", "fine message"), item])
    assert "pair" in str(info.value)


def test_unknown_role_raises_value_error_naming_index_and_role() -> None:
    with pytest.raises(ValueError, match=r"messages\[0\].*'narrator'"):
        capture([{"role": "narrator", "content": "Once upon a time"}])


def test_missing_role_raises_value_error() -> None:
    with pytest.raises(ValueError, match=r"messages\[0\].*None"):
        capture([{"content": "hi"}])


def test_content_of_unsupported_type_raises_type_error() -> None:
    with pytest.raises(TypeError, match=r"messages\[0\]: content"):
        capture([{"role": "user", "content": 12}])


@pytest.mark.parametrize("single", ["hello", {"role": "user", "content": "hi"}, b"x"])
def test_a_single_message_instead_of_a_list_is_rejected(single: object) -> None:
    with pytest.raises(TypeError, match="wrap it in a list"):
        capture(single)  # type: ignore[arg-type]


def test_any_iterable_is_accepted() -> None:
    kept = capture(iter([("user", "I am Ana"), ("assistant", "Hi Ana")]))
    assert len(kept) == 2


# --- LangChain-like objects -----------------------------------------------------------------


@dataclass
class FakeLangChainMessage:
    type: str
    content: Any
    id: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    additional_kwargs: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class SlottedMessage:
    type: str
    content: Any


class PropertyMessage:
    """A message whose fields are properties, not instance attributes."""

    def __init__(self, kind: str, text: str) -> None:
        self._kind = kind
        self._text = text

    @property
    def type(self) -> str:
        return self._kind

    @property
    def content(self) -> str:
        return self._text

    @property
    def metadata(self) -> dict[str, bool]:
        return {"hidden": self._text.startswith("[hidden]")}


def test_duck_typed_langchain_messages_are_normalised() -> None:
    kept = capture(
        [
            FakeLangChainMessage("system", "be nice"),
            FakeLangChainMessage("human", "I am Ana", id="h1"),
            FakeLangChainMessage("ai", "", tool_calls=[{"name": "search", "args": {}}]),
            FakeLangChainMessage("tool", "result"),
            FakeLangChainMessage("ai", [{"type": "text", "text": "Hi Ana"}, "!"], id="a1"),
        ]
    )
    assert kept == (Message("user", "I am Ana", "h1"), Message("assistant", "Hi Ana\n!", "a1"))


@pytest.mark.parametrize(
    "flags",
    [
        {"additional_kwargs": {"hide_from_ui": True}},
        {"metadata": {"hidden": True}},
    ],
)
def test_duck_typed_hidden_messages_are_dropped(flags: dict[str, Any]) -> None:
    assert capture([FakeLangChainMessage("human", "<memory>x</memory>", **flags)]) == ()


def test_duck_typed_function_call_in_additional_kwargs_is_a_tool_call_turn() -> None:
    kept = capture(
        [
            FakeLangChainMessage("human", "Weather?"),
            FakeLangChainMessage("ai", "checking", additional_kwargs={"function_call": {"n": 1}}),
        ]
    )
    assert _roles_and_text(kept) == [("user", "Weather?")]


def test_slotted_and_property_based_objects_are_accepted() -> None:
    kept = capture(
        [
            SlottedMessage("human", "I am Ana"),
            PropertyMessage("ai", "Hi Ana"),
            PropertyMessage("human", "[hidden] reminder"),
        ]
    )
    assert _roles_and_text(kept) == [("user", "I am Ana"), ("assistant", "Hi Ana")]


def test_real_langchain_messages_are_normalised_and_filtered() -> None:
    kept = capture(
        [
            SystemMessage("You are a helpful assistant."),
            HumanMessage("I prefer short answers.", id="h1"),
            AIMessage(
                "",
                id="a0",
                tool_calls=[{"name": "lookup", "args": {"q": "x"}, "id": "call1"}],
            ),
            ToolMessage("lookup result", tool_call_id="call1", id="t1"),
            AIMessage("Understood, short answers.", id="a1"),
            HumanMessage("memory block", id="h2", additional_kwargs={"hide_from_ui": True}),
            ChatMessage(role="user", content="Also, I use Linux.", id="c1"),
            AIMessage([{"type": "text", "text": "Linux noted."}], id="a2"),
        ]
    )
    assert kept == (
        Message("user", "I prefer short answers.", "h1"),
        Message("assistant", "Understood, short answers.", "a1"),
        Message("user", "Also, I use Linux.", "c1"),
        Message("assistant", "Linux noted.", "a2"),
    )


def test_real_langchain_invalid_tool_calls_make_a_tool_call_turn() -> None:
    kept = capture(
        [
            HumanMessage("Weather?"),
            AIMessage(
                "oops",
                invalid_tool_calls=[
                    {"name": "w", "args": "{bad", "id": "c", "error": "bad json", "type": "x"}
                ],
            ),
        ]
    )
    assert _roles_and_text(kept) == [("user", "Weather?")]


def test_real_langchain_upload_and_trivial_rules_apply() -> None:
    kept = capture(
        [
            HumanMessage("<uploaded_files>a.csv</uploaded_files>"),
            AIMessage("I see a.csv"),
            HumanMessage("谢谢！"),
            AIMessage("不客气"),
            HumanMessage("<uploaded_files>b.csv</uploaded_files> Plot column B"),
            AIMessage("Here is the plot."),
        ]
    )
    assert _roles_and_text(kept) == [("user", "Plot column B"), ("assistant", "Here is the plot.")]


# --- minimum dialogue and formatting --------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([], False),
        ([Message("user", "a")], False),
        ([Message("assistant", "a")], False),
        ([Message("user", "a"), Message("user", "b")], False),
        ([Message("assistant", "a"), Message("user", "b")], True),
        ([Message("user", "a"), Message("assistant", "b")], True),
    ],
)
def test_minimum_dialogue_needs_a_user_and_an_assistant_message(
    messages: list[Message], expected: bool
) -> None:
    assert has_minimum_dialogue(messages) is expected


def test_format_labels_each_message_and_separates_blocks() -> None:
    text = format_for_prompt([Message("user", "I am Ana"), Message("assistant", "Hi <Ana>")])
    assert text == "User: I am Ana\n\nAssistant: Hi <Ana>"


def test_format_of_no_messages_is_empty() -> None:
    assert format_for_prompt([]) == ""


def test_format_keeps_head_and_tail_of_a_long_message() -> None:
    content = "H" * 500 + "M" * 1234 + "T" * 500
    text = format_for_prompt([Message("user", content)], max_chars=1000)
    assert text == "User: " + "H" * 500 + "\n[… 1234 characters omitted …]\n" + "T" * 500


def test_format_applies_escape_after_truncation() -> None:
    def escape(text: str) -> str:
        return text.replace("<", "&lt;")

    text = format_for_prompt([Message("user", "<" * 30)], max_chars=10, escape=escape)
    assert text == "User: " + "&lt;" * 5 + "\n[… 20 characters omitted …]\n" + "&lt;" * 5


@pytest.mark.parametrize(
    ("text", "max_chars", "expected"),
    [
        ("abcdef", 6, "abcdef"),
        ("abcdefg", 6, "abc\n[… 1 characters omitted …]\nefg"),
        ("abcdefg", 1, "a\n[… 6 characters omitted …]\n"),
        ("abcdefg", 2, "a\n[… 5 characters omitted …]\ng"),
        ("", 1, ""),
    ],
)
def test_truncate_middle_keeps_exactly_max_chars_of_content(
    text: str, max_chars: int, expected: str
) -> None:
    assert truncate_middle(text, max_chars) == expected


@pytest.mark.parametrize("max_chars", [0, -5])
def test_max_chars_below_one_is_rejected(max_chars: int) -> None:
    with pytest.raises(ValueError, match="max_chars"):
        truncate_middle("abc", max_chars)
    with pytest.raises(ValueError, match="max_chars"):
        format_for_prompt([Message("user", "abc")], max_chars=max_chars)


def test_kept_messages_are_real_frozen_messages() -> None:
    kept = capture([{"role": "user", "content": "I am Ana", "id": "x"}])[0]
    assert type(kept) is Message
    assert kept == Message("user", "I am Ana", "x")
    assert hash(kept) == hash(Message("user", "I am Ana", "x"))
    with pytest.raises(FrozenInstanceError):
        kept.content = "changed"  # type: ignore[misc]


def test_user_role_message_with_only_tool_results_does_not_drop_the_answer() -> None:
    kept = capture(
        [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "w"}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "2C"}],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "2C and windy."}]},
        ]
    )
    assert _roles_and_text(kept) == [("user", "Weather in Oslo?"), ("assistant", "2C and windy.")]


def test_nul_characters_are_removed_from_message_text():
    kept = capture([
        {"role": "user", "content": "I live\x00 in Lisbon"},
        {"role": "assistant", "content": "\x00Noted\x00"},
    ])  # fmt: skip
    assert [m.content for m in kept] == ["I live in Lisbon", "Noted"]
