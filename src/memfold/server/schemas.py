"""Request and response bodies of the REST API (they make the OpenAPI spec).

Field names follow the export document (camelCase inside facts and summaries) so a fact
looks the same in ``GET …/memory``, ``POST …/facts`` and a search hit. Requests refuse
unknown fields: a misspelt ``thread_id`` is an error, not an empty conversation.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ConversationIn",
    "FactIn",
    "FactOut",
    "FactPatch",
    "RecordOut",
]

#: Longest user, agent, thread or fact id the API accepts (the facade's own bound).
MAX_ID_CHARS = 1024
_MAX_TEXT = 100_000


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FactIn(_Request):
    content: str = Field(min_length=1, max_length=_MAX_TEXT)
    category: str | None = Field(default=None, min_length=1, max_length=64)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)


class FactPatch(_Request):
    content: str | None = Field(default=None, min_length=1, max_length=_MAX_TEXT)
    category: str | None = Field(default=None, min_length=1, max_length=64)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)


class SummaryIn(_Request):
    summary: str = Field(max_length=_MAX_TEXT)


class ConversationIn(_Request):
    thread_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    #: OpenAI-style chat messages: ``{"role": "user", "content": "..."}``.
    messages: list[dict[str, Any]] = Field(max_length=10_000)
    #: Process now (e.g. before the client drops old messages), not after the debounce.
    urgent: bool = False


class FactOut(BaseModel):
    """One fact, as in the export document."""

    model_config = ConfigDict(extra="allow")

    id: str
    content: str
    category: str
    confidence: float
    createdAt: str
    updatedAt: str | None = None
    source: str | None = None
    sourceError: str | None = None


class SummaryOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    section: str
    summary: str
    updatedAt: str


class RecordOut(BaseModel):
    """``queued`` is false when nothing was queued: no user + assistant exchange was left
    after filtering, the queue refused it under backpressure, or the server is stopping."""

    queued: bool


class Hit(BaseModel):
    fact: FactOut
    score: float


class SearchOut(BaseModel):
    hits: list[Hit]


class Health(BaseModel):
    status: str
    version: str


class Me(BaseModel):
    """The caller: ``admin``, or bound to ``user_id``; ``via`` is how (key name, header, or
    ``open`` on a loopback server without keys)."""

    admin: bool
    user_id: str | None
    via: str


class UserEntry(BaseModel):
    user_id: str | None
    agents: list[str]
    facts: int


class UsersOut(BaseModel):
    users: list[UserEntry]


class Erasure(BaseModel):
    """What ``DELETE /users/{user_id}`` erased."""

    userId: str | None
    scopes: int
    queuedUpdates: int


class ContextOut(BaseModel):
    """The block ``context()`` would inject, its exact token count and budget, and every
    fact and summary section included (in block order) or dropped, with the reason."""

    model_config = ConfigDict(extra="allow")

    text: str
    tokens: int
    budget: int
    included: list[dict[str, Any]]
    dropped: list[dict[str, Any]]


class HistoryOut(BaseModel):
    """Change events, newest first."""

    events: list[dict[str, Any]]
