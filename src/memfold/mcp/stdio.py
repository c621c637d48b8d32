"""``serve_stdio``: one user's memory on stdin/stdout, for an MCP client to start.

The client talks on the process's stdin/stdout (logs go to stderr). It ends the server
by closing stdin, then SIGTERM, then SIGKILL a few seconds later. Closing stdin or the
first SIGTERM/SIGINT stops serving and drains the queue (``shutdown_timeout_seconds``);
a second signal exits at once. With a durable queue (the default of ``memfold mcp``)
whatever is still queued then is learnt by the next process on the same store.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import FrameType

import anyio

from memfold.mcp.binding import Binding
from memfold.mcp.server import build_server
from memfold.memory import Memory

__all__ = ["serve_stdio"]

logger = logging.getLogger("memfold.mcp")

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def serve_stdio(memory: Memory, binding: Binding) -> bool:
    """Serve ``memory`` for ``binding`` until the client goes away, then close the memory
    (draining pending updates). Returns True when everything pending was processed.

    Must run in the main thread (it handles SIGTERM and SIGINT). When a signal ends a
    session whose client still holds stdin open, the process exits after the drain:
    a thread blocked reading stdin cannot be stopped any other way.
    """
    server = build_server(memory, binding=binding)
    stop = threading.Event()
    signals = 0

    def serve() -> None:
        try:
            anyio.run(server.run_stdio_async)
        except Exception:
            logger.exception("memfold mcp: the stdio server failed")
        finally:
            stop.set()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal signals
        signals += 1
        if signals > 1:
            logger.warning("memfold mcp: second signal, exiting without finishing the drain")
            _exit(1)
        logger.info("memfold mcp: %s, stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in _STOP_SIGNALS}
    # the server runs beside the main thread, which stays free to take signals and drain
    thread = threading.Thread(target=serve, name="memfold-mcp-stdio", daemon=True)
    logger.info("memfold mcp: serving %s on stdio (%s extractor)", binding, memory.extractor_name)
    thread.start()
    try:
        while not stop.wait(0.5):
            pass
        drained = memory.close()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not drained:
        logger.warning("memfold mcp: the update queue did not drain before shutdown")
    if thread.is_alive():
        _exit(0 if drained else 1)
    return drained


def _exit(code: int) -> None:
    """Leave now, past the thread still blocked reading stdin."""
    sys.stderr.flush()
    os._exit(code)
