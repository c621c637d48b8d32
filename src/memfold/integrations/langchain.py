"""Memory for LangChain agents in one line: ``middleware=[MemoryMiddleware(mem)]``.

``MemoryMiddleware`` hooks a ``langchain.agents.create_agent`` agent (langchain >= 1.4.6):

- ``wrap_model_call`` / ``awrap_model_call`` append the ``<user_memory>`` block to the
  system message of each model call; the block never enters the thread's state.
- ``after_agent`` / ``aafter_agent`` record the run's messages for a background update.

``memory_tools(memory)`` gives the agent ``memory_search``, ``memory_add``,
``memory_update`` and ``memory_delete`` tools over the same memory ("tool mode").

Memory fails open: any error while resolving ids, loading or recording memory is logged
with the (thread, user, agent) key and the turn goes on without memory. Errors of the
model itself are not touched.

``MemorySummarizationMiddleware`` is LangChain's ``SummarizationMiddleware`` that also
records, urgently, the messages its summary replaces.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, TypeAlias

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ModelRequest,
        SummarizationMiddleware,
    )
    from langchain.agents.middleware.types import ModelCallResult, ModelResponse
    from langchain_core.messages import BaseMessage, RemoveMessage, SystemMessage
    from langchain_core.tools import BaseTool
    from langgraph.config import get_config
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.runtime import Runtime
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "memfold.integrations.langchain needs langchain>=1.4.6; "
        "install it with: pip install 'memfold[langchain]'"
    ) from exc

from memfold.context_report import ContextReport
from memfold.memory import Memory

__all__ = [
    "IdResolver",
    "InjectionMode",
    "MemoryMiddleware",
    "MemorySummarizationMiddleware",
    "dropped_messages",
    "latest_user_text",
    "memory_tools",
    "resolve_thread_id",
    "with_memory_block",
]

logger = logging.getLogger(__name__)

#: A fixed id, a function of the run's ``Runtime`` returning the id, or None to read
#: ``user_id`` / ``agent`` from ``runtime.context`` (a key of a mapping or an attribute).
IdResolver: TypeAlias = str | Callable[[Runtime[Any]], str | None] | None
InjectionMode: TypeAlias = Literal["per_call", "per_thread", "relevant"]

_INJECTION_MODES: Final = ("per_call", "per_thread", "relevant")
DEFAULT_MAX_FROZEN_BLOCKS: Final = 1024

_Key: TypeAlias = tuple[str | None, str | None, str | None]


def resolve_thread_id(runtime: Runtime[Any] | None) -> str | None:
    """The run's thread id: ``config["configurable"]["thread_id"]``, else the runtime's
    execution info; None when the run has neither (no checkpointer, no thread id)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a runnable context
        configurable = {}
    thread_id = configurable.get("thread_id")
    if thread_id is None:
        info = getattr(runtime, "execution_info", None)
        thread_id = getattr(info, "thread_id", None)
    return None if thread_id is None else str(thread_id)


def _resolve_id(resolver: IdResolver, runtime: Runtime[Any] | None, name: str) -> str | None:
    if isinstance(resolver, str):
        return resolver
    if resolver is not None:
        value: object = resolver(runtime)  # type: ignore[arg-type]
    else:
        context: object = getattr(runtime, "context", None)
        value = context.get(name) if isinstance(context, Mapping) else getattr(context, name, None)
    return None if value is None else str(value)


def _describe(key: _Key | None) -> str:
    """The key for a log line; None when the error came before the key was resolved."""
    if key is None:
        return "this run (thread, user and agent unresolved)"
    thread_id, user_id, agent = key
    user = "<default user>" if user_id is None else repr(user_id)
    where = f"thread {thread_id!r}, user {user}"
    return where if agent is None else f"{where}, agent {agent!r}"


def latest_user_text(messages: list[BaseMessage] | list[Any]) -> str | None:
    """The text of the last human message (its text blocks joined), or None."""
    for message in reversed(messages):
        if getattr(message, "type", None) == "human":
            text = message.text
            return text if isinstance(text, str) and text.strip() else None
    return None


def with_memory_block(system: SystemMessage | None, block: str) -> SystemMessage:
    """A copy of ``system`` with ``block`` appended (a new system message when None).

    Content given as a list of blocks gets the memory as one more text block, so blocks
    carrying provider options (e.g. cache control) are kept as they are.
    """
    if system is None:
        return SystemMessage(content=block)
    content = system.content
    if isinstance(content, str):
        new_content: str | list[str | dict[Any, Any]] = (
            f"{content}\n\n{block}" if content else block
        )
    else:
        new_content = [*content, {"type": "text", "text": block}]
    return system.model_copy(update={"content": new_content})


