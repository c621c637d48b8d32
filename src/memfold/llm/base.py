"""The ``ChatModel`` protocol: the one thing memfold needs from a language model.

Adapters (OpenAI-compatible servers, LangChain chat models, the scripted test fake) turn a
list of :class:`ChatMessage` into a :class:`Completion`. They know nothing about memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from memfold.errors import MemfoldError
from memfold.extract.base import Usage

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatModelError",
    "ChatRole",
    "Completion",
    "Usage",
    "flatten_content",
]

ChatRole = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message sent to a chat model."""

    role: ChatRole
    content: str


@dataclass(frozen=True, slots=True)
class Completion:
    """A model's reply text and, when the provider reports it, the tokens it cost.

    ``truncated`` is True when the reply stopped at the output-token limit.
    """

    text: str
    usage: Usage | None = None
    truncated: bool = False


class ChatModelError(MemfoldError):
    """The model could not be reached or refused the request (transport or provider error).

    ``retryable`` is False for errors a retry cannot fix (bad key, unknown model); the
    queue retries the others with backoff.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = True,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        #: What the failed call still cost, when the provider said (e.g. an empty reply).
        self.usage = usage


@runtime_checkable
class ChatModel(Protocol):
    """Sends messages to a language model and returns its reply.

    ``json_schema`` is a hint: adapters that can constrain the output to it do so, the
    others ignore it. ``timeout`` is the wall-clock budget for this call in seconds.

    Raises:
        ChatModelError: on transport or provider failures.
    """

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        timeout: float,
    ) -> Completion: ...


def flatten_content(content: object) -> str:
    """Message content as plain text: a string as is, a list of blocks joined by their
    text parts (``{"type": "text", "text": ...}``, bare strings); anything else is ``""``.

    Reasoning blocks (``type`` of ``reasoning``/``thinking``) are skipped.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        kind = content.get("type")
        if kind in ("reasoning", "thinking"):
            return ""
        text = content.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(content, list | tuple):
        return "".join(flatten_content(part) for part in content)
    return ""
