"""``build_server``: memfold's memory as MCP tools and resources, on any transport.

Every tool turns its arguments into one ``Memory`` call on the session's scope and the
facade's errors into tool errors the model can read; redaction, dedup, caps, history and
fences are the facade's, exactly as for the Python API, the CLI and the REST API.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.resources import FunctionResource, ResourceSecurity
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from memfold import __version__
from memfold._facts import normalise_category
from memfold.errors import FactNotFoundError, MemfoldError
from memfold.mcp.binding import BINDING_SCOPE_KEY, DEFAULT_USER, Binding, memory_uri
from memfold.mcp.messages import ChatMessage
from memfold.memory import Memory
from memfold.model import fact_to_dict

__all__ = ["INSTRUCTIONS", "TOOL_NAMES", "build_server"]

#: The tools every memfold MCP server offers (the names are the contract).
TOOL_NAMES = (
    "remember",
    "recall",
    "get_context",
    "list_facts",
    "update_fact",
    "forget",
    "history",
    "record_conversation",
)

INSTRUCTIONS = (
    "Long-term memory of the user you are talking to. Call get_context at the start of a "
    "conversation and put what it returns in mind; recall searches the memory for a topic. "
    "When the user tells you something worth keeping (a preference, a correction, a fact "
    "about them or their work), call remember; when they correct or retract something, "
    "update_fact or forget it (list_facts gives the ids; history tells what changed and "
    "why). record_conversation hands a finished exchange to memfold, which learns from it "
    "in the background."
)

MemoryProvider = Callable[[], Memory]

_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_ADD = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
_CHANGE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

Content = Annotated[str, Field(description="The fact, in one short sentence about the user.")]
Category = Annotated[
    str | None,
    Field(
        description="preference, knowledge, context, behavior, goal, correction, or a label "
        "of your own (default context)."
    ),
]
Confidence = Annotated[float | None, Field(description="How sure, from 0 to 1.")]
FactId = Annotated[
    str, Field(min_length=1, description="The fact's id, e.g. fact_1a2b3c4d (see list_facts).")
]


class _ScopeArgs(TypedDict):
    user_id: str | None
    agent: str | None


class _Server(MCPServer[Any]):
    """``MCPServer`` whose argument errors read as one line per field."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"Error executing tool {name}: {_explain(cause)}") from cause
            raise


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        field = ".".join(str(part) for part in err["loc"]) or "arguments"
        parts.append(f"{field}: {err['msg']}")
    return "; ".join(parts)


@contextmanager
def _tool_errors() -> Iterator[None]:
    """The facade's refusals (bad input, unknown fact, duplicate, storage down) become
    tool errors with the facade's own message; anything else is a crash the SDK hides."""
    try:
        yield
    except FactNotFoundError as exc:  # its hint names the CLI; a model has list_facts
        raise ToolError(
            f"no fact {exc.fact_id!r} in {exc.scope}; list_facts gives the ids of its facts"
        ) from exc
    except (MemfoldError, ValueError, TypeError) as exc:
        raise ToolError(str(exc)) from exc


def _session(ctx: Context[Any, Any], fixed: Binding | None) -> Binding:
    """The binding of the request behind ``ctx``: the one the HTTP transport resolved
    from its credentials, else the server's fixed one (stdio, in-process)."""
    request = ctx.request_context.request
    if request is not None:
        found = getattr(request, "scope", {}).get(BINDING_SCOPE_KEY)
        if isinstance(found, Binding):
            return found
        # fail closed: an HTTP request that did not pass memfold's authentication
        raise ToolError(
            "this MCP endpoint is not behind memfold's authentication; "
            "serve it with memfold.mcp.http_app or `memfold serve`"
        )
    if fixed is None:
        raise ToolError("no user is bound to this MCP session; start it with --user")
    return fixed