class _Identity:
    """Resolves the (thread, user, agent) key of a run; shared by both middlewares."""

    def __init__(self, user_id: IdResolver, agent: IdResolver) -> None:
        for name, value in (("user_id", user_id), ("agent", agent)):
            if value is not None and not isinstance(value, str) and not callable(value):
                raise TypeError(
                    f"{name}={value!r}: pass a string, a callable taking the LangChain "
                    f"Runtime, or None to read {name!r} from the runtime context"
                )
        self._user_id = user_id
        self._agent = agent
        self._warned_no_thread = False
        self._warned_no_user = False

    def key(self, runtime: Runtime[Any] | None) -> _Key:
        """Raises whatever a user-supplied resolver raises."""
        user_id = _resolve_id(self._user_id, runtime, "user_id")
        if user_id is None and self._user_id is None:
            self._note_context_without_user(runtime)
        return (resolve_thread_id(runtime), user_id, _resolve_id(self._agent, runtime, "agent"))

    def _note_context_without_user(self, runtime: Runtime[Any] | None) -> None:
        """A run that has a context but no ``user_id`` in it is probably a multi-user app
        that forgot to pass one: its memory goes to the shared default user. Say so once."""
        if self._warned_no_user or getattr(runtime, "context", None) is None:
            return
        self._warned_no_user = True
        logger.warning(
            "memfold: the run's context has no user_id, so memory is that of the default "
            "user; pass context={'user_id': ...} or MemoryMiddleware(..., user_id=...) "
            "(logged once)"
        )

    def note_missing_thread(self) -> None:
        if not self._warned_no_thread:
            self._warned_no_thread = True
            logger.warning(
                "memfold: this agent run has no thread id, so its messages are not "
                "recorded; run the agent with a checkpointer and "
                "config={'configurable': {'thread_id': ...}} (logged once)"
            )


