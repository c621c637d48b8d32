"""Feeding memory and reading it the way an agent does: record a conversation, search.

``POST …/conversations`` is the same ``record()`` as in Python, so an agent in any
language feeds memory over HTTP.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, status

from memfold.server.deps import MemoryDep, Scoped
from memfold.server.schemas import ConversationIn, RecordOut, SearchOut

__all__ = ["router"]

router = APIRouter(prefix="/users/{user_id}", tags=["agents"])


@router.post(
    "/conversations",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=RecordOut,
)
def record(scope: Scoped, memory: MemoryDep, body: ConversationIn) -> dict[str, Any]:
    """Queue a conversation for a background update, as ``Memory.record`` does (send the
    whole thread each time: only messages not seen before are extracted)."""
    queued = memory.record(body.messages, thread_id=body.thread_id, urgent=body.urgent, **scope.kw)
    return {"queued": queued}


@router.get("/search", response_model=SearchOut)
def search(
    scope: Scoped,
    memory: MemoryDep,
    q: Annotated[str, Query(min_length=1, max_length=10_000, description="What to look for.")],
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    category: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
) -> dict[str, Any]:
    """The scope's facts that match ``q``, best first (lexical, English and Chinese;
    hybrid with configured embeddings)."""
    hits = memory.search(q, limit=limit, category=category, **scope.kw)
    return {"hits": [hit.to_dict() for hit in hits]}
