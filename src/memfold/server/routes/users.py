"""``/users``: who has memory, and erasing a user entirely.

A user key lists only its own user; ``DELETE /users/{user_id}`` is ``forget_user``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memfold.memory import Memory
from memfold.server.deps import Caller, MemoryDep, UserArg
from memfold.server.schemas import Erasure, UsersOut

__all__ = ["router"]

router = APIRouter(tags=["users"])


def _entry(memory: Memory, user_id: str | None) -> dict[str, Any]:
    scopes = memory.scopes(user_id)
    return {
        "user_id": user_id,
        "agents": [scope.agent for scope in scopes if scope.agent is not None],
        "facts": sum(len(memory.get(user_id=s.user_id, agent=s.agent).facts) for s in scopes),
    }


@router.get("/users", response_model=UsersOut)
def list_users(memory: MemoryDep, principal: Caller) -> dict[str, Any]:
    """Every user with stored memory (the default user is ``null``), their agents and how
    many facts they hold. A user key sees only its own user."""
    users = memory.users() if principal.admin else [principal.user_id]
    return {"users": [_entry(memory, user_id) for user_id in users]}


@router.delete("/users/{user_id}", response_model=Erasure)
def forget_user(user: UserArg, memory: MemoryDep) -> dict[str, Any]:
    """Erase everything of the user: every agent's memory, its history and its queued
    updates (``Memory.forget_user``)."""
    return memory.forget_user(user).to_dict()