class _FrozenBlocks:
    """A bounded LRU of memory blocks frozen at a thread's first model call, each with the
    erasure count of its user then: a block frozen before ``forget_user`` is never served."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._blocks: OrderedDict[_Key, tuple[str, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _Key, epoch: int = 0) -> str | None:
        with self._lock:
            found = self._blocks.get(key)
            if found is None:
                return None
            if found[1] != epoch:  # the user was erased since: forget this block too
                del self._blocks[key]
                return None
            self._blocks.move_to_end(key)
            return found[0]

    def freeze(self, key: _Key, block: str, epoch: int = 0) -> str:
        """Store ``block`` unless a concurrent first call froze one already; return the
        block that is frozen for ``key``."""
        with self._lock:
            frozen = self._blocks.setdefault(key, (block, epoch))
            self._blocks.move_to_end(key)
            while len(self._blocks) > self._capacity:
                self._blocks.popitem(last=False)
            return frozen[0]

    def __len__(self) -> int:
        with self._lock:
            return len(self._blocks)


class MemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Gives a ``create_agent`` agent a long-term memory of each user.

    ``user_id`` and ``agent`` are each a fixed string, a callable receiving the run's
    ``langgraph.runtime.Runtime`` (the same object in every hook), or None to read the key
    ``user_id`` / ``agent`` from ``runtime.context`` (a mapping key or an attribute;
    missing means the default user / the user's shared bucket). ``injection_mode``
    defaults to ``memory.config.injection_mode``: ``per_call`` renders fresh memory for
    every model call; ``per_thread`` freezes the block at the thread's first model call
    in this process (prompt caching keeps working), remembering at most
    ``max_frozen_blocks`` (thread, user, agent) blocks; ``relevant`` renders fresh memory
    for every call with the latest user message as ``query``, so the facts that matter for
    that message are injected first (``Memory.context(query=...)``).

    List it after any middleware that sets the system prompt (e.g. ``@dynamic_prompt``):
    ``wrap_model_call`` hooks run in list order, so one listed after this middleware that
    replaces the system message drops the memory block from the call.
    """

    def __init__(
        self,
        memory: Memory,
        *,
        user_id: IdResolver = None,
        agent: IdResolver = None,
        injection_mode: InjectionMode | None = None,
        max_frozen_blocks: int = DEFAULT_MAX_FROZEN_BLOCKS,
    ) -> None:
        """Raises:
        TypeError: ``user_id`` or ``agent`` is neither a string, a callable nor None.
        ValueError: an unknown ``injection_mode`` or ``max_frozen_blocks`` below 1.
        """
        super().__init__()
        mode = memory.config.injection_mode if injection_mode is None else injection_mode
        if mode not in _INJECTION_MODES:
            raise ValueError(
                f"injection_mode={mode!r}: must be one of {', '.join(_INJECTION_MODES)}"
            )
        if max_frozen_blocks < 1:
            raise ValueError(f"max_frozen_blocks={max_frozen_blocks}: must be at least 1")
        self.memory = memory
        self.injection_mode: InjectionMode = mode
        self._identity = _Identity(user_id, agent)
        self._frozen = _FrozenBlocks(max_frozen_blocks)

    # --- inject ------------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult[Any]:
        """Call the model with the memory block in its system message (this call only)."""
        key: _Key | None = None
        try:
            key = self._identity.key(request.runtime)
            epoch = self.memory.erasures(key[1])  # read first: an erasure meanwhile wins
            block = self._frozen_block(key, epoch)
            if block is None:
                query = self._query(request)
                block = self.memory.context(user_id=key[1], agent=key[2], query=query)
                block = self._freeze(key, block, epoch)
                if logger.isEnabledFor(logging.DEBUG):
                    report = self.memory.explain_context(user_id=key[1], agent=key[2], query=query)
                    self._log_report(key, report)
            with_memory = self._with_block(request, block)
        except Exception:
            self._log_load_failure(key)
            with_memory = request
        return handler(with_memory)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        """``wrap_model_call`` for async runs; the store is read off the event loop."""
        key: _Key | None = None
        try:
            key = self._identity.key(request.runtime)
            epoch = self.memory.erasures(key[1])  # read first: an erasure meanwhile wins
            block = self._frozen_block(key, epoch)
            if block is None:
                query = self._query(request)
                block = await self.memory.acontext(user_id=key[1], agent=key[2], query=query)
                block = self._freeze(key, block, epoch)
                if logger.isEnabledFor(logging.DEBUG):
                    report = await asyncio.to_thread(
                        self.memory.explain_context, user_id=key[1], agent=key[2], query=query
                    )
                    self._log_report(key, report)
            with_memory = self._with_block(request, block)
        except Exception:
            self._log_load_failure(key)
            with_memory = request
        return await handler(with_memory)

    def _query(self, request: ModelRequest[Any]) -> str | None:
        if self.injection_mode != "relevant":
            return None
        return latest_user_text(request.messages)

    def _frozen_block(self, key: _Key, epoch: int) -> str | None:
        if self.injection_mode != "per_thread" or key[0] is None:
            return None
        return self._frozen.get(key, epoch)

    def _freeze(self, key: _Key, block: str, epoch: int) -> str:
        if self.injection_mode != "per_thread" or key[0] is None:
            return block
        return self._frozen.freeze(key, block, epoch)

    @staticmethod
    def _with_block(request: ModelRequest[Any], block: str) -> ModelRequest[Any]:
        if not block:
            return request
        return request.override(system_message=with_memory_block(request.system_message, block))

    @staticmethod
    def _log_report(key: _Key, report: ContextReport) -> None:
        """At debug level, what the block of this call holds and leaves out, and why."""
        dropped = ", ".join(f"{item.id} ({item.reason})" for item in report.dropped) or "nothing"
        logger.debug(
            "memfold: memory block for %s: %d of %d tokens, %d item(s) included; dropped: %s",
            _describe(key),
            report.tokens,
            report.budget,
            len(report.included),
            dropped,
        )

    @staticmethod
    def _log_load_failure(key: _Key | None) -> None:
        logger.warning(
            "memfold: could not load memory for %s; this model call runs without it",
            _describe(key),
            exc_info=True,
        )

    # --- capture -----------------------------------------------------------------------

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        """Record the run's messages for a background update (returns at once)."""
        key: _Key | None = None
        try:
            key = self._identity.key(runtime)
            thread_id = key[0]
            if thread_id is None:
                self._identity.note_missing_thread()
                return
            self.memory.record(
                state["messages"],
                thread_id=thread_id,
                user_id=key[1],
                agent=key[2],
            )
        except Exception:
            _log_record_failure(key)

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        """``after_agent`` for async runs, through ``Memory.arecord``."""
        key: _Key | None = None
        try:
            key = self._identity.key(runtime)
            thread_id = key[0]
            if thread_id is None:
                self._identity.note_missing_thread()
                return
            await self.memory.arecord(
                state["messages"],
                thread_id=thread_id,
                user_id=key[1],
                agent=key[2],
            )
        except Exception:
            _log_record_failure(key)


def _log_record_failure(key: _Key | None) -> None:
    logger.warning(
        "memfold: could not record the conversation for %s; the turn goes on without it",
        _describe(key),
        exc_info=True,
    )


# --- tools ---------------------------------------------------------------------------


