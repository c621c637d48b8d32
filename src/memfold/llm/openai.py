"""An OpenAI-compatible chat model through the official ``openai`` SDK.

Works with OpenAI and with servers that speak the same API (Ollama, vLLM, llama.cpp,
LiteLLM, ...). The response format is negotiated (see ``memfold.llm._formats``): with
``response_format="auto"`` each (base_url, model) is tried with ``json_schema``, then
llama.cpp's ``json_object`` + schema, then ``json_object``, then plain text with the schema
in the prompt, once per process; the first mode the server answers is remembered.

Two limits apply: ``timeout`` (``llm.timeout_seconds``) bounds one HTTP request, the
``timeout`` passed to :meth:`OpenAIChatModel.complete` (``extraction_timeout_seconds`` for
the extractor) bounds the whole call, negotiation and retries included. Retries
(``max_retries``: connection errors, request timeouts, 408, 409, 429, 5xx) happen here
rather than in the SDK, so that they respect both.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from memfold._openai_sdk import LOCAL_API_KEY, api_key_from_env, import_openai
from memfold.config import mask_url
from memfold.extract.base import Usage
from memfold.llm._formats import (
    Mode,
    ResponseFormat,
    format_kwargs,
    is_rejection,
    negotiation_for,
)
from memfold.llm.base import ChatMessage, ChatModelError, Completion, flatten_content

if TYPE_CHECKING:
    import openai

__all__ = ["DEFAULT_MAX_OUTPUT_TOKENS", "LOCAL_API_KEY", "OpenAIChatModel"]

log = logging.getLogger("memfold.llm")

#: ``max_tokens`` sent with every request unless configured otherwise.
DEFAULT_MAX_OUTPUT_TOKENS = 1500

JsonMode = Literal["auto", "on", "off"]
_FROM_JSON_MODE: dict[str, ResponseFormat] = {
    "auto": "auto",
    "on": "json_schema",
    "off": "text",
}
_RESPONSE_FORMATS = ("auto", "json_schema", "json_object_schema", "json_object", "text")
_NOT_RETRYABLE = frozenset({400, 401, 403, 404, 422})
_RETRY_STATUSES = frozenset({408, 409, 429})
_MAX_RETRY_DELAY = 8.0


def _import_openai() -> Any:
    return import_openai("llm")


def _response_format(json_mode: JsonMode | None, response_format: ResponseFormat) -> ResponseFormat:
    if response_format not in _RESPONSE_FORMATS:
        raise ValueError(
            f"response_format={response_format!r}: use one of {', '.join(_RESPONSE_FORMATS)}"
        )
    if json_mode is None:
        return response_format
    if json_mode not in _FROM_JSON_MODE:
        raise ValueError(f"json_mode={json_mode!r}: use 'auto', 'on' or 'off'")
    mapped = _FROM_JSON_MODE[json_mode]
    if response_format not in ("auto", mapped):
        raise ValueError(
            f"json_mode={json_mode!r} contradicts response_format={response_format!r}: "
            "set only response_format"
        )
    return mapped


class OpenAIChatModel:
    """A :class:`~memfold.llm.base.ChatModel` over ``/v1/chat/completions``.

    The API key is read from the environment variable named by ``api_key_env`` (never
    from configuration files); ``api_key_env=None`` is for local servers without keys.
    ``response_format`` pins a mode instead of negotiating (``json_mode`` is the older
    spelling: ``on`` = ``json_schema``, ``off`` = ``text``). ``max_output_tokens`` is sent
    as ``max_tokens`` (None sends none), so a small model cannot run to its context limit.

    Raises:
        ConfigError: the ``openai`` package is missing, or the key variable is not set.
        ValueError: an option is out of range.
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
        json_mode: JsonMode | None = None,
        response_format: ResponseFormat = "auto",
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name, e.g. 'gpt-4o-mini'")
        if not timeout > 0:
            raise ValueError(f"timeout={timeout}: must be positive seconds")
        if max_output_tokens is not None and max_output_tokens < 1:
            raise ValueError(f"max_output_tokens={max_output_tokens}: must be at least 1")
        self.response_format: ResponseFormat = _response_format(json_mode, response_format)
        sdk = _import_openai()
        api_key = api_key_from_env(api_key_env, "llm", environ)
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.temperature = temperature
        self.max_retries = max_retries
        self.max_output_tokens = max_output_tokens
        # The SDK does not retry: its retries would not respect the per-call timeout.
        self._client: openai.OpenAI = sdk.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0
        )
        self._negotiation = negotiation_for(base_url, model, _where(self))

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
    def negotiated_mode(self) -> Mode | None:
        """The response format this server last answered (None before the first reply)."""
        return self._negotiation.working

    @property
    def json_mode(self) -> JsonMode:
        """The older view of ``response_format``: ``off`` for text, ``on`` when pinned."""
        if self.response_format == "auto":
            return "auto"
        return "off" if self.response_format == "text" else "on"

    @property
    def json_mode_disabled(self) -> bool:
        """True once negotiation fell back to plain text (the server rejected JSON modes)."""
        return self.response_format == "auto" and self._negotiation.working == "text"

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """Send ``messages`` and return the reply text and token usage.

        ``timeout`` (default: the instance's) bounds the whole call, negotiation and
        retries included; each request is also bounded by the instance's ``timeout``.

        Raises:
            ChatModelError: a timeout (naming the limit that fired), connection failure,
                rate limit, server or client error, or a reply without text.
        """
        sdk = _import_openai()
        wire = [{"role": m.role, "content": m.content} for m in messages]
        budget = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        candidates = self._negotiation.candidates(self.response_format)
        tentative: list[Mode] = []  # refused with a bare 4xx: rejected once a weaker mode works
        position = retries = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _budget_error(self, budget)
            mode = candidates[position]
            per_request = min(self.timeout, remaining)
            kwargs, sent = format_kwargs(mode, json_schema, wire)
            kwargs.update(
                model=self.model, messages=sent, temperature=self.temperature, timeout=per_request
            )
            if self.max_output_tokens is not None:
                kwargs[self._negotiation.limit_key] = self.max_output_tokens
            try:
                response = self._client.chat.completions.create(**kwargs)
            except sdk.APIStatusError as exc:
                if self._negotiation.adopt_completion_limit(exc.status_code, str(exc)):
                    continue
                rejected, named = is_rejection(exc.status_code, str(exc))
                if rejected and position + 1 < len(candidates):
                    why = f"HTTP {exc.status_code}: {_short(str(exc), 160)}"
                    if named:
                        self._negotiation.reject([mode], why)
                    else:
                        tentative.append(mode)
                    position += 1
                    continue
                error: Exception = exc
            except sdk.APITimeoutError as exc:
                if per_request >= remaining:
                    raise _budget_error(self, budget) from exc
                error = exc
            except sdk.OpenAIError as exc:
                error = exc
            except ValueError as exc:  # the SDK lets a body that is not JSON escape as-is
                raise ChatModelError(
                    f"{_where(self)}: the reply body is not valid JSON ({exc}); "
                    "is llm.base_url an OpenAI-compatible endpoint?"
                ) from exc
            else:
                if tentative:
                    self._negotiation.reject(tentative, f"refused with HTTP 4xx, {mode} works")
                self._negotiation.worked(mode, announce=self.response_format == "auto")
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


