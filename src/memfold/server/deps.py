"""FastAPI dependencies: the shared state, the caller, and the scope a route works on.

A user key reaches only its own user: any other ``{user_id}`` answers 404 exactly as a
user nobody has heard of would, so a key cannot learn which ids exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request

from memfold.memory import Memory
from memfold.server.auth import AuthError, Principal, request_principal
from memfold.server.errors import ApiError
from memfold.server.keys import DEFAULT_USER_PATH
from memfold.server.schemas import MAX_ID_CHARS
from memfold.server.state import ServerState

__all__ = [
    "DEFAULT_USER",
    "Caller",
    "ScopeArgs",
    "admin_only",
    "memory_of",
    "scope_args",
    "server_state",
]

#: ``{user_id}`` of the default user (``user_id=None`` in Python).
DEFAULT_USER = DEFAULT_USER_PATH


def server_state(request: Request) -> ServerState:
    state: ServerState = request.app.state.memfold
    return state


def memory_of(request: Request) -> Memory:
    return server_state(request).memory


Caller = Annotated[Principal, Depends(request_principal)]


def admin_only(principal: Caller) -> Principal:
    if not principal.admin:
        raise AuthError("this endpoint needs an admin key", status=403, code="forbidden")
    return principal


def user_path(user_id: str | None) -> str:
    """The ``{user_id}`` path segment of a Python user id."""
    return DEFAULT_USER if user_id is None else user_id


@dataclass(frozen=True, slots=True)
class ScopeArgs:
    """The (user, agent) a route works on, checked against the caller."""

    user_id: str | None
    agent: str | None

    @property
    def kw(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "agent": self.agent}


UserIdPath = Annotated[
    str,
    Path(
        min_length=1,
        max_length=MAX_ID_CHARS,
        description=f"The user id; `{DEFAULT_USER}` is the default user (user_id=None).",
    ),
]
AgentQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="The agent's own memory; absent means the user's shared bucket.",
    ),
]


def user_arg(user_id: UserIdPath, principal: Caller) -> str | None:
    """The Python user id of ``{user_id}``, when the caller may reach it.

    Raises:
        ApiError: 404 when the caller may not (the same answer as for an unknown user).
    """
    found = None if user_id == DEFAULT_USER else user_id
    if not principal.may_access(found):
        raise ApiError(404, "not_found", f"no memory of user {user_id!r} here")
    return found


def scope_args(
    user: Annotated[str | None, Depends(user_arg)], agent: AgentQuery = None
) -> ScopeArgs:
    return ScopeArgs(user, agent)


Scoped = Annotated[ScopeArgs, Depends(scope_args)]
UserArg = Annotated[str | None, Depends(user_arg)]
MemoryDep = Annotated[Memory, Depends(memory_of)]
