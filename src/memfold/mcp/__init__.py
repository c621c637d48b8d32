"""memfold's memory as an MCP server. Needs the ``mcp`` extra: ``pip install 'memfold[mcp]'``.

``memfold mcp`` serves one user's memory over stdio to desktop and coding agents;
``memfold serve`` mounts the streamable-HTTP transport at ``/mcp`` behind the REST API's
keys. Both are thin faces over :class:`memfold.Memory`: ``build_server(memory,
binding=Binding("alice"))`` is the ``MCPServer`` they run.

Importing this package needs no SDK (so the CLI loads without the extra); the SDK is
imported when ``build_server`` or ``http_app`` is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memfold.errors import ConfigError
from memfold.mcp.binding import BINDING_SCOPE_KEY, DEFAULT_USER, Binding, memory_uri

if TYPE_CHECKING:
    from memfold.mcp.http import McpEndpoint, McpRefusal, bind, http_app
    from memfold.mcp.server import TOOL_NAMES, build_server
    from memfold.mcp.stdio import serve_stdio

__all__ = [
    "BINDING_SCOPE_KEY",
    "DEFAULT_USER",
    "TOOL_NAMES",
    "Binding",
    "McpEndpoint",
    "McpRefusal",
    "bind",
    "build_server",
    "http_app",
    "memory_uri",
    "serve_stdio",
]

_LAZY = {
    "TOOL_NAMES": "memfold.mcp.server",
    "build_server": "memfold.mcp.server",
    "McpEndpoint": "memfold.mcp.http",
    "McpRefusal": "memfold.mcp.http",
    "bind": "memfold.mcp.http",
    "http_app": "memfold.mcp.http",
    "serve_stdio": "memfold.mcp.stdio",
}


def require_sdk() -> None:
    """Raises ``ConfigError`` with the install command when the MCP SDK is missing."""
    try:
        importlib.import_module("mcp.server.mcpserver")
    except ImportError as exc:
        raise ConfigError(
            f"memfold's MCP server needs the MCP Python SDK 2.x ({exc.name} is missing): "
            "pip install 'memfold[mcp]'"
        ) from exc


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memfold.mcp' has no attribute {name!r}")
    require_sdk()
    return getattr(importlib.import_module(module), name)
