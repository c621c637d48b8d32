"""``memfold serve`` and ``memfold api-key`` from the command line."""

from __future__ import annotations

import json
import urllib.request

import pytest
import yaml

from memfold import Memory, MemoryConfig
from memfold.errors import ConfigError
from memfold.server.cli import check_bind
from memfold.server.keys import hash_key, parse_keys
from memfold.server.testing import ServeProcess


def test_serving_beyond_loopback_without_keys_is_refused(run, tmp_path, monkeypatch):
    monkeypatch.delenv("MEMFOLD_API_KEYS", raising=False)
    code, _, err = run("--home", str(tmp_path), "serve", "--host", "0.0.0.0")
    assert code == 2
    assert "refusing to serve on 0.0.0.0 without API keys" in err
    assert "memfold api-key --admin" in err


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_needs_no_keys(tmp_path, host):
    check_bind(host, MemoryConfig.build(home=tmp_path, server={"api_keys_env": None}), 1)


def test_keys_from_the_environment_allow_any_address(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMFOLD_API_KEYS", "admin:" + "k" * 32)
    check_bind("0.0.0.0", MemoryConfig.build(home=tmp_path), 1)


def test_several_workers_on_an_in_process_store_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="storage=memory"):
        check_bind("127.0.0.1", MemoryConfig.build(home=tmp_path, storage="memory"), 2)


def test_api_key_prints_a_key_its_hash_entry_and_its_env_line(run):
    code, out, _ = run("api-key", "--user", "alice", "--name", "alice's phone")
    assert code == 0
    key = out.split("key: ", 1)[1].split()[0]
    assert len(key) >= 40
    yaml_part = out.split("memfold.yaml (the hash, safe to commit):\n", 1)[1].split("\n\n")[0]
    server = MemoryConfig.build(**yaml.safe_load(yaml_part)).server
    assert server.api_keys[0].sha256 == hash_key(key)
    assert server.api_keys[0].user_id == "alice"
    env_line = out.strip().splitlines()[-1]
    assert parse_keys(env_line, "$X")[hash_key(key)].user_id == "alice"


def test_api_key_needs_admin_or_a_user(run):
    code, _, err = run("api-key")
    assert code == 2
    assert "--admin or --user" in err


def test_two_api_keys_differ(run):
    first = run("api-key", "--admin")[1].split()[1]
    second = run("api-key", "--admin")[1].split()[1]
    assert first != second


@pytest.mark.slow
def test_a_live_server_drains_a_recorded_conversation_on_sigterm(tmp_path):
    home = tmp_path / "home"
    config = tmp_path / "memfold.yaml"
    config.write_text(f"home: {home}\ndebounce_seconds: 600\nmax_wait_seconds: 600\n")
    body = {
        "thread_id": "t1",
        "messages": [
            {"role": "user", "content": "I live in Lisbon."},
            {"role": "assistant", "content": "Noted."},
        ],
    }
    with ServeProcess(config_file=config) as server:
        request = urllib.request.Request(
            f"{server.url}/api/v1/users/alice/conversations",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 202
            assert json.loads(answer.read()) == {"queued": True}
        code = server.stop()
    assert code in (0, -15)  # uvicorn re-raises SIGTERM after its graceful shutdown
    assert "Traceback" not in server.output()
    with Memory(home=home, start_workers=False) as mem:
        assert [f.content for f in mem.get(user_id="alice").facts] == ["Lives in Lisbon"]


def test_connections_are_served_with_nagle_off():
    """With several workers uvicorn's own listening socket leaves Nagle on, and every
    response then waited ~40 ms for the client's delayed ACK."""
    import asyncio
    import socket

    import uvicorn
    from uvicorn.server import ServerState

    from memfold.server._protocol import NoDelayH11Protocol

    class Transport:
        def __init__(self, sock):
            self.sock = sock

        def get_extra_info(self, name, default=None):
            return self.sock if name == "socket" else default

        def close(self):
            self.sock.close()

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # proto 0, as uvicorn binds
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    loop = asyncio.new_event_loop()
    try:
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        config = uvicorn.Config(app=lambda scope, receive, send: None)
        config.load()
        protocol = NoDelayH11Protocol(
            config=config, server_state=ServerState(), app_state={}, _loop=loop
        )
        protocol.connection_made(Transport(accepted))
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        protocol.connection_lost(None)
    finally:
        for sock in (client, accepted, listener):
            sock.close()
        loop.close()


@pytest.mark.slow
def test_two_workers_on_sqlite_lose_nothing(tmp_path):
    """Concurrent records and edits spread over two worker processes sharing a SQLite
    store and queue: every confirmed fact is stored and every thread is learned."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    home = tmp_path / "home"
    config = tmp_path / "memfold.yaml"
    config.write_text(
        f"home: {home}\nstorage: sqlite\nqueue: sqlite\ndebounce_seconds: 0.2\n"
        "max_wait_seconds: 1\nmax_facts: 1000\n"
    )

    def client(number: int, url: str) -> list[str]:
        confirmed = []
        with httpx.Client(base_url=url, timeout=60) as http:
            for turn in range(5):
                content = f"Owns bicycle number {number}-{turn}"
                if http.post("/api/v1/users/u/facts", json={"content": content}).status_code == 201:
                    confirmed.append(content)
            city = ["Lisbon", "Porto", "Osaka", "Lyon"][number]
            messages = [
                {"role": "user", "content": f"I live in {city}."},
                {"role": "assistant", "content": "Noted."},
            ]
            body = {"thread_id": f"t{number}", "messages": messages}
            assert http.post(f"/api/v1/users/city{number}/conversations", json=body).json()[
                "queued"
            ]
        return confirmed

    with ServeProcess(config_file=config, workers=2) as server:
        with ThreadPoolExecutor(4) as pool:
            confirmed = [c for found in pool.map(client, range(4), [server.url] * 4) for c in found]
        server.stop()
    assert len(confirmed) == 20
    with Memory(home=home, storage="sqlite", start_workers=False) as mem:
        stored = {f.content for f in mem.get(user_id="u").facts}
        assert set(confirmed) <= stored
        for number, city in enumerate(["Lisbon", "Porto", "Osaka", "Lyon"]):
            assert [f.content for f in mem.get(user_id=f"city{number}").facts] == [
                f"Lives in {city}"
            ]
