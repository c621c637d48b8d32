"""Whose memory an MCP session works on, and how a request says it.

Over stdio the binding is fixed when the server starts (``--user``/``--agent`` or the
``mcp`` config section). Over HTTP the transport resolves one per request from its
credentials and hands it to the tools through the ASGI scope (``BINDING_SCOPE_KEY``).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

__all__ = ["BINDING_SCOPE_KEY", "DEFAULT_USER", "Binding", "memory_uri"]

#: The ASGI scope key under which the HTTP transport puts a request's :class:`Binding`.
BINDING_SCOPE_KEY = "memfold.mcp.binding"

#: The ``{user_id}`` of the default user (``user_id=None``) in ``memory://`` URIs, as in
#: the REST API's paths.
DEFAULT_USER = "~"


@dataclass(frozen=True, slots=True)
class Binding:
    """The scope a session's tools act on: ``(user_id, agent)``.

    ``admin`` (an admin key over HTTP) may also read any user's ``memory://`` resource;
    otherwise a session reads only its own user's memory (any of that user's agents).
    """

    user_id: str | None = None
    agent: str | None = None
    admin: bool = False

    def may_read(self, user_id: str | None) -> bool:
        """True when this session may read ``user_id``'s memory."""
        return self.admin or user_id == self.user_id

    def __str__(self) -> str:
        return memory_uri(self.user_id, self.agent)


def memory_uri(user_id: str | None, agent: str | None = None) -> str:
    """``memory://{user_id}`` or ``memory://{user_id}/{agent}``, each part percent-encoded
    (the default user is ``~``)."""
    user = DEFAULT_USER if user_id is None else quote(user_id, safe="")
    return f"memory://{user}" if agent is None else f"memory://{user}/{quote(agent, safe='')}"
