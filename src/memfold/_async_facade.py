"""The facade's async twins: ``arecord``, ``aflush``, ``acontext``, ``asearch``.

A mixin of :class:`memfold.Memory`. Each runs its sync counterpart off the event loop
(``asyncio.to_thread``), except ``arecord`` with the in-process queue, which does no IO.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memfold.config import MemoryConfig
    from memfold.search import SearchHit

__all__ = ["AsyncFacade"]


class AsyncFacade:
    """Async versions of ``record``, ``flush``, ``context`` and ``search``."""

    config: MemoryConfig
    record: Callable[..., bool]
    flush: Callable[..., bool]
    context: Callable[..., str]
    search: Callable[..., list[SearchHit]]

    async def arecord(
        self,
        messages: Iterable[object],
        /,
        *,
        thread_id: str,
        user_id: str | None = None,
        agent: str | None = None,
        urgent: bool = False,
    ) -> bool:
        """``record`` for async callers. With the in-process queue it does no IO and runs
        inline; a durable queue writes to its database, so that happens in a thread."""
        if self.config.queue == "memory":
            return self.record(
                messages, thread_id=thread_id, user_id=user_id, agent=agent, urgent=urgent
            )
        return await asyncio.to_thread(
            functools.partial(
                self.record,
                messages,
                thread_id=thread_id,
                user_id=user_id,
                agent=agent,
                urgent=urgent,
            )
        )

    async def aflush(self, timeout: float | None = 30.0) -> bool:
        return await asyncio.to_thread(self.flush, timeout)

    async def acontext(
        self,
        *,
        user_id: str | None = None,
        agent: str | None = None,
        max_tokens: int | None = None,
        include_shared: bool | None = None,
        query: str | None = None,
    ) -> str:
        return await asyncio.to_thread(
            functools.partial(
                self.context, user_id=user_id, agent=agent, max_tokens=max_tokens,
                include_shared=include_shared, query=query,
            )
        )  # fmt: skip

    async def asearch(
        self,
        query: str,
        /,
        *,
        user_id: str | None = None,
        agent: str | None = None,
        limit: int = 10,
        category: str | None = None,
    ) -> list[SearchHit]:
        """``search`` for async callers (the store and any embeddings call run in a thread)."""
        return await asyncio.to_thread(
            functools.partial(
                self.search, query, user_id=user_id, agent=agent, limit=limit, category=category
            )
        )
