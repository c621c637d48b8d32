"""What every route of one app shares: the ``Memory``, the authenticator, the config.

The app owns a ``Memory`` it built (closing it drains the queue on shutdown) and leaves
one it was given to its caller. The memory is opened on first use or at startup,
whichever comes first, so building an app (e.g. for its OpenAPI spec) touches no store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from memfold.config import MemoryConfig
from memfold.errors import MemfoldError
from memfold.memory import Memory
from memfold.server.auth import Authenticator

__all__ = ["Extension", "ServerState"]


class ServerState:
    """Shared by the routes of one app: ``app.state.memfold``."""

    def __init__(self, config: MemoryConfig, memory: Memory | None = None) -> None:
        self.config = config
        self.auth = Authenticator(config.server)
        self._memory = memory
        self._owns_memory = memory is None
        self._closed = False
        self._lock = threading.Lock()

    @property
    def memory(self) -> Memory:
        """The ``Memory`` the routes call (opened on first use).

        Raises:
            MemfoldError: the app has shut down.
        """
        with self._lock:
            if self._memory is None:
                if self._closed:
                    raise MemfoldError("the server is shutting down; retry on another replica")
                self._memory = Memory(self.config)
            return self._memory

    def open(self) -> Memory:
        """Open the memory at startup (again, after a previous shutdown)."""
        with self._lock:
            self._closed = False
        return self.memory

    def close(self) -> bool:
        """Close the memory if this app opened it (drains pending updates); True when
        everything pending was processed. A memory given to the app stays open."""
        if not self._owns_memory:
            return True
        with self._lock:
            memory, self._memory, self._closed = self._memory, None, True
        return True if memory is None else memory.close()


#: Extends an app at build time: ``extension(app, state)`` adds routes or mounts (e.g. the
#: MCP transport at ``/mcp``) and may return an async context manager that the app's
#: lifespan enters at startup and leaves at shutdown (before the memory is closed).
Extension = Callable[..., AbstractAsyncContextManager[None] | None]
