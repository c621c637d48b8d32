"""Response-format negotiation for OpenAI-compatible servers.

Servers differ in how they take a JSON schema. OpenAI and vLLM take ``json_schema``;
llama.cpp-based servers (llama-cpp-python, llamafile) reject it, often with an HTTP 500,
and take the schema as a grammar through ``{"type": "json_object", "schema": ...}``;
others know only ``json_object`` or nothing. :class:`Negotiation` tries the modes in
:data:`MODES` order per (base_url, model), once for the whole process, and remembers the
first one the server answers.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

__all__ = [
    "MODES",
    "Mode",
    "Negotiation",
    "ResponseFormat",
    "format_kwargs",
    "is_rejection",
    "negotiation_for",
    "reset_negotiations",
    "with_schema_note",
]

log = logging.getLogger("memfold.llm")

Mode = Literal["json_schema", "json_object_schema", "json_object", "text"]
ResponseFormat = Literal["auto", "json_schema", "json_object_schema", "json_object", "text"]

#: Strongest first. ``json_object_schema`` is llama.cpp's grammar form.
MODES: Final[tuple[Mode, ...]] = ("json_schema", "json_object_schema", "json_object", "text")
# What a mode becomes when the caller has no schema to send.
_WITHOUT_SCHEMA: Final[dict[Mode, Mode]] = {
    "json_schema": "json_object",
    "json_object_schema": "json_object",
    "json_object": "json_object",
    "text": "text",
}

# Words of an error about the requested output format, for 5xx bodies (a 4xx is a
# rejection whatever it says, unless its status means something else, below).
_FORMAT_WORDS: Final = (
    "response_format",
    "response format",
    "json_schema",
    "json schema",
    "json_object",
    "schema",
    "grammar",
    "structured output",
    "guided",
)
# 4xx statuses that never mean "this format is not supported": auth, unknown model or
# path, timeouts, conflicts, size and rate limits.
_NOT_A_REJECTION: Final = frozenset({401, 402, 403, 404, 408, 409, 413, 429})
_SCHEMA_NOTE: Final = (
    "Reply with one JSON object that conforms to this JSON Schema (it describes the shape; "
    "it holds no values to copy):\n"
)


def is_rejection(status: int, body: str) -> tuple[bool, bool]:
    """(is it a rejection of the response format, does the body name the format).

    A rejection is any 4xx except those in ``_NOT_A_REJECTION``, or a 5xx whose body
    names the response format or the schema.
    """
    named = any(word in body.lower() for word in _FORMAT_WORDS)
    if 400 <= status < 500:
        return status not in _NOT_A_REJECTION, named
    return (status >= 500 and named), named


def format_kwargs(
    mode: Mode,
    schema: Mapping[str, Any] | None,
    messages: list[dict[str, str]],
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The request keywords for ``mode`` and the messages to send with it.

    Where the server does not receive the schema (``json_object``, ``text``), it is
    appended to the system message, so the model still sees the exact shape.
    """
    if schema is None:
        mode = _WITHOUT_SCHEMA[mode]
    kwargs: dict[str, Any] = {}
    if mode == "json_schema" and schema is not None:
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "memfold_reply", "schema": dict(schema)},
        }
    elif mode == "json_object_schema" and schema is not None:
        kwargs["response_format"] = {"type": "json_object", "schema": dict(schema)}
    elif mode == "json_object":
        kwargs["response_format"] = {"type": "json_object"}
    if schema is not None and mode in ("json_object", "text"):
        messages = with_schema_note(messages, schema)
    return kwargs, messages


def with_schema_note(
    messages: list[dict[str, str]], schema: Mapping[str, Any]
) -> list[dict[str, str]]:
    """``messages`` (role/content dicts) with the schema appended to the system message."""
    note = _SCHEMA_NOTE + json.dumps(schema, separators=(",", ":"))
    out = [dict(m) for m in messages]
    for message in out:
        if message["role"] == "system":
            message["content"] = f"{message['content'].rstrip()}\n\n{note}"
            return out
    return [{"role": "system", "content": note}, *out]


@dataclass
class Negotiation:
    """What one (base_url, model) accepts, shared by every client of it in this process.

    ``rejected`` holds modes the server refused while a weaker one worked, or refused
    naming the format; ``working`` is the mode that last got a reply.
    """

    where: str
    rejected: set[Mode] = field(default_factory=set)
    working: Mode | None = None
    #: ``max_completion_tokens`` once the server refused ``max_tokens`` (newer OpenAI models).
    limit_key: str = "max_tokens"
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def candidates(self, pinned: ResponseFormat) -> list[Mode]:
        """The modes to try, in order (one when ``pinned`` is not ``auto``)."""
        if pinned != "auto":
            return [pinned]
        with self.lock:
            if self.working is not None:
                start = MODES.index(self.working)
                return [m for m in MODES[start:] if m not in self.rejected]
            return [m for m in MODES if m not in self.rejected]

    def reject(self, modes: list[Mode], why: str) -> None:
        """Never try ``modes`` again for this server and model."""
        with self.lock:
            fresh = [m for m in modes if m not in self.rejected]
            self.rejected.update(modes)
        if fresh:
            log.info("%s does not accept response format %s: %s", self.where, fresh, why)

    def worked(self, mode: Mode, *, announce: bool = True) -> None:
        """Remember ``mode``; logged at info the first time and when it changes."""
        with self.lock:
            changed = self.working != mode
            self.working = mode
        if changed and announce:
            log.info("%s: using response format %s", self.where, mode)

    def adopt_completion_limit(self, status: int, body: str) -> bool:
        """Switch to ``max_completion_tokens`` when a 400 says ``max_tokens`` is not
        supported; True when the request should be sent again."""
        text = body.lower()
        if status != 400 or "max_tokens" not in text or "max_completion_tokens" not in text:
            return False
        with self.lock:
            if self.limit_key == "max_completion_tokens":
                return False
            self.limit_key = "max_completion_tokens"
        log.info("%s: sending max_completion_tokens instead of max_tokens", self.where)
        return True


_REGISTRY: dict[tuple[str, str], Negotiation] = {}
_REGISTRY_LOCK = threading.Lock()


def negotiation_for(base_url: str | None, model: str, where: str) -> Negotiation:
    """The process-wide :class:`Negotiation` of this server and model."""
    key = ((base_url or "").rstrip("/"), model)
    with _REGISTRY_LOCK:
        found = _REGISTRY.get(key)
        if found is None:
            found = _REGISTRY[key] = Negotiation(where)
        return found


def reset_negotiations(base_url: str | None = None) -> None:
    """Forget what was negotiated with ``base_url`` (every server when None): for a new
    server at an old address, or one upgraded in place."""
    with _REGISTRY_LOCK:
        if base_url is None:
            _REGISTRY.clear()
            return
        url = base_url.rstrip("/")
        for key in [k for k in _REGISTRY if k[0] == url]:
            del _REGISTRY[key]