def build_server(
    memory: Memory | MemoryProvider,
    *,
    binding: Binding | None = None,
    name: str = "memfold",
) -> MCPServer[Any]:
    """An MCP server over ``memory`` (or a callable returning the ``Memory`` to use, so a
    web app can reopen its memory).

    ``binding`` is the scope of a session that has no HTTP request behind it (stdio, an
    in-process client); over HTTP each request carries its own (see ``http_app``).
    """
    get_memory: MemoryProvider = (lambda: memory) if isinstance(memory, Memory) else memory
    server = _Server(
        name,
        version=__version__,
        instructions=INSTRUCTIONS,
        # the SDK configures root logging when nothing has: keep Python's default level
        log_level="WARNING",
        # ids are not file paths: the stores encode them safely, the facade validates them
        resource_security=ResourceSecurity(exempt_params=frozenset({"user_id", "agent"})),
    )

    def scope(ctx: Context[Any, Any]) -> _ScopeArgs:
        found = _session(ctx, binding)
        return {"user_id": found.user_id, "agent": found.agent}

    @server.tool(annotations=_ADD, structured_output=True)
    def remember(
        content: Content,
        ctx: Context[Any, Any],
        category: Category = None,
        confidence: Confidence = None,
    ) -> dict[str, Any]:
        """Remember one fact about the user (category default context, confidence 0.9). It
        is a manual fact: memfold's own updates remove it only when the user corrects it.
        Refused when the same fact is already stored."""
        options: dict[str, Any] = {}
        if category is not None:
            options["category"] = category
        if confidence is not None:
            options["confidence"] = confidence
        with _tool_errors():
            fact = get_memory().add_fact(content, **options, **scope(ctx))
        return {"fact": fact_to_dict(fact)}

    @server.tool(annotations=_READ, structured_output=True)
    def recall(
        query: Annotated[str, Field(description="What to look for, in any language.")],
        ctx: Context[Any, Any],
        limit: Annotated[int | None, Field(description="At most this many (default 10).")] = None,
    ) -> dict[str, Any]:
        """Search the user's memory: the facts that best match the query, best first."""
        options: dict[str, Any] = {} if limit is None else {"limit": limit}
        with _tool_errors():
            hits = get_memory().search(query, **options, **scope(ctx))
        return {"hits": [hit.to_dict() for hit in hits]}

    @server.tool(annotations=_READ)
    def get_context(
        ctx: Context[Any, Any],
        max_tokens: Annotated[
            int | None, Field(description="Token budget of the block (default: configured).")
        ] = None,
        query: Annotated[
            str | None, Field(description="The user's latest message: relevant facts first.")
        ] = None,
    ) -> str:
        """The memory block to keep in mind for this user (what memfold injects into a system
        prompt), within the token budget; empty when nothing is known yet."""
        with _tool_errors():
            return get_memory().context(max_tokens=max_tokens, query=query, **scope(ctx))

    @server.tool(annotations=_READ, structured_output=True)
    def list_facts(ctx: Context[Any, Any], category: Category = None) -> dict[str, Any]:
        """Every fact remembered about the user (or those of one category), with their ids."""
        if category is not None and not category.strip():
            raise ToolError("category is empty: pass a category such as 'preference', or omit it")
        with _tool_errors():
            facts: list[dict[str, Any]] = get_memory().export(**scope(ctx))["facts"]
        if category is not None:
            wanted = normalise_category(category)
            facts = [fact for fact in facts if fact["category"] == wanted]
        return {"facts": facts}

    @server.tool(annotations=_CHANGE, structured_output=True)
    def update_fact(
        fact_id: FactId,
        ctx: Context[Any, Any],
        content: Annotated[str | None, Field(description="The corrected fact.")] = None,
        category: Category = None,
        confidence: Confidence = None,
    ) -> dict[str, Any]:
        """Correct a fact's content, category or confidence (give at least one)."""
        if content is None and category is None and confidence is None:
            raise ToolError("nothing to change: pass content, category or confidence")
        with _tool_errors():
            fact = get_memory().edit_fact(
                fact_id, content=content, category=category, confidence=confidence, **scope(ctx)
            )
        return {"fact": fact_to_dict(fact)}

    @server.tool(annotations=_CHANGE, structured_output=True)
    def forget(fact_id: FactId, ctx: Context[Any, Any]) -> dict[str, Any]:
        """Forget one fact for good: it is no longer recalled nor put in the context."""
        with _tool_errors():
            get_memory().delete_fact(fact_id, **scope(ctx))
        return {"forgotten": fact_id}

    @server.tool(annotations=_READ, structured_output=True)
    def history(
        ctx: Context[Any, Any],
        limit: Annotated[int | None, Field(description="At most this many (default 100).")] = None,
        fact_id: Annotated[
            str | None, Field(description="Only this fact's events (also once it is gone).")
        ] = None,
    ) -> dict[str, Any]:
        """What changed in the user's memory, newest first: facts added, edited, superseded,
        removed or evicted, summaries rewritten, memory cleared or imported, with when, by
        whom (extraction, manual, import, system) and why."""
        options: dict[str, Any] = {} if limit is None else {"limit": limit}
        with _tool_errors():
            events = get_memory().history(fact_id=fact_id, **options, **scope(ctx))
        return {"events": [event.to_dict() for event in events]}

    @server.tool(annotations=_ADD, structured_output=True)
    def record_conversation(
        thread_id: Annotated[
            str,
            Field(min_length=1, description="The conversation's id; the same for its later turns."),
        ],
        messages: Annotated[
            list[ChatMessage],
            Field(description="The conversation so far, oldest first (user and assistant)."),
        ],
        ctx: Context[Any, Any],
    ) -> dict[str, Any]:
        """Hand a conversation to memfold, which learns from it in the background (only what
        it has not seen yet in this thread). Returns at once."""
        with _tool_errors():
            queued = get_memory().record(
                [message.as_dict() for message in messages], thread_id=thread_id, **scope(ctx)
            )
        note = (
            "queued: memory updates in the background"
            if queued
            else "nothing queued: no user and assistant exchange to learn from, "
            "or the update queue is full (see the server's log)"
        )
        return {"queued": queued, "thread_id": thread_id, "note": note}

    _add_resources(server, get_memory, binding)
    return server


