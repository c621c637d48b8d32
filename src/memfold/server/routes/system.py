"""``/healthz``, ``/status`` and ``/config``: is the server up, how is its queue doing,
how is it configured (secrets masked)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from memfold import __version__
from memfold.server.auth import Principal
from memfold.server.deps import Caller, MemoryDep, admin_only
from memfold.server.errors import error_responses
from memfold.server.schemas import Health, Me

__all__ = ["router"]

router = APIRouter(tags=["server"])


@router.get("/healthz", response_model=Health)
def healthz() -> dict[str, str]:
    """Liveness, without credentials (for load balancers): the process answers."""
    return {"status": "ok", "version": __version__}


@router.get("/me", response_model=Me)
def me(principal: Caller) -> dict[str, Any]:
    """Who the credentials of this request belong to: an admin, or one user."""
    return {"admin": principal.admin, "user_id": principal.user_id, "via": principal.via}


@router.get("/status")
def status(memory: MemoryDep, principal: Caller) -> dict[str, Any]:
    """Queue counters of this replica and the LLM tokens its updates spent."""
    return {"extractor": memory.extractor_name, "queue": asdict(memory.status())}


@router.get("/config", responses=error_responses(403))
def config(
    memory: MemoryDep, principal: Annotated[Principal, Depends(admin_only)]
) -> dict[str, Any]:
    """The configuration, passwords and keys masked (admin keys only)."""
    shown = memory.config.masked()
    server = dict(shown.get("server", {}))
    # security: list who each key is for, never the key or its hash
    server["api_keys"] = [
        {"name": key.get("name"), "admin": key.get("admin"), "user_id": key.get("user_id")}
        for key in server.get("api_keys", [])
    ]
    shown["server"] = server
    return shown
