"""Use any LangChain ``BaseChatModel`` (e.g. from ``init_chat_model``) as a ChatModel."""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memfold.errors import ConfigError
from memfold.extract.base import Usage
from memfold.llm._formats import with_schema_note
from memfold.llm.base import ChatMessage, ChatModelError, Completion, flatten_content

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

__all__ = ["LANGCHAIN_HINT", "LangChainChatModel"]

log = logging.getLogger("memfold.llm")

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

    ``json_schema`` is not sent through the provider's API (providers differ in how they take
    it); it is appended to the system message, as for a server in text mode. Each call is
    bounded by the smaller of ``timeout`` (``llm.timeout_seconds``) and the call's own
    ``timeout`` (``extraction_timeout_seconds``), whatever the provider does: the model
    runs in a helper thread and a call that overruns fails with a :class:`ChatModelError`
    naming the setting that fired. The provider's own request keeps running until it
    returns; while ``max_hung_calls`` such calls are still running, new calls fail at once
    instead of piling up more threads.

    Raises:
        ConfigError: langchain-core is not installed.
        ValueError: ``timeout`` or ``max_hung_calls`` is not positive.
    """

    def __init__(
        self, model: BaseChatModel, *, timeout: float | None = None, max_hung_calls: int = 4
    ) -> None:
        _require_langchain_core()
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout={timeout}: must be positive seconds, or None")
        if max_hung_calls < 1:
            raise ValueError(f"max_hung_calls={max_hung_calls}: must be at least 1")
        self.model = model
        self.timeout = timeout
        self.max_hung_calls = max_hung_calls
        self._hung = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LangChainChatModel({type(self.model).__name__})"

    @property
    def hung_calls(self) -> int:
        """Calls that overran their timeout and have not returned yet."""
        with self._lock:
            return self._hung

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """Invoke the wrapped model once, within the timeout.

        Raises:
            ChatModelError: the model raised, replied without text, or did not reply in
                time (the message names llm.timeout_seconds or extraction_timeout_seconds).
        """
        if json_schema is not None:
            wire = [{"role": m.role, "content": m.content} for m in messages]
            messages = [
                ChatMessage(m["role"], m["content"])  # type: ignore[arg-type]
                for m in with_schema_note(wire, json_schema)
            ]
        limits = [(t, name) for t, name in ((self.timeout, _REQUEST), (timeout, _BUDGET)) if t]
        if not limits:
            reply = self._invoke(messages)
        else:
            limit, setting = min(limits, key=lambda item: item[0])
            reply = self._invoke_within(messages, limit, setting)
        text = flatten_content(reply.content)
        if not text.strip():
            raise ChatModelError(f"{self!r}: the reply has no text")
        return Completion(text=text, usage=_usage(getattr(reply, "usage_metadata", None)))

    def _invoke(self, messages: Sequence[ChatMessage]) -> Any:
        try:
            return self.model.invoke(_to_langchain(messages))
        except Exception as exc:  # any provider error is a failed call for the queue
            raise ChatModelError(
                f"{self!r}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            ) from exc

    def _invoke_within(self, messages: Sequence[ChatMessage], limit: float, setting: str) -> Any:
        with self._lock:
            if self._hung >= self.max_hung_calls:
                raise ChatModelError(
                    f"{self!r}: {self._hung} earlier call(s) overran their timeout and still "
                    "have not returned; the provider seems stuck (will retry later)"
                )
        outcome: list[Any] = []
        done = threading.Event()
        context = contextvars.copy_context()  # keeps LangChain callbacks and tracing

        def call() -> None:
            try:
                outcome.append(context.run(self._invoke, messages))
            except BaseException as exc:  # handed to the waiting caller
                outcome.append(exc)
            finally:
                done.set()
                with self._lock:
                    if late:
                        self._hung -= 1

        late: list[bool] = []
        worker = threading.Thread(target=call, name="memfold-langchain-call", daemon=True)
        worker.start()
        if not done.wait(limit):
            with self._lock:
                if not done.is_set():
                    late.append(True)
                    self._hung += 1
            if late:
                log.warning("%r: no reply within %s=%gs; abandoning the call", self, setting, limit)
                raise ChatModelError(
                    f"{self!r}: no reply within {setting}={limit:g}s; raise {setting}"
                )
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result


_REQUEST = "llm.timeout_seconds"
_BUDGET = "extraction_timeout_seconds"


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
