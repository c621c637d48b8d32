"""``ScriptedChatModel``: a public test fake that replays scripted replies in order."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memfold.errors import MemfoldError
from memfold.llm.base import ChatMessage, Completion

__all__ = ["ScriptExhaustedError", "ScriptedChatModel"]


class ScriptExhaustedError(MemfoldError):
    """A :class:`ScriptedChatModel` was called more often than it has replies."""


class ScriptedChatModel:
    """Returns (or raises) the scripted items one per call, in order.

    A string becomes ``Completion(text)``, a :class:`Completion` is returned as is, an
    exception is raised. Every call's messages are recorded in ``calls`` (and its
    options in ``call_options``), on the instance. Thread-safe.
    """

    def __init__(self, replies: Iterable[str | Exception | Completion] = ()) -> None:
        self._replies: deque[str | Exception | Completion] = deque(replies)
        self._lock = threading.Lock()
        self.calls: list[tuple[ChatMessage, ...]] = []
        self.call_options: list[dict[str, Any]] = []

    def add(self, *replies: str | Exception | Completion) -> None:
        """Append more scripted replies."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._replies)

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """The next scripted reply.

        Raises:
            ScriptExhaustedError: no scripted reply is left.
            Exception: a scripted exception, as given.
        """
        with self._lock:
            self.calls.append(tuple(messages))
            self.call_options.append({"json_schema": json_schema, "timeout": timeout})
            if not self._replies:
                raise ScriptExhaustedError(
                    f"ScriptedChatModel has no reply left for call {len(self.calls)}; "
                    "script one more reply (ScriptedChatModel([...]) or .add(...))"
                )
            reply = self._replies.popleft()
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, Completion):
            return reply
        return Completion(text=reply)
