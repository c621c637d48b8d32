"""Build the configured ``ChatModel`` from an ``LLMConfig``."""

from __future__ import annotations

from typing import Any

from memfold.config import LLMConfig
from memfold.errors import ConfigError
from memfold.llm.base import ChatModel
from memfold.llm.langchain import LANGCHAIN_HINT, LangChainChatModel
from memfold.llm.openai import OpenAIChatModel

__all__ = ["make_chat_model"]


def make_chat_model(llm: LLMConfig) -> ChatModel:
    """``provider: openai`` → :class:`OpenAIChatModel`; ``provider: langchain`` →
    ``init_chat_model(model)`` wrapped in :class:`LangChainChatModel` (``model`` may carry
    the provider as ``"provider:model"``, e.g. ``"anthropic:claude-sonnet-4-5"``).

    Raises:
        ConfigError: a package is missing (with the pip command), the key variable is
            unset, or LangChain does not know the model's provider.
    """
    if llm.provider == "openai":
        return OpenAIChatModel(
            llm.model,
            base_url=llm.base_url,
            api_key_env=llm.api_key_env,
            timeout=llm.timeout_seconds,
            max_retries=llm.max_retries,
            temperature=llm.temperature,
            json_mode=llm.json_mode,
            response_format=llm.response_format,
            max_output_tokens=llm.max_output_tokens,
        )
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        raise ConfigError(
            f"llm.provider=langchain needs langchain: {LANGCHAIN_HINT}", key="llm.provider"
        ) from exc
    kwargs: dict[str, Any] = {"temperature": llm.temperature}
    if llm.base_url:
        kwargs["base_url"] = llm.base_url
    try:
        model = init_chat_model(llm.model, **kwargs)
    except ImportError as exc:
        raise ConfigError(
            f"llm.model={llm.model!r}: the LangChain integration package is missing ({exc}); "
            "install the langchain-<provider> package for this model",
            key="llm.model",
        ) from exc
    except ValueError as exc:
        raise ConfigError(
            f"llm.model={llm.model!r}: {str(exc).splitlines()[0]} Write it as 'provider:model', "
            "e.g. 'openai:gpt-4o-mini'",
            key="llm.model",
        ) from exc
    return LangChainChatModel(model, timeout=llm.timeout_seconds)
