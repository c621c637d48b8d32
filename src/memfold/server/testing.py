"""``ServeProcess``: a real ``memfold serve`` in a subprocess, for tests and benchmarks.

It picks a free port, waits until ``/api/v1/healthz`` answers, and stops the server
with SIGTERM (a graceful shutdown that drains the queue) when the block ends.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Self

__all__ = ["ServeProcess", "free_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class ServeProcess:
    """``with ServeProcess(home=...) as server: server.url`` → ``http://127.0.0.1:PORT``.

    ``config_file`` and ``home`` are passed as ``memfold --config/--home``; ``env`` is
    added to this process's environment (e.g. ``MEMFOLD_API_KEYS``).

    Raises (on entering):
        RuntimeError: the server exited or did not answer within ``startup_timeout``;
            the message ends with what it printed.
    """

    def __init__(
        self,
        *,
        home: str | os.PathLike[str] | None = None,
        config_file: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        workers: int = 1,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 90.0,
        log_level: str = "warning",
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.url = f"http://{host}:{self.port}"
        self._args = [sys.executable, "-m", "memfold.cli"]
        if config_file is not None:
            self._args += ["--config", str(config_file)]
        if home is not None:
            self._args += ["--home", str(home)]
        self._args += ["serve", "--host", host, "--port", str(self.port)]
        self._args += ["--workers", str(workers), "--log-level", log_level]
        self._env = {**os.environ, **(env or {})}
        self._timeout = startup_timeout
        self._log: IO[bytes] | None = None
        self._printed = ""
        self.process: subprocess.Popen[bytes] | None = None

    def output(self) -> str:
        """What the server printed so far (all of it, once stopped)."""
        if self._log is None:
            return self._printed
        self._log.flush()
        return Path(self._log.name).read_text(encoding="utf-8", errors="replace")

    def __enter__(self) -> Self:
        self._log = tempfile.NamedTemporaryFile(prefix="memfold-serve-", suffix=".log")
        self.process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
            self._args, stdout=self._log, stderr=subprocess.STDOUT, env=self._env
        )
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._fail(f"memfold serve exited with status {self.process.returncode}")
            if self._healthy():
                return self
            time.sleep(0.2)
        self._fail(f"memfold serve did not answer within {self._timeout:.0f}s")
        raise AssertionError("unreachable")  # pragma: no cover

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/healthz", timeout=2) as answer:  # noqa: S310 (our own http URL)
                return bool(answer.status == 200)
        except OSError:
            return False

    def _fail(self, reason: str) -> None:
        output = self.output()
        self.stop()
        raise RuntimeError(f"{reason}; it printed:\n{output[-4000:]}")

    def stop(self, timeout: float = 60.0) -> int | None:
        """Stop the server gracefully (SIGTERM, then SIGKILL after ``timeout``)."""
        process, self.process = self.process, None
        code = None
        if process is not None:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                code = process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
        if self._log is not None:
            self._printed = self.output()
            self._log.close()
            self._log = None
        return code

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
