"""Request bodies are size-limited before any of them is read into memory.

A pure ASGI middleware: a ``Content-Length`` over the limit is refused at once, and a
chunked body is counted as it streams, so neither can make a worker buffer gigabytes.
Imports get their own (larger) limit.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException

__all__ = ["BodyLimit"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class _TooLarge(HTTPException):
    """An HTTPException, so FastAPI's body parsing lets it through as a 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _message(limit))


class BodyLimit:
    """Refuse bodies over ``max_bytes`` (``max_import_bytes`` for paths ending ``/import``)
    with 413 and the usual ``{"error": ...}`` body."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, max_import_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_import_bytes = max_import_bytes

    def _limit(self, scope: Scope) -> int:
        path = str(scope.get("path", ""))
        return self.max_import_bytes if path.rstrip("/").endswith("/import") else self.max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _refuse(send, limit)
            return
        seen = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge(limit)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except _TooLarge:
            if not started:
                await _refuse(send, limit)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _message(limit: int) -> str:
    return (
        f"the request body is over this server's limit of {limit:,} bytes "
        "(server.max_body_bytes, or server.max_import_bytes for an import)"
    )


async def _refuse(send: Send, limit: int) -> None:
    body = json.dumps({"error": {"code": "payload_too_large", "message": _message(limit)}})
    body_bytes = body.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body_bytes)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body_bytes})