def _add_resources(
    server: MCPServer[Any], get_memory: MemoryProvider, fixed: Binding | None
) -> None:
    def document(session: Binding, user: str, agent: str | None) -> str:
        user_id = None if user == DEFAULT_USER else user
        if not session.may_read(user_id):
            raise ResourceError(
                f"{memory_uri(user_id, agent)}: this session may read only "
                f"{memory_uri(session.user_id)} and its agents"
            )
        try:
            data = get_memory().export(user_id=user_id, agent=agent)
        except (MemfoldError, ValueError, TypeError) as exc:
            raise ResourceError(str(exc)) from exc
        return json.dumps(data, ensure_ascii=False, indent=2)

    @server.resource("memory://{user_id}", name="user_memory", mime_type="application/json")
    def user_memory(user_id: str, ctx: Context[Any, Any]) -> str:
        """The user's shared memory as an export document (memfold JSON; `~` is the
        default user)."""
        return document(_resource_session(ctx, fixed), user_id, None)

    @server.resource(
        "memory://{user_id}/{agent}", name="agent_memory", mime_type="application/json"
    )
    def agent_memory(user_id: str, agent: str, ctx: Context[Any, Any]) -> str:
        """One agent's memory of the user as an export document (memfold JSON)."""
        return document(_resource_session(ctx, fixed), user_id, agent)

    if fixed is not None:  # a session bound at start lists its own memory
        own_user = DEFAULT_USER if fixed.user_id is None else fixed.user_id
        server.add_resource(
            FunctionResource(
                uri=memory_uri(fixed.user_id, fixed.agent),
                name="memory",
                title="This session's memory",
                description="The memory this session works on, as an export document.",
                mime_type="application/json",
                fn=lambda: document(fixed, own_user, fixed.agent),
            )
        )


def _resource_session(ctx: Context[Any, Any], fixed: Binding | None) -> Binding:
    try:
        return _session(ctx, fixed)
    except ToolError as exc:
        raise ResourceError(str(exc)) from exc