def memory_tools(
    memory: Memory, *, user_id: IdResolver = None, agent: IdResolver = None
) -> list[BaseTool]:
    """Tools that let the agent search and edit its memory of the user itself:
    ``memory_search``, ``memory_add``, ``memory_update`` and ``memory_delete``.

    ``user_id`` and ``agent`` resolve as in ``MemoryMiddleware`` (a callable receives the
    tool's ``ToolRuntime``, which has the run's ``context``). Every tool returns JSON; an
    error (an unknown id, a duplicate, a bad argument, a storage failure) is returned to
    the model as ``{"error": ..., "type": ...}`` and never raised into the run. Writes go
    through ``Memory.add_fact`` / ``edit_fact`` / ``delete_fact``: the same redaction,
    duplicate check and limits as any other edit.

    Raises:
        TypeError: ``user_id`` or ``agent`` is neither a string, a callable nor None.
    """
    from memfold.integrations._langchain_tools import build_memory_tools

    return build_memory_tools(memory, _Identity(user_id, agent))


# --- summarisation -------------------------------------------------------------------


def dropped_messages(before: list[Any], update: Mapping[str, Any] | None) -> list[Any]:
    """The messages of ``before`` that the state update ``update`` removes.

    ``RemoveMessage(REMOVE_ALL_MESSAGES)`` drops every message the update does not add
    back (by identity or id); ``RemoveMessage(id=...)`` drops that message.
    """
    if not update:
        return []
    written = update.get("messages") or []
    removed_ids = {m.id for m in written if isinstance(m, RemoveMessage)}
    if REMOVE_ALL_MESSAGES in removed_ids:
        kept_objects = {id(m) for m in written}
        kept_ids = {m.id for m in written if not isinstance(m, RemoveMessage) and m.id}
        return [m for m in before if id(m) not in kept_objects and m.id not in kept_ids]
    return [m for m in before if getattr(m, "id", None) in removed_ids]


class MemorySummarizationMiddleware(SummarizationMiddleware):
    """LangChain's ``SummarizationMiddleware`` that records, urgently, the messages its
    summary replaces, so memory learns from them before they leave the thread.

    Takes the ``memory``, ``user_id`` and ``agent`` of ``MemoryMiddleware`` and every
    ``SummarizationMiddleware`` argument unchanged; the summary is produced by the stock
    middleware. Why not ``SummarizationMiddleware(summarizer=...)``: that hook receives the
    messages *after* trimming to ``trim_tokens_to_summarize`` (so not all that is dropped)
    and no runtime (so no thread or user). This subclass calls the stock ``before_model``
    and, when its state update removes messages, records the thread as it stood before the
    update, before the update is applied: the dropped messages and the kept ones after
    them, so the thread's watermark (usually on a kept message) is found and the extractor
    gets exactly the turns it has not seen, each once. A failed summary raises as in the
    stock middleware and drops nothing, so nothing is recorded then. Recording errors are
    logged, never raised.
    """

    def __init__(
        self,
        memory: Memory,
        model: Any,
        *,
        user_id: IdResolver = None,
        agent: IdResolver = None,
        **summarization_options: Any,
    ) -> None:
        """Raises what ``SummarizationMiddleware`` raises, and ``TypeError`` for a
        ``user_id`` / ``agent`` that is neither a string, a callable nor None."""
        super().__init__(model, **summarization_options)
        self.memory = memory
        self._identity = _Identity(user_id, agent)

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Summarise as the stock middleware does; record what the summary replaces."""
        before = list(state["messages"])
        update = super().before_model(state, runtime)
        to_record = self._to_record(before, update, runtime)
        if to_record is not None:
            key, thread = to_record
            try:
                self.memory.record(
                    thread, thread_id=str(key[0]), user_id=key[1], agent=key[2], urgent=True
                )
            except Exception:
                _log_record_failure(key)
        return update

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """``before_model`` for async runs, through ``Memory.arecord``."""
        before = list(state["messages"])
        update = await super().abefore_model(state, runtime)
        to_record = self._to_record(before, update, runtime)
        if to_record is not None:
            key, thread = to_record
            try:
                await self.memory.arecord(
                    thread, thread_id=str(key[0]), user_id=key[1], agent=key[2], urgent=True
                )
            except Exception:
                _log_record_failure(key)
        return update

    def _to_record(
        self, before: list[Any], update: Mapping[str, Any] | None, runtime: Runtime[Any]
    ) -> tuple[_Key, list[Any]] | None:
        """The run's key and the messages to record urgently (None when none is dropped).

        The whole of ``before``, not only the dropped messages: a worker may take the
        urgent job at once, and a batch of dropped messages alone holds neither the
        watermark (so every dropped turn, seen or not, would be extracted again) nor the
        kept messages the next record of the summarised thread resumes from.
        """
        key: _Key | None = None
        try:
            if not dropped_messages(before, update):
                return None
            key = self._identity.key(runtime)
            if key[0] is None:
                self._identity.note_missing_thread()
                return None
            return key, before
        except Exception:
            _log_record_failure(key)
            return None
