"""Feeding memory and reading it the way an agent and a person do: record a conversation,
search, preview the injection block, the history, and why a fact is there.

``POST …/conversations`` is the same ``record()`` as in Python, so an agent in any
language feeds memory over HTTP.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, status

from memfold.server.deps import MemoryDep, Scoped
from memfold.server.schemas import (
    MAX_ID_CHARS,
    ContextOut,
    ConversationIn,
    HistoryOut,
    RecordOut,
    SearchOut,
)

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


@router.get("/context", response_model=ContextOut)
def context(
    scope: Scoped,
    memory: MemoryDep,
    max_tokens: Annotated[int | None, Query(ge=1, le=200_000)] = None,
    query: Annotated[
        str | None, Query(max_length=10_000, description="The user's latest message.")
    ] = None,
) -> dict[str, Any]:
    """Exactly what ``context()`` would inject with this budget (and query), its token
    count, and what was left out and why."""
    report = memory.explain_context(max_tokens=max_tokens, query=query or None, **scope.kw)
    return report.to_dict()


@router.get("/history", response_model=HistoryOut)
def history(
    scope: Scoped,
    memory: MemoryDep,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    fact_id: Annotated[str | None, Query(min_length=1, max_length=MAX_ID_CHARS)] = None,
) -> dict[str, Any]:
    """The scope's change events, newest first (only one fact's with ``fact_id``)."""
    events = memory.history(limit=limit, fact_id=fact_id, **scope.kw)
    return {"events": [event.to_dict() for event in events]}


@router.get("/facts/{fact_id}/why")
def why(
    fact_id: Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)],
    scope: Scoped,
    memory: MemoryDep,
) -> dict[str, Any]:
    """Where a fact came from (thread, the user's words, extractor, time) and what
    happened to it since; also for a fact that is gone (404 when nothing knows it)."""
    return memory.explain(fact_id, **scope.kw).to_dict()
