"""ScriptedChatModel, the public test fake."""

from __future__ import annotations

import pytest

from memfold.extract.base import Usage
from memfold.llm.base import ChatMessage, ChatModel, ChatModelError, Completion
from memfold.llm.scripted import ScriptedChatModel, ScriptExhaustedError

HI = [ChatMessage("user", "hi")]


def test_replies_come_back_in_order_and_calls_are_recorded() -> None:
    done = Completion("third", Usage(1, 2))
    model = ScriptedChatModel(["first", ChatModelError("down"), done])
    assert isinstance(model, ChatModel)
    assert model.complete(HI, timeout=1) == Completion("first")
    with pytest.raises(ChatModelError, match="down"):
        model.complete([ChatMessage("user", "again")], timeout=1)
    assert model.complete(HI, json_schema={"type": "object"}, timeout=2) is done
    assert [call[0].content for call in model.calls] == ["hi", "again", "hi"]
    assert model.call_options[2] == {"json_schema": {"type": "object"}, "timeout": 2}


def test_exhausted_script_raises_a_clear_error() -> None:
    model = ScriptedChatModel(["only"])
    model.complete(HI, timeout=1)
    with pytest.raises(ScriptExhaustedError, match="no reply left for call 2"):
        model.complete(HI, timeout=1)


def test_instances_do_not_share_state() -> None:
    first, second = ScriptedChatModel(["a"]), ScriptedChatModel()
    second.add("b")
    first.complete(HI, timeout=1)
    assert (len(first.calls), len(second.calls), second.remaining) == (1, 0, 1)
