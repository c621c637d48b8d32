"""One scope's memory: read it, clear it, edit its facts, export and import it.

Each route translates its arguments to one ``Memory`` call; the rules (dedup, caps,
redaction, fencing) are the facade's.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Response, status

from memfold.importing import check_import
from memfold.model import DocumentError, fact_to_dict
from memfold.server.deps import MemoryDep, Scoped
from memfold.server.errors import ApiError, error_responses
from memfold.server.schemas import (
    MAX_ID_CHARS,
    FactIn,
    FactOut,
    FactPatch,
    SummaryIn,
    SummaryOut,
)

__all__ = ["router"]

router = APIRouter(prefix="/users/{user_id}", tags=["memory"])

_SECTIONS = (
    "workContext, personalContext, topOfMind, recentMonths, earlierContext or "
    "longTermBackground (or a short name such as `personal`)"
)
FactIdPath = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)]


@router.get("/memory")
def get_memory(scope: Scoped, memory: MemoryDep) -> dict[str, Any]:
    """The scope's whole document, as ``memfold export`` writes it."""
    return memory.export(**scope.kw)


@router.delete("/memory", status_code=status.HTTP_204_NO_CONTENT)
def clear_memory(scope: Scoped, memory: MemoryDep) -> Response:
    """Forget everything in the scope; updates already queued or running are discarded."""
    memory.clear(**scope.kw)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/facts",
    status_code=status.HTTP_201_CREATED,
    response_model=FactOut,
    responses=error_responses(409),
)
def add_fact(scope: Scoped, memory: MemoryDep, body: FactIn) -> dict[str, Any]:
    """Add a fact by hand (409 when the same content is stored, 422 when it is only a
    secret or invalid)."""
    options: dict[str, Any] = {}
    if body.category is not None:
        options["category"] = body.category
    if body.confidence is not None:
        options["confidence"] = body.confidence
    fact = memory.add_fact(body.content, **options, **scope.kw)
    return fact_to_dict(fact)


@router.patch("/facts/{fact_id}", response_model=FactOut, responses=error_responses(409))
def edit_fact(
    fact_id: FactIdPath, scope: Scoped, memory: MemoryDep, body: FactPatch
) -> dict[str, Any]:
    """Change a fact's content, category or confidence (404 when it does not exist)."""
    if body.content is None and body.category is None and body.confidence is None:
        raise ApiError(422, "invalid", "nothing to change: send content, category or confidence")
    fact = memory.edit_fact(
        fact_id,
        content=body.content,
        category=body.category,
        confidence=body.confidence,
        **scope.kw,
    )
    return fact_to_dict(fact)


@router.delete(
    "/facts/{fact_id}",
    status_code=status.HTTP_204_NO_CONTENT,
)
def delete_fact(fact_id: FactIdPath, scope: Scoped, memory: MemoryDep) -> Response:
    """Delete a fact (404 when it does not exist)."""
    memory.delete_fact(fact_id, **scope.kw)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.put("/summaries/{section}", response_model=SummaryOut)
def set_summary(
    section: Annotated[str, Path(min_length=1, max_length=64, description=_SECTIONS)],
    scope: Scoped,
    memory: MemoryDep,
    body: SummaryIn,
) -> dict[str, Any]:
    """Replace one summary section's text ("" empties it)."""
    summary = memory.set_summary(section, body.summary, **scope.kw)
    return {"section": section, "summary": summary.summary, "updatedAt": summary.updated_at}


@router.get("/export")
def export(scope: Scoped, memory: MemoryDep, response: Response) -> dict[str, Any]:
    """The scope's document as a file to save (``memfold import`` reads it back)."""
    response.headers["Content-Disposition"] = 'attachment; filename="memfold-export.json"'
    return memory.export(**scope.kw)


@router.post("/import", responses=error_responses(409))
def import_document(
    *,
    scope: Scoped,
    memory: MemoryDep,
    document: Annotated[dict[str, Any], Body(description="A memfold export or a v1 memory.json")],
    replace: Annotated[
        bool, Query(description="Replace a scope that already holds memory.")
    ] = False,
    merge: Annotated[
        bool, Query(description="Add the document's facts to what is stored instead.")
    ] = False,
    lenient: Annotated[
        bool, Query(description="Drop or repair bad items (listed in `repairs`).")
    ] = False,
) -> dict[str, Any]:
    """Load a document into the scope, with the safety of ``memfold import``: a document
    memfold does not know, or (not lenient) one with a bad item, is refused (422) before
    anything changes, and a scope that holds memory is replaced only with
    ``replace=true`` (409 otherwise) or added to with ``merge=true``."""
    if replace and merge:
        raise ApiError(422, "invalid", "send replace=true or merge=true, not both")
    try:
        checked = check_import(document, lenient=lenient)
    except DocumentError as exc:
        raise ApiError(422, "invalid", f"cannot import: {exc}") from exc
    current = memory.get(**scope.kw)
    if not (replace or merge) and (current.facts or not current.is_empty):
        raise ApiError(
            409,
            "scope_not_empty",
            f"this scope already holds {len(current.facts)} fact(s) and its summaries; send "
            "replace=true to replace them with the document, or merge=true to add its facts",
        )
    stored = memory.import_document(document, merge=merge, lenient=lenient, **scope.kw)
    return {
        "format": checked.format,
        "facts": len(stored.facts),
        "added": len(stored.facts) - (len(current.facts) if merge else 0),
        "revision": stored.revision,
        "repairs": list(checked.repairs),
    }
