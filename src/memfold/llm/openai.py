"""An OpenAI-compatible chat model through the official ``openai`` SDK.

Works with OpenAI and with servers that speak the same API (Ollama, vLLM, llama.cpp,
LiteLLM, ...). JSON mode is used where the server accepts it: with ``json_mode="auto"``
a request the server rejects because of ``response_format`` is retried once with a
weaker mode (schema → JSON object → none), and the instance remembers not to send it again.

Retries (``max_retries``: connection errors, 408, 409, 429, 5xx) happen here rather than in
the SDK, so that one call, retries and their waits included, never outlasts its timeout.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from memfold._openai_sdk import LOCAL_API_KEY, api_key_from_env, import_openai
from memfold.config import mask_url
from memfold.extract.base import Usage
from memfold.llm.base import ChatMessage, ChatModelError, Completion, flatten_content

if TYPE_CHECKING:
    import openai

__all__ = ["LOCAL_API_KEY", "OpenAIChatModel"]

log = logging.getLogger("memfold.llm")


JsonMode = Literal["auto", "on", "off"]

# Response-format levels, strongest first.
_SCHEMA, _OBJECT, _NONE = 2, 1, 0
# Words of an error about the requested output format. Plain "json" is not one of them: a
# 400 "could not parse the JSON body" says nothing about response_format.
_REJECTION_WORDS = (
    "response_format",
    "response format",
    "json_schema",
    "json schema",
    "json_object",
    "json mode",
    "structured output",
    "guided",
    "grammar",
)
_REJECTION_STATUSES = frozenset({400, 422})
_NOT_RETRYABLE = frozenset({400, 401, 403, 404, 422})
_RETRY_STATUSES = frozenset({408, 409, 429})
_MAX_RETRY_DELAY = 8.0


def _import_openai() -> Any:
    return import_openai("llm")


class OpenAIChatModel:
    """A :class:`~memfold.llm.base.ChatModel` over ``/v1/chat/completions``.

    The API key is read from the environment variable named by ``api_key_env`` (never
    from configuration files); ``api_key_env=None`` is for local servers without keys.

    Raises:
        ConfigError: the ``openai`` package is missing, or the key variable is not set.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 2,
        temperature: float = 0.0,
        json_mode: JsonMode = "auto",
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name, e.g. 'gpt-4o-mini'")
        if json_mode not in ("auto", "on", "off"):
            raise ValueError(f"json_mode={json_mode!r}: use 'auto', 'on' or 'off'")
        sdk = _import_openai()
        api_key = api_key_from_env(api_key_env, "llm", environ)
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.temperature = temperature
        self.json_mode: JsonMode = json_mode
        self.max_retries = max_retries
        # The SDK does not retry: its retries would not respect the per-call timeout.
        self._client: openai.OpenAI = sdk.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0
        )
        self._level_cap = _SCHEMA if json_mode != "off" else _NONE
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        base_url = mask_url(self.base_url)  # security: no credentials in reprs
        return f"OpenAIChatModel(model={self.model!r}, base_url={base_url!r})"

    def __enter__(self) -> OpenAIChatModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    @property
    def json_mode_disabled(self) -> bool:
        """True once the server rejected every ``response_format`` we tried."""
        return self.json_mode != "off" and self._level_cap == _NONE

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """Send ``messages`` and return the reply text and token usage.

        ``timeout`` (default: the instance's) bounds the whole call, retries included.

        Raises:
            ChatModelError: timeout, connection failure, rate limit, server or client error,
                or a reply without text.
        """
        sdk = _import_openai()
        wire = [{"role": m.role, "content": m.content} for m in messages]
        wanted = _SCHEMA if json_schema is not None else _OBJECT
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        retries = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChatModelError(
                    f"{_where(self)}: no reply within the timeout; raise llm.timeout_seconds"
                )
            with self._lock:
                level = min(wanted, self._level_cap)
            kwargs: dict[str, Any] = {
                "model": self.model,
                "messages": wire,
                "temperature": self.temperature,
                "timeout": remaining,
            }
            if level == _SCHEMA and json_schema is not None:
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "memfold_reply", "schema": dict(json_schema)},
                }
            elif level >= _OBJECT:
                kwargs["response_format"] = {"type": "json_object"}
            try:
                response = self._client.chat.completions.create(**kwargs)
            except sdk.APIStatusError as exc:
                if level > _NONE and self.json_mode == "auto" and _rejects_format(exc):
                    with self._lock:
                        self._level_cap = min(self._level_cap, level - 1)
                    log.info(
                        "%s rejected response_format (%s); retrying without it",
                        mask_url(self.base_url) or "the server",  # security: mask
                        "json_schema" if level == _SCHEMA else "json_object",
                    )
                    continue
                error: Exception = exc
            except sdk.OpenAIError as exc:
                error = exc
            except ValueError as exc:  # the SDK lets a body that is not JSON escape as-is
                raise ChatModelError(
                    f"{_where(self)}: the reply body is not valid JSON ({exc}); "
                    "is llm.base_url an OpenAI-compatible endpoint?"
                ) from exc
            else:
                return _completion(response, self)
            delay = _retry_delay(sdk, error, retries)
            if (
                retries < self.max_retries
                and delay is not None
                and time.monotonic() + delay < deadline
            ):
                retries += 1
                time.sleep(delay)
                continue
            raise _translate(sdk, error, self) from error


