"""The MCP endpoint of ``memfold serve``: ``/mcp`` beside the REST API, behind its keys.

``mcp_extension`` is an extension of ``memfold.server.create_app``: it mounts the
stateless streamable-HTTP transport on the app and resolves every request with the app's
own :class:`~memfold.server.auth.Authenticator`, so a user key binds the session to its
user and an admin key names the user in the URL (``?user=``), as for the REST API.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from memfold.config import MemoryConfig
from memfold.errors import ConfigError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from memfold.mcp.http import McpEndpoint
    from memfold.server.state import Extension, ServerState

__all__ = ["PATH", "mcp_extension", "serve_extensions"]

logger = logging.getLogger("memfold.mcp")

#: Where ``memfold serve`` offers the MCP endpoint.
PATH = "/mcp"


def mcp_extension(app: FastAPI, state: ServerState) -> McpEndpoint:
    """Mount the MCP endpoint at ``/mcp`` of ``app``; the app's lifespan runs it.

    A server without keys (every caller is admin, loopback only) answers only loopback
    host names, so a web page cannot reach it by DNS rebinding.
    """
    from starlette.requests import Request

    from memfold.mcp.binding import Binding
    from memfold.mcp.http import LOOPBACK_ONLY, McpRefusal, bind, mount_mcp
    from memfold.mcp.server import build_server
    from memfold.server.auth import AuthError, scope_principal

    def resolve(request: Request) -> Binding:
        try:
            principal = scope_principal(state.auth, request.scope)
        except AuthError as exc:
            raise McpRefusal(str(exc), status=exc.status) from exc
        return bind(admin=principal.admin, user_id=principal.user_id, query=request.query_params)

    security = LOOPBACK_ONLY if state.auth.is_open else None
    server = build_server(lambda: state.memory)
    return mount_mcp(app, server, resolve, path=PATH, transport_security=security)


def serve_extensions(config: MemoryConfig) -> tuple[Extension, ...]:
    """The extensions ``memfold serve`` adds for ``config``: the MCP endpoint unless
    ``mcp.http`` is false. Without the MCP SDK it is left out with a warning, unless the
    config asks for it by name.

    Raises:
        ConfigError: ``mcp.http: true`` is set and the ``mcp`` extra is not installed.
    """
    if not config.mcp.http:
        return ()
    from memfold.mcp import require_sdk

    try:
        require_sdk()
    except ConfigError as exc:
        if "http" in config.mcp.model_fields_set:
            raise ConfigError(f"mcp.http is true: {exc}", key="mcp.http") from exc
        logger.warning("memfold serve: no MCP endpoint at %s: %s", PATH, exc)
        return ()
    return (mcp_extension,)
