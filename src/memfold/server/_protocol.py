"""uvicorn's HTTP/1.1 protocol with Nagle's algorithm off on every connection.

With ``--workers`` above one, uvicorn binds the listening socket itself without naming
the TCP protocol, so asyncio does not set ``TCP_NODELAY`` on accepted connections; a
response written in two sends (head, then body) then waits for the client's delayed ACK,
about 40 ms a request. Setting it here makes one worker and many behave alike.
"""

from __future__ import annotations

import contextlib
import socket
from asyncio import BaseTransport

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["NoDelayH11Protocol"]


class NoDelayH11Protocol(H11Protocol):
    def connection_made(self, transport: BaseTransport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)  # type: ignore[arg-type]
