"""The interpreter-exit drain: a ``Memory`` nobody closed is closed when Python exits.

A script that records an update and ends without ``close()`` would otherwise lose it (the
update waits ``debounce_seconds`` in the in-process queue). ``track`` registers one
``atexit`` hook for the process; at exit it closes every tracked ``Memory`` that is still
open, which drains its queue within ``shutdown_timeout_seconds`` and logs what ran and
what was left. The set holds weak references, so tracking never keeps a ``Memory`` alive.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from typing import Protocol

__all__ = ["report", "track", "untrack"]

logger = logging.getLogger("memfold")


class _Closable(Protocol):
    def _close_at_exit(self) -> None: ...


_open: weakref.WeakSet[_Closable] = weakref.WeakSet()
_lock = threading.Lock()


def track(memory: _Closable) -> None:
    """Close ``memory`` at interpreter exit unless it was closed before."""
    with _lock:
        _open.add(memory)


def untrack(memory: _Closable) -> None:
    with _lock:
        _open.discard(memory)


def report(
    *, pending: int, ran: int, failed: int, drained: bool, durable: bool, budget: float
) -> None:
    """Log what the exit drain of one ``Memory`` did (nothing when nothing was pending)."""
    if not (pending or ran or failed):
        return
    left = 0 if drained else max(pending - ran, 1)
    fate = ""
    if left:
        fate = (
            " (they stay in the durable queue for the next process)"
            if durable
            else " (lost; their turns are sent again on the thread's next record)"
        )
    logger.warning(
        "memfold: a Memory was still open at interpreter exit; within "
        "shutdown_timeout_seconds=%g it ran %d pending update(s) (%d failed attempt(s)) "
        "and left %d%s. Call close() or use `with Memory(...)` to drain when you choose",
        budget,
        ran,
        failed,
        left,
        fate,
    )


def _close_all() -> None:
    with _lock:
        pending = list(_open)
        _open.clear()
    for memory in pending:
        try:
            memory._close_at_exit()
        except Exception:  # exit goes on for the others; the reason is in the log
            logger.warning("memfold: could not drain a Memory at exit", exc_info=True)


# Registered once, at import: atexit runs it before logging shuts down (hooks run last
# registered first, and logging registered its own when it was imported, earlier).
atexit.register(_close_all)
