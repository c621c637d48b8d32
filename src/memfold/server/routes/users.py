"""``/users``: who has memory, and erasing a user entirely.

A user key lists only its own user; ``DELETE /users/{user_id}`` is ``forget_user``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from memfold.memory import Memory
from memfold.model import Scope
from memfold.server.deps import Caller, MemoryDep, UserArg
from memfold.server.schemas import Erasure, UsersOut

__all__ = ["router"]

router = APIRouter(tags=["users"])


def _entry(memory: Memory, user_id: str | None, scopes: list[Scope]) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "agents": [scope.agent for scope in scopes if scope.agent is not None],
        "facts": sum(len(memory.get(user_id=s.user_id, agent=s.agent).facts) for s in scopes),
    }


@router.get("/users", response_model=UsersOut)
def list_users(
    memory: MemoryDep,
    principal: Caller,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> dict[str, Any]:
    """Users with stored memory (the default user is ``null``, first), their agents and how
    many facts they hold, ``limit`` at a time from ``offset``. A user key sees only its
    own user."""
    if not principal.admin:
        own = principal.user_id
        return {"users": [_entry(memory, own, memory.scopes(own))] if offset == 0 else []}
    by_user: dict[str | None, list[Scope]] = {}
    for scope in memory.scopes():
        by_user.setdefault(scope.user_id, []).append(scope)
    page = list(by_user.items())[offset : offset + limit]
    return {"users": [_entry(memory, user_id, scopes) for user_id, scopes in page]}


@router.delete("/users/{user_id}", response_model=Erasure)
def forget_user(user: UserArg, memory: MemoryDep) -> dict[str, Any]:
    """Erase everything of the user: every agent's memory, its history and its queued
    updates (``Memory.forget_user``)."""
    return memory.forget_user(user).to_dict()
