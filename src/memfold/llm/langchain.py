"""Use any LangChain ``BaseChatModel`` (e.g. from ``init_chat_model``) as a ChatModel."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memfold.errors import ConfigError
from memfold.extract.base import Usage
from memfold.llm.base import ChatMessage, ChatModelError, Completion, flatten_content

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

__all__ = ["LANGCHAIN_HINT", "LangChainChatModel"]

LANGCHAIN_HINT = "pip install 'memfold[langchain]'"


def _require_langchain_core() -> None:
    try:
        import langchain_core  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"llm.provider=langchain needs langchain-core: {LANGCHAIN_HINT}", key="llm.provider"
        ) from exc


class LangChainChatModel:
    """Adapter from a LangChain chat model to memfold's ``ChatModel``.

    ``json_schema`` is not forwarded (providers differ in how they take it) and the
    timeout is the wrapped model's own setting: configure both on the LangChain model.

    Raises:
        ConfigError: langchain-core is not installed.
    """

    def __init__(self, model: BaseChatModel) -> None:
        _require_langchain_core()
        self.model = model

    def __repr__(self) -> str:
        return f"LangChainChatModel({type(self.model).__name__})"

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """Invoke the wrapped model once.

        Raises:
            ChatModelError: the model raised, or replied without text.
        """
        try:
            reply = self.model.invoke(_to_langchain(messages))
        except Exception as exc:  # any provider error is a failed call for the queue
            raise ChatModelError(
                f"{self!r}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            ) from exc
        text = flatten_content(reply.content)
        if not text.strip():
            raise ChatModelError(f"{self!r}: the reply has no text")
        return Completion(text=text, usage=_usage(getattr(reply, "usage_metadata", None)))


def _to_langchain(messages: Sequence[ChatMessage]) -> list[BaseMessage]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return [kinds[m.role](content=m.content) for m in messages]


def _usage(meta: Any) -> Usage | None:
    if not isinstance(meta, Mapping):
        return None
    prompt = meta.get("input_tokens")
    completion = meta.get("output_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion)
