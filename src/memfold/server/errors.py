"""Every error as ``{"error": {"code", "message"}}`` with the status that fits it.

The facade's exceptions are translated here, in one table, so no route decides a status
code by hand: a missing fact is 404, a duplicate or a lost compare-and-set 409 (with a
retry hint), invalid input 422, a store that is down 503.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from memfold.errors import (
    ConflictError,
    CorruptMemoryError,
    DuplicateFactError,
    FactNotFoundError,
    MemfoldError,
    StorageError,
)
from memfold.server.auth import AuthError

__all__ = ["ApiError", "ErrorBody", "error_response", "install_error_handlers"]

logger = logging.getLogger("memfold.server")

#: Seconds a client should wait before retrying a 409 conflict or a 503.
RETRY_AFTER_SECONDS = 1
_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid",
    503: "unavailable",
}


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


class ApiError(Exception):
    """Raised by routes: becomes ``status`` with ``{"error": {code, message}}``."""

    def __init__(
        self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def _retry_later() -> dict[str, str]:
    return {"Retry-After": str(RETRY_AFTER_SECONDS)}


def _validation_message(exc: RequestValidationError) -> tuple[int, str, str]:
    errors = list(exc.errors())
    if any(err.get("type") == "json_invalid" for err in errors):
        return 400, "bad_request", "the request body is not valid JSON"
    if any(tuple(err.get("loc", ())) == ("body",) for err in errors):
        # security: only JSON bodies are read, so a cross-site form post changes nothing
        return 422, "invalid", "the body must be a JSON object sent as application/json"
    parts = []
    for err in errors[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return 422, "invalid", "; ".join(parts) + more


def _translate(exc: Exception) -> tuple[int, str, str, dict[str, str] | None]:
    """(status, code, message, headers) for an exception a route let through."""
    if isinstance(exc, ApiError):
        return exc.status, exc.code, exc.message, exc.headers
    if isinstance(exc, AuthError):
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return exc.status, exc.code, str(exc), headers
    if isinstance(exc, FactNotFoundError):
        return 404, "fact_not_found", str(exc), None
    if isinstance(exc, DuplicateFactError):
        return 409, "duplicate_fact", str(exc), None
    if isinstance(exc, ConflictError):
        message = f"{exc}; another change won the race: retry the request"
        return 409, "revision_conflict", message, _retry_later()
    if isinstance(exc, CorruptMemoryError):
        return 503, "corrupt_memory", str(exc), None
    if isinstance(exc, (ValueError, TypeError)):  # the facade's checks (also a store's refusal)
        return 422, "invalid", str(exc), None
    if isinstance(exc, StorageError):
        return 503, "storage_unavailable", f"{exc}; retry later", _retry_later()
    if isinstance(exc, MemfoldError):
        return 503, "unavailable", str(exc), None
    raise exc


def install_error_handlers(app: FastAPI) -> None:
    """Route every error of ``app`` through the one JSON error shape."""

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        status, code, message = _validation_message(cast(RequestValidationError, exc))
        return error_response(status, code, message)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        exc = cast(HTTPException, exc)  # registered for it
        code = _HTTP_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.method} {request.url.path}"
        return error_response(exc.status_code, code, message, dict(exc.headers or {}))

    async def on_error(request: Request, exc: Exception) -> JSONResponse:
        status, code, message, headers = _translate(exc)
        return error_response(status, code, message, headers)

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal", "internal error; the server log has the details")

    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    for kind in (ApiError, AuthError, MemfoldError, ValueError, TypeError):
        app.add_exception_handler(kind, on_error)
    app.add_exception_handler(Exception, on_unexpected)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` of a route that may answer with these errors (for the OpenAPI spec)."""
    return {status: {"model": ErrorBody} for status in statuses}


#: What any route may answer: a body that is not JSON, no credentials, an unknown user
#: (or one the key may not reach), a body too large, invalid input, a store that is down.
COMMON_ERRORS = error_responses(400, 401, 404, 413, 422, 503)
