"""The LangChain adapter over GenericFakeChatModel."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field

from memfold.config import LLMConfig
from memfold.errors import ConfigError
from memfold.extract.base import ExtractionRequest, Usage
from memfold.extract.llm import LLMExtractor
from memfold.llm.base import ChatMessage, ChatModel, ChatModelError
from memfold.llm.factory import make_chat_model
from memfold.llm.langchain import LangChainChatModel
from memfold.llm.openai import OpenAIChatModel
from memfold.model import Message, empty_document

HELLO = [ChatMessage("system", "rules"), ChatMessage("user", "hi"), ChatMessage("assistant", "yo")]


class RecordingFake(GenericFakeChatModel):
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def invoke(self, input: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(input))
        return super().invoke(input, *args, **kwargs)


def fake(*replies: AIMessage | str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(replies))


def test_is_a_chat_model() -> None:
    assert isinstance(LangChainChatModel(fake("x")), ChatModel)


def test_string_content_and_usage_metadata() -> None:
    usage = {"input_tokens": 30, "output_tokens": 4, "total_tokens": 34}
    chat = LangChainChatModel(fake(AIMessage(content="hello", usage_metadata=usage)))
    completion = chat.complete(HELLO, timeout=1)
    assert completion.text == "hello"
    assert completion.usage == Usage(30, 4)


def test_list_of_blocks_is_flattened_and_usage_absent_is_none() -> None:
    blocks: list[str | dict[str, Any]] = [
        {"type": "reasoning", "reasoning": "thinking..."},
        {"type": "text", "text": '{"newFacts": '},
        {"type": "text", "text": "[]}"},
    ]
    completion = LangChainChatModel(fake(AIMessage(content=blocks))).complete(HELLO, timeout=1)
    assert completion.text == '{"newFacts": []}'
    assert completion.usage is None


def test_roles_map_to_langchain_message_types() -> None:
    model = RecordingFake(messages=iter(["ok"]))
    LangChainChatModel(model).complete(HELLO, timeout=1)
    assert [type(m).__name__ for m in model.seen[0]] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
    ]
    assert [m.content for m in model.seen[0]] == ["rules", "hi", "yo"]


def test_model_exception_becomes_chat_model_error() -> None:
    chat = LangChainChatModel(fake())  # an exhausted iterator raises inside invoke
    with pytest.raises(ChatModelError, match="LangChainChatModel"):
        chat.complete(HELLO, timeout=1)


def test_empty_reply_is_a_chat_model_error() -> None:
    with pytest.raises(ChatModelError, match="no text"):
        LangChainChatModel(fake(AIMessage(content=""))).complete(HELLO, timeout=1)


def test_extractor_works_through_langchain() -> None:
    answer = {
        "newFacts": [
            {
                "content": "Writes in Chinese",
                "category": "preference",
                "confidence": "0.9",
                "scope": "user",
                "durability": "durable",
            }
        ],
        "factsToRemove": [],
    }
    chat = LangChainChatModel(fake(AIMessage(content="<think>ok</think>" + json.dumps(answer))))
    extraction = LLMExtractor(chat, counter=len).propose(
        ExtractionRequest(
            empty_document(), (Message("user", "请用中文"), Message("assistant", "好"))
        )
    )
    assert [f.content for f in extraction.change_set.new_facts] == ["Writes in Chinese"]
    assert extraction.usage.prompt_tokens > 0


def test_missing_langchain_core_is_a_config_error_with_pip_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core", None)
    with pytest.raises(ConfigError, match=r"pip install 'memfold\[langchain\]'"):
        LangChainChatModel(fake("x"))


def test_factory_builds_openai_model_from_config() -> None:
    config = LLMConfig(
        model="qwen3:8b", base_url="http://127.0.0.1:11434/v1", api_key_env=None, max_retries=0
    )
    with make_chat_model(config) as chat:  # type: ignore[attr-defined]
        assert isinstance(chat, OpenAIChatModel)
        assert (chat.model, chat.base_url) == ("qwen3:8b", "http://127.0.0.1:11434/v1")


def test_factory_reports_unknown_langchain_provider() -> None:
    with pytest.raises(ConfigError, match="provider:model") as info:
        make_chat_model(LLMConfig(provider="langchain", model="nosuchprovider:model-x"))
    assert info.value.key == "llm.model"


def test_factory_reports_missing_langchain_with_pip_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)
    with pytest.raises(ConfigError, match=r"pip install 'memfold\[langchain\]'"):
        make_chat_model(LLMConfig(provider="langchain", model="openai:gpt-4o-mini"))


class SlowFake(GenericFakeChatModel):
    """Sleeps before answering, like a provider that hangs."""

    delay: float = 5.0

    def invoke(self, input: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.delay)
        return super().invoke(input, *args, **kwargs)


def slow(delay: float, *replies: str) -> SlowFake:
    return SlowFake(messages=iter(replies or ("late",)), delay=delay)


def test_call_timeout_bounds_a_hanging_langchain_model() -> None:
    # S5: 0.1.0 applied no timeout to LangChain models: a model sleeping 8 s held the job 8.1 s
    chat = LangChainChatModel(slow(5))
    start = time.monotonic()
    with pytest.raises(ChatModelError, match=r"extraction_timeout_seconds=0\.3s"):
        chat.complete(HELLO, timeout=0.3)
    assert time.monotonic() - start < 2
    assert chat.hung_calls == 1


def test_the_smaller_of_the_two_timeouts_fires_and_is_named() -> None:
    chat = LangChainChatModel(slow(5), timeout=0.2)
    with pytest.raises(ChatModelError, match=r"llm\.timeout_seconds=0\.2s; raise llm\.timeout"):
        chat.complete(HELLO, timeout=30)


def test_a_reply_within_the_timeout_comes_back() -> None:
    chat = LangChainChatModel(slow(0.05, "in time"), timeout=5)
    assert chat.complete(HELLO, timeout=5).text == "in time"
    assert chat.hung_calls == 0


def test_errors_inside_the_timed_call_are_still_chat_model_errors() -> None:
    with pytest.raises(ChatModelError, match="LangChainChatModel"):
        LangChainChatModel(fake(), timeout=5).complete(HELLO, timeout=5)


def test_a_hung_call_that_returns_later_frees_its_slot() -> None:
    chat = LangChainChatModel(slow(0.4), timeout=0.1)
    with pytest.raises(ChatModelError):
        chat.complete(HELLO)
    assert chat.hung_calls == 1
    deadline = time.monotonic() + 5
    while chat.hung_calls and time.monotonic() < deadline:
        time.sleep(0.05)
    assert chat.hung_calls == 0


def test_too_many_hung_calls_fail_at_once_instead_of_piling_up_threads() -> None:
    chat = LangChainChatModel(slow(3, "a", "b", "c"), timeout=0.1, max_hung_calls=2)
    for _ in range(2):
        with pytest.raises(ChatModelError, match="no reply within"):
            chat.complete(HELLO)
    start = time.monotonic()
    with pytest.raises(ChatModelError, match="2 earlier call"):
        chat.complete(HELLO)
    assert time.monotonic() - start < 0.05


def test_memory_update_with_a_hanging_langchain_model_gives_up_on_time(tmp_path: Path) -> None:
    from memfold import Memory, MemoryConfig

    config = MemoryConfig(home=tmp_path, extraction_timeout_seconds=0.3)
    with Memory(config, chat_model=LangChainChatModel(slow(5))) as memory:
        start = time.monotonic()
        with pytest.raises(ChatModelError, match="extraction_timeout_seconds"):
            memory.update(
                [("user", "I use Go at work."), ("assistant", "Nice.")], thread_id="t", user_id="u"
            )
        assert time.monotonic() - start < 2


def test_factory_gives_langchain_models_the_configured_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import langchain.chat_models

    made: dict[str, Any] = {}

    def init_chat_model(model: str, **kwargs: Any) -> GenericFakeChatModel:
        made.update(kwargs, model=model)
        return fake("x")

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_chat_model)
    chat = make_chat_model(LLMConfig(provider="langchain", model="m:x", timeout_seconds=7))
    assert isinstance(chat, LangChainChatModel)
    assert chat.timeout == 7
    assert made == {"model": "m:x", "temperature": 0.0}


def test_timeout_and_hung_call_limit_are_validated() -> None:
    with pytest.raises(ValueError, match="timeout=0"):
        LangChainChatModel(fake("x"), timeout=0)
    with pytest.raises(ValueError, match="max_hung_calls=0"):
        LangChainChatModel(fake("x"), max_hung_calls=0)


def test_the_schema_is_written_into_the_system_message() -> None:
    model = RecordingFake(messages=iter(["ok"]))
    LangChainChatModel(model).complete(HELLO, json_schema={"type": "object"}, timeout=1)
    system = model.seen[0][0].content
    assert isinstance(system, str)
    assert system.startswith("rules")
    assert '{"type":"object"}' in system
    assert [m.content for m in model.seen[0][1:]] == ["hi", "yo"]
