"""The streamable-HTTP transport: every request is authenticated and bound to one scope.

A :data:`Resolver` turns a request (its credentials, and ``?user=``/``?agent=`` in the
URL) into a :class:`Binding`, or refuses it with :class:`McpRefusal`. The transport is
stateless (one JSON answer per POST, no session kept in memory), so any replica or
worker process can answer any request and a credential is checked on every call.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from memfold.errors import MemfoldError
from memfold.mcp.binding import BINDING_SCOPE_KEY, DEFAULT_USER, Binding

__all__ = [
    "LOOPBACK_ONLY",
    "McpEndpoint",
    "McpRefusal",
    "Resolver",
    "bind",
    "http_app",
    "mount_mcp",
]

logger = logging.getLogger("memfold.mcp")

#: A request's scope, or :class:`McpRefusal`.
Resolver = Callable[[Request], Binding]

#: Host/Origin checks for a server without credentials: only loopback names are answered,
#: so a web page cannot reach it by DNS rebinding.
LOOPBACK_ONLY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)
_NO_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)

_MAX_ID_CHARS = 1024


class McpRefusal(MemfoldError):
    """A request the transport will not serve: 401 (no or bad credentials), 403 (not
    allowed), 400 (a malformed ``?user=``/``?agent=``)."""

    def __init__(self, message: str, *, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


def bind(*, admin: bool, user_id: str | None, query: Mapping[str, str]) -> Binding:
    """The binding of a caller who is ``admin`` or bound to ``user_id``, for a URL with
    these query parameters: ``user`` (admin only, ``~`` is the default user; a user key
    may repeat its own) and ``agent``.

    Raises:
        McpRefusal: a user key asking for another user, or an empty or oversized id.
    """
    agent = _query_id(query, "agent")
    requested = _query_id(query, "user")
    if admin:
        user = None if requested in (None, DEFAULT_USER) else requested
        return Binding(user, agent, admin=True)
    if user_id is None:
        raise McpRefusal("this credential is bound to no user", status=403)
    if requested is not None and requested != user_id:
        raise McpRefusal(
            f"this key is bound to user {user_id!r}: drop ?user= or use an admin key",
            status=403,
        )
    return Binding(user_id, agent)


def _query_id(query: Mapping[str, str], name: str) -> str | None:
    value = query.get(name)
    if value is None:
        return None
    if not value.strip() or len(value) > _MAX_ID_CHARS:
        raise McpRefusal(
            f"?{name}= must be a non-empty id of at most {_MAX_ID_CHARS} characters; "
            f"omit it for the {'default user' if name == 'user' else 'shared memory'}",
            status=400,
        )
    return value


class McpEndpoint:
    """The ASGI app of the MCP endpoint: authenticate, bind, hand over to the SDK.

    As an async context manager it runs the SDK's request manager: enter it at the web
    app's startup and leave it at shutdown (again after a restart).
    """

    def __init__(
        self,
        server: MCPServer[Any],
        resolve: Resolver,
        *,
        transport_security: TransportSecuritySettings | None = None,
    ) -> None:
        self._server = server
        self._resolve = resolve
        self._security = transport_security or _NO_HOST_CHECK
        self._manager: StreamableHTTPSessionManager | None = None
        self._running: AbstractAsyncContextManager[None] | None = None
        self._entered = 0

    async def __aenter__(self) -> None:
        """Start the SDK's request manager (a manager runs once: a new one each startup).

        Entered again while running (two test clients on one app), it keeps the running
        manager; the last exit stops it.
        """
        self._entered += 1
        if self._running is not None:
            return
        self._server.streamable_http_app(
            stateless_http=True, json_response=True, transport_security=self._security
        )
        manager = self._server.session_manager
        running = manager.run()
        try:
            await running.__aenter__()
        except BaseException:
            self._entered -= 1
            raise
        self._manager, self._running = manager, running

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._entered -= 1
        if self._entered > 0:
            return
        running, self._running, self._manager = self._running, None, None
        if running is not None:
            await running.__aexit__(exc_type, exc, tb)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if scope["type"] != "http" or manager is None:
            await _refuse(scope, receive, send, 503, "the MCP endpoint is not running")
            return
        try:
            binding = self._resolve(Request(scope))
        except McpRefusal as exc:
            await _refuse(scope, receive, send, exc.status, str(exc))
            return
        await manager.handle_request({**scope, BINDING_SCOPE_KEY: binding}, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    """A JSON-RPC error without an id, as the SDK answers transport-level refusals."""
    if scope["type"] != "http":
        return
    headers = {"WWW-Authenticate": 'Bearer realm="memfold"'} if status == 401 else None
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}
    await JSONResponse(body, status_code=status, headers=headers)(scope, receive, send)


def mount_mcp(
    app: Starlette,
    server: MCPServer[Any],
    resolve: Resolver,
    *,
    path: str = "/mcp",
    transport_security: TransportSecuritySettings | None = None,
) -> McpEndpoint:
    """Serve ``server`` at ``path`` of ``app`` (a Starlette or FastAPI app); returns the
    endpoint, an async context manager the app's lifespan must enter at startup."""
    endpoint = McpEndpoint(server, resolve, transport_security=transport_security)
    app.router.routes.append(_route(path, endpoint))
    return endpoint


def http_app(
    server: MCPServer[Any],
    resolve: Resolver,
    *,
    path: str = "/mcp",
    transport_security: TransportSecuritySettings | None = None,
) -> Starlette:
    """A web app serving ``server`` at ``path`` alone (``memfold serve`` mounts the same
    endpoint beside its REST API)."""
    endpoint = McpEndpoint(server, resolve, transport_security=transport_security)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with endpoint:
            yield

    return Starlette(routes=[_route(path, endpoint)], lifespan=lifespan)


def _route(path: str, endpoint: McpEndpoint) -> Route:
    return Route(path, endpoint=endpoint, methods=["GET", "POST", "DELETE"])
