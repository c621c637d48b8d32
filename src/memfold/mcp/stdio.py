"""``memfold mcp``: serve one user's memory over stdio to an MCP client.

The client (Claude Desktop, Cursor, a coding agent) starts the process and talks on its
stdin/stdout; logs go to stderr. When the client closes stdin or sends SIGTERM/SIGINT,
the queue drains (``shutdown_timeout_seconds``) before the process exits, so a
conversation handed over just before is still learnt.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import anyio

from memfold.mcp.binding import Binding
from memfold.mcp.server import build_server
from memfold.memory import Memory

__all__ = ["serve_stdio"]

logger = logging.getLogger("memfold.mcp")


def serve_stdio(memory: Memory, binding: Binding) -> bool:
    """Serve ``memory`` for ``binding`` on stdin/stdout until the client goes away, then
    close the memory (draining pending updates). True when everything pending was
    processed."""
    server = build_server(memory, binding=binding)
    logger.info("memfold mcp: serving %s on stdio (%s extractor)", binding, memory.extractor_name)
    try:
        with _stop_on_sigterm():
            anyio.run(server.run_stdio_async)
    except KeyboardInterrupt:
        logger.info("memfold mcp: stopping")
    finally:
        drained = memory.close()
    if not drained:
        logger.warning("memfold mcp: the update queue did not drain before shutdown")
    return drained


class _Stop(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop serving, then drain."""


@contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Stop

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
