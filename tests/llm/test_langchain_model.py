"""The LangChain adapter over GenericFakeChatModel."""

from __future__ import annotations

import json
import sys
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