def _retry_delay(sdk: Any, exc: Exception, retries: int) -> float | None:
    """Seconds to wait before retrying ``exc``, or None when a retry cannot help."""
    if isinstance(exc, sdk.APITimeoutError):
        return None  # it used up the call's time budget
    if isinstance(exc, sdk.APIStatusError):
        if exc.status_code not in _RETRY_STATUSES and exc.status_code < 500:
            return None
        headers = exc.response.headers
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            try:
                # The server's wish is kept even when long; the deadline decides.
                return max(float(headers.get(name, "")) * scale, 0.0)
            except ValueError:
                continue
    elif not isinstance(exc, sdk.APIConnectionError):
        return None
    return min(0.5 * 2.0**retries, _MAX_RETRY_DELAY)


def _rejects_format(exc: Any) -> bool:
    if exc.status_code not in _REJECTION_STATUSES:
        return False
    text = str(exc).lower()
    return any(word in text for word in _REJECTION_WORDS)


def _where(model: OpenAIChatModel) -> str:
    return f"model {model.model!r} at {mask_url(model.base_url) or 'api.openai.com'}"


def _translate(sdk: Any, exc: Exception, model: OpenAIChatModel) -> ChatModelError:
    where = _where(model)
    if isinstance(exc, sdk.APITimeoutError):
        return ChatModelError(f"{where}: no reply within the timeout; raise llm.timeout_seconds")
    if isinstance(exc, sdk.APIConnectionError):
        return ChatModelError(f"{where}: cannot connect ({exc}); check llm.base_url")
    if isinstance(exc, sdk.RateLimitError):
        return ChatModelError(f"{where}: rate limited (HTTP 429); will retry later", status=429)
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        hint = {
            401: "; check the key in llm.api_key_env",
            403: "; the key lacks access to this model",
            404: "; check llm.model and llm.base_url",
        }.get(status, "")
        return ChatModelError(
            f"{where}: HTTP {status}: {_short(exc.message)}{hint}",
            status=status,
            retryable=status not in _NOT_RETRYABLE,
        )
    return ChatModelError(f"{where}: {type(exc).__name__}: {_short(str(exc))}")


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _completion(response: Any, model: OpenAIChatModel) -> Completion:
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise ChatModelError(f"{_where(model)}: the reply has no choices")
    message = getattr(choices[0], "message", None)
    text = flatten_content(getattr(message, "content", None))
    if not text.strip():
        refusal = getattr(message, "refusal", None)
        reason = f"refused: {_short(str(refusal))}" if refusal else "the reply has no text"
        raise ChatModelError(f"{_where(model)}: {reason}")
    return Completion(text=text, usage=_usage(getattr(response, "usage", None)))


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    prompt = getattr(raw, "prompt_tokens", None)
    completion = getattr(raw, "completion_tokens", None)
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion)
