"""The four memory tools of ``memfold.integrations.langchain.memory_tools``.

Each tool is a thin face over one ``Memory`` method: it resolves the user and agent from
the tool call's runtime, calls the method, and turns the result, or any error, into JSON
for the model. No business rule lives here.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import ValidationError

from memfold.errors import DuplicateFactError, FactNotFoundError, MemfoldError
from memfold.memory import Memory
from memfold.model import Fact

if TYPE_CHECKING:
    from memfold.integrations.langchain import _Identity

__all__ = ["MAX_TOOL_RESULTS", "build_memory_tools"]

logger = logging.getLogger("memfold.integrations.langchain")

#: Most results one ``memory_search`` call returns (a larger ``limit`` is lowered to it).
MAX_TOOL_RESULTS = 50


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _fact(fact: Fact) -> dict[str, Any]:
    return {
        "id": fact.id,
        "content": fact.content,
        "category": fact.category,
        "confidence": fact.confidence,
    }


def _error(exc: BaseException) -> str:
    """The JSON the model gets instead of an exception."""
    body: dict[str, Any] = {"error": str(exc), "type": type(exc).__name__}
    if isinstance(exc, DuplicateFactError):
        body["existing_id"] = exc.existing_id
    elif isinstance(exc, FactNotFoundError):
        body["fact_id"] = exc.fact_id
    return _json(body)


def _validation_error(exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors()
    )
    return _json({"error": f"invalid arguments: {problems}", "type": "ValidationError"})


class _Tools:
    def __init__(self, memory: Memory, identity: _Identity) -> None:
        self.memory = memory
        self.identity = identity

    def _call(
        self, name: str, runtime: ToolRuntime[Any, Any], action: Callable[[Any, Any], object]
    ) -> str:
        try:
            # a ToolRuntime carries the same context as the Runtime the middleware sees
            _, user_id, agent = self.identity.key(runtime)  # type: ignore[arg-type]
            return _json(action(user_id, agent))
        except (MemfoldError, ValueError, TypeError, KeyError) as exc:
            # a bad id or argument from the model, a duplicate, a refused secret: its to fix
            logger.info("memfold: tool %s refused: %s", name, exc)
            return _error(exc)
        except Exception as exc:
            logger.warning("memfold: tool %s failed", name, exc_info=True)
            return _error(exc)

    def search(
        self,
        query: str,
        runtime: ToolRuntime[Any, Any],
        limit: int = 5,
        category: str | None = None,
    ) -> str:
        def action(user_id: Any, agent: Any) -> object:
            hits = self.memory.search(
                query,
                user_id=user_id,
                agent=agent,
                limit=max(1, min(limit, MAX_TOOL_RESULTS)),
                category=category or None,
            )
            return {"results": [{**_fact(h.fact), "score": round(h.score, 4)} for h in hits]}

        return self._call("memory_search", runtime, action)

    def add(
        self,
        content: str,
        runtime: ToolRuntime[Any, Any],
        category: str = "context",
        confidence: float = 0.9,
    ) -> str:
        def action(user_id: Any, agent: Any) -> object:
            fact = self.memory.add_fact(
                content, category=category, confidence=confidence, user_id=user_id, agent=agent
            )
            return {"added": _fact(fact)}

        return self._call("memory_add", runtime, action)

    def update(
        self,
        fact_id: str,
        runtime: ToolRuntime[Any, Any],
        content: str | None = None,
        category: str | None = None,
        confidence: float | None = None,
    ) -> str:
        def action(user_id: Any, agent: Any) -> object:
            if content is None and category is None and confidence is None:
                raise ValueError("nothing to change: pass content, category or confidence")
            fact = self.memory.edit_fact(
                fact_id,
                content=content,
                category=category,
                confidence=confidence,
                user_id=user_id,
                agent=agent,
            )
            return {"updated": _fact(fact)}

        return self._call("memory_update", runtime, action)

    def delete(self, fact_id: str, runtime: ToolRuntime[Any, Any]) -> str:
        def action(user_id: Any, agent: Any) -> object:
            self.memory.delete_fact(fact_id, user_id=user_id, agent=agent)
            return {"deleted": fact_id}

        return self._call("memory_delete", runtime, action)


def build_memory_tools(memory: Memory, identity: _Identity) -> list[BaseTool]:
    tools = _Tools(memory, identity)
    categories = ", ".join(memory.config.categories)
    specs: list[tuple[Callable[..., str], str, str]] = [
        (
            tools.search,
            "memory_search",
            "Search your long-term memory of this user for facts relevant to `query` "
            "(words or a question, any language). Returns JSON "
            '{"results": [{"id", "content", "category", "confidence", "score"}]}, best '
            f"first, at most `limit` (up to {MAX_TOOL_RESULTS}); `category` keeps one of: "
            f"{categories}.",
        ),
        (
            tools.add,
            "memory_add",
            "Remember a new fact about the user: one short, self-contained statement "
            "(e.g. 'Is allergic to peanuts'). `category` is one of: "
            f"{categories}; `confidence` 0..1. Returns JSON "
            '{"added": {...}}, or {"error": ...} (a duplicate names the existing_id).',
        ),
        (
            tools.update,
            "memory_update",
            "Change a remembered fact by its id (from memory_search): new `content`, "
            '`category` or `confidence`. Returns JSON {"updated": {...}} or {"error": ...}.',
        ),
        (
            tools.delete,
            "memory_delete",
            "Forget a remembered fact by its id (from memory_search), e.g. when the user "
            'asks you to or it is no longer true. Returns JSON {"deleted": id} or '
            '{"error": ...}.',
        ),
    ]
    return [
        StructuredTool.from_function(
            func,
            name=name,
            description=description,
            handle_validation_error=_validation_error,
        )
        for func, name, description in specs
    ]