def _budget_error(model: OpenAIChatModel, budget: float) -> ChatModelError:
    return ChatModelError(
        f"{_where(model)}: no reply within the call's {budget:g}s budget "
        "(extraction_timeout_seconds bounds one whole extraction, retries included); "
        "raise extraction_timeout_seconds"
    )


def _retry_delay(sdk: Any, exc: Exception, retries: int) -> float | None:
    """Seconds to wait before retrying ``exc``, or None when a retry cannot help."""
    if isinstance(exc, sdk.APITimeoutError):
        return 0.0  # one request hit llm.timeout_seconds; the call's budget has time left
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


def _where(model: OpenAIChatModel) -> str:
    return f"model {model.model!r} at {mask_url(model.base_url) or 'api.openai.com'}"


def _translate(sdk: Any, exc: Exception, model: OpenAIChatModel) -> ChatModelError:
    where = _where(model)
    if isinstance(exc, sdk.APITimeoutError):
        return ChatModelError(
            f"{where}: no reply within llm.timeout_seconds={model.timeout:g}s (the limit of "
            "one request); raise llm.timeout_seconds"
        )
    if isinstance(exc, sdk.APIConnectionError):
        return ChatModelError(f"{where}: cannot connect ({exc}); check llm.base_url")
    if isinstance(exc, sdk.RateLimitError):
        return ChatModelError(f"{where}: rate limited (HTTP 429); will retry later", status=429)
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        hint = {
            400: _format_hint(model),
            422: _format_hint(model),
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


def _format_hint(model: OpenAIChatModel) -> str:
    if model.response_format == "auto":
        return ""
    return f"; llm.response_format={model.response_format} is pinned: try auto"


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
        usage = _usage(getattr(response, "usage", None))
        raise ChatModelError(f"{_where(model)}: {reason}", usage=usage)
    finish = getattr(choices[0], "finish_reason", None)
    return Completion(
        text=text, usage=_usage(getattr(response, "usage", None)), truncated=finish == "length"
    )


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    prompt = getattr(raw, "prompt_tokens", None)
    completion = getattr(raw, "completion_tokens", None)
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion)
