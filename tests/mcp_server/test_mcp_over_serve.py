"""``memfold serve`` offers the MCP endpoint at ``/mcp`` behind the REST API's own keys:
a user key binds the session to its user and reaches nothing of another user, an admin
key names the user in the URL, a request without a valid key gets 401."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_helpers import (
    BERLIN,
    INIT,
    MCP_HEADERS,
    error,
    http_client,
    http_session,
    initialize,
    ok,
    readme_entries,
    run,
    running,
    text,
)

from memfold import Memory, MemoryConfig
from memfold.errors import ConfigError

try:
    from fastapi import FastAPI
except ImportError:  # pragma: no cover - the server extra is in the dev install
    if os.environ.get("CI"):
        raise  # CI must run these
    pytest.skip("the server extra is not installed", allow_module_level=True)

from memfold.mcp.serve import mcp_extension, serve_extensions
from memfold.server import create_app
from memfold.server.keys import hash_key
from memfold.server.testing import ServeProcess

ADMIN_KEY = "admin-key-0123456789abcdef"
ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdefgh"
KEYS: dict[str, Any] = {
    "api_keys_env": None,
    "api_keys": [
        {"sha256": hash_key(ADMIN_KEY), "admin": True, "name": "ops"},
        {"sha256": hash_key(ALICE_KEY), "user_id": "alice"},
        {"sha256": hash_key(BOB_KEY), "user_id": "bob"},
    ],
}


def _memory(tmp_path: Path, **overrides: Any) -> Memory:
    return Memory(MemoryConfig.build(home=tmp_path / "home", **overrides), start_workers=False)


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[Memory]:
    with _memory(tmp_path, server=KEYS) as memory:
        yield memory


def _app(memory: Memory) -> FastAPI:
    return create_app(memory)  # the app memfold serve runs: /mcp by default


def test_a_user_key_over_mcp_reaches_its_own_user_only(keyed: Memory) -> None:
    secret = keyed.add_fact("Has a private diagnosis", user_id="bob")
    app = _app(keyed)

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with running(app), http_session(app, ALICE_KEY) as client:
            seen["tools"] = {tool.name for tool in (await client.list_tools()).tools}
            ok(await client.call_tool("remember", {"content": "Prefers green tea"}))
            seen["recall"] = ok(await client.call_tool("recall", {"query": "diagnosis"}))
            seen["list"] = ok(await client.call_tool("list_facts", {}))
            seen["context"] = text(await client.call_tool("get_context", {}))
            seen["edit"] = error(
                await client.call_tool("update_fact", {"fact_id": secret.id, "content": "x"})
            )
            seen["forget"] = error(await client.call_tool("forget", {"fact_id": secret.id}))
            seen["history"] = ok(await client.call_tool("history", {"fact_id": secret.id}))
            with pytest.raises(MCPError) as refused:
                await client.read_resource("memory://bob")
            seen["resource"] = str(refused.value)
        return seen

    seen = run(scenario)
    assert {"remember", "recall", "get_context", "record_conversation"} <= seen["tools"]
    assert [f.content for f in keyed.get(user_id="alice").facts] == ["Prefers green tea"]
    assert seen["recall"]["hits"] == []
    assert [f["content"] for f in seen["list"]["facts"]] == ["Prefers green tea"]
    assert "diagnosis" not in seen["context"]
    assert secret.id in seen["edit"]
    assert secret.id in seen["forget"]
    assert seen["history"]["events"] == []  # bob's history is not alice's
    assert "memory://bob" in seen["resource"]
    assert "diagnosis" not in seen["resource"]
    assert keyed.get(user_id="bob").fact(secret.id).content == "Has a private diagnosis"


def test_a_user_key_naming_another_user_in_the_url_gets_403(keyed: Memory) -> None:
    answer = initialize(_app(keyed), ALICE_KEY, "?user=bob")
    assert answer.status_code == 403
    assert "bound to user 'alice'" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "send 'Authorization: Bearer <api key>'"),
        ({"Authorization": "Bearer wrong-key-0123456789abcdef"}, "not known to the server"),
        ({"Authorization": "Basic YWxpY2U6cHc="}, "must be 'Bearer <api key>'"),
    ],
)
def test_a_request_without_a_valid_key_gets_401_and_no_tool_runs(
    keyed: Memory, headers: dict[str, str], message: str
) -> None:
    app = _app(keyed)
    call = {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "remember", "arguments": {"content": "Intruder was here"}},
    }  # fmt: skip

    async def scenario() -> list[httpx2.Response]:
        async with running(app), http_client(app, None) as http:
            return [
                await http.post("/mcp", json=body, headers={**MCP_HEADERS, **headers})
                for body in (INIT, call)
            ]

    for answer in run(scenario):
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer")
        assert message in answer.json()["error"]["message"]
    assert keyed.get().facts == ()


def test_an_admin_key_works_on_the_user_and_agent_named_in_the_url(keyed: Memory) -> None:
    app = _app(keyed)

    async def scenario() -> str:
        async with running(app), http_session(app, ADMIN_KEY, "?user=bob&agent=desk") as client:
            ok(await client.call_tool("remember", {"content": "Uses a standing desk"}))
            queued = ok(
                await client.call_tool(
                    "record_conversation", {"thread_id": "t1", "messages": BERLIN}
                )
            )
            assert queued["queued"] is True
            return (await client.read_resource("memory://alice")).contents[0].text

    alice_document = run(scenario)
    keyed.flush()
    bob = keyed.get(user_id="bob", agent="desk")
    assert "Uses a standing desk" in [f.content for f in bob.facts]
    assert any("Berlin" in f.content for f in bob.facts)  # learnt through the same queue
    assert json.loads(alice_document)["facts"] == []  # an admin reads anyone
    assert keyed.get(user_id="alice").facts == ()


def test_the_rest_api_and_mcp_share_one_memory_and_one_key(keyed: Memory) -> None:
    app = _app(keyed)

    async def scenario() -> tuple[httpx2.Response, dict[str, Any]]:
        async with running(app):
            async with http_session(app, BOB_KEY) as client:
                ok(await client.call_tool("remember", {"content": "Rides a cargo bike"}))
            async with http_client(app, BOB_KEY) as http:
                facts = await http.get("/api/v1/users/bob/memory")
            async with http_session(app, BOB_KEY) as client:
                listed = ok(await client.call_tool("list_facts", {}))
        return facts, listed

    facts, listed = run(scenario)
    assert facts.status_code == 200, facts.text
    assert "Rides a cargo bike" in facts.text
    assert [f["content"] for f in listed["facts"]] == ["Rides a cargo bike"]


def test_a_trusted_proxys_user_header_binds_the_session_to_that_user(tmp_path: Path) -> None:
    proxy = {"api_keys_env": None, "trusted_user_header": "X-Forwarded-User"}
    with _memory(tmp_path, server=proxy) as memory:
        app = _app(memory)

        async def scenario() -> dict[str, Any]:
            async with running(app):
                http = http_client(app, None)
                http.headers["X-Forwarded-User"] = "carol"  # ASGI client: 127.0.0.1
                async with Client(
                    streamable_http_client("http://testserver/mcp", http_client=http)
                ) as client:
                    return ok(await client.call_tool("remember", {"content": "Bakes bread"}))

        added = run(scenario)
        status = initialize(app, None, "?user=dave", headers={"X-Forwarded-User": "carol"})
        assert added["fact"]["content"] == "Bakes bread"
        assert [f.content for f in memory.get(user_id="carol").facts] == ["Bakes bread"]
        assert status.status_code == 403  # the header's user may not name another one


def test_a_server_without_keys_answers_loopback_names_only(tmp_path: Path) -> None:
    with _memory(tmp_path, server={"api_keys_env": None}) as memory:
        app = _app(memory)
        # open: the caller is admin, but a DNS-rebinding page's host name is refused
        assert initialize(app, None, host="127.0.0.1:8765").status_code == 200
        assert initialize(app, None, host="evil.example").status_code == 421


def test_a_web_page_cannot_call_a_server_without_keys(tmp_path: Path) -> None:
    """A page on another site posting to 127.0.0.1 (a form, or fetch without CORS)."""
    call = json.dumps({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "remember", "arguments": {"content": "Planted by a web page"}},
    })  # fmt: skip
    with _memory(tmp_path, server={"api_keys_env": None}) as memory:
        app = _app(memory)

        async def post(headers: dict[str, str]) -> int:
            async with running(app), http_client(app, None, "127.0.0.1:8765") as http:
                answer = await http.post("/mcp", content=call, headers=headers)
                return answer.status_code

        page = {"Origin": "https://evil.example", **MCP_HEADERS}
        assert run(lambda: post({**page, "Content-Type": "application/json"})) == 403
        assert run(lambda: post({**MCP_HEADERS, "Content-Type": "text/plain"})) in (400, 415)
        assert memory.get().facts == ()


def _init_status(app: FastAPI, key: str) -> int:
    return initialize(app, key).status_code


def test_mcp_http_false_or_no_extensions_leave_the_endpoint_out(tmp_path: Path) -> None:
    with _memory(tmp_path, server=KEYS, mcp={"http": False}) as memory:
        assert serve_extensions(memory.config) == ()
        assert _init_status(create_app(memory), ADMIN_KEY) == 404
        # an app of one's own may still mount it by hand
        assert _init_status(create_app(memory, extensions=[mcp_extension]), ADMIN_KEY) == 200
    with _memory(tmp_path, server=KEYS) as memory:
        assert _init_status(create_app(memory, extensions=()), ADMIN_KEY) == 404
        assert _init_status(create_app(memory), ADMIN_KEY) == 200


def test_without_the_sdk_serve_warns_or_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # import fails
    default = MemoryConfig.build(home=tmp_path)
    with caplog.at_level(logging.WARNING, logger="memfold.mcp"):
        assert serve_extensions(default) == ()
    assert "no MCP endpoint at /mcp" in caplog.text
    assert "pip install 'memfold[mcp]'" in caplog.text

    asked = MemoryConfig.build(home=tmp_path, mcp={"http": True})
    with pytest.raises(ConfigError) as refused:
        serve_extensions(asked)
    assert refused.value.key == "mcp.http"
    assert "pip install 'memfold[mcp]'" in str(refused.value)


@pytest.fixture
def cli(run: Any) -> Any:
    """The root conftest's in-process CLI runner (``run`` here is the async helper)."""
    return run


def test_memfold_serve_asked_for_mcp_without_the_sdk_stops_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # import fails
    monkeypatch.setenv("MEMFOLD_MCP__HTTP", "true")
    code, _, err = cli("--home", str(tmp_path), "serve", "--port", "1")
    assert code == 2
    assert "mcp.http is true" in err
    assert "pip install 'memfold[mcp]'" in err


def test_serve_extensions_mounts_mcp_by_default(tmp_path: Path) -> None:
    assert serve_extensions(MemoryConfig.build(home=tmp_path)) == (mcp_extension,)


@pytest.mark.slow
def test_memfold_serve_answers_the_readmes_http_entry_with_its_keys(tmp_path: Path) -> None:
    (entry,) = [e for e in readme_entries() if "url" in e]
    url = urlsplit(entry["url"])  # https://memory.example.com/mcp?agent=cursor
    agent = parse_qs(url.query)["agent"][0]
    keys = f"user:alice:{ALICE_KEY},user:bob:{BOB_KEY}"
    home = tmp_path / "home"
    with ServeProcess(home=home, env={"MEMFOLD_API_KEYS": keys}) as server:

        async def scenario(key: str, content: str) -> list[str]:
            headers = {
                name: value.replace("mf_your_user_key", key)
                for name, value in entry["headers"].items()
            }
            endpoint = f"{server.url}{url.path}?{url.query}"
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(endpoint, http_client=http)) as client,
            ):
                ok(await client.call_tool("remember", {"content": content}))
                listed = ok(await client.call_tool("list_facts", {}))
            return [fact["content"] for fact in listed["facts"]]

        assert run(lambda: scenario(ALICE_KEY, "Lives near the sea")) == ["Lives near the sea"]
        assert run(lambda: scenario(BOB_KEY, "Lives in the mountains")) == [
            "Lives in the mountains"
        ]
        refused = httpx2.post(f"{server.url}/mcp", json=INIT, headers=MCP_HEADERS)
        assert refused.status_code == 401
        assert f"{server.url}/ and /mcp" in server.output()  # the banner says where it is
    with Memory(home=home, start_workers=False) as memory:  # stopped: read what it stored
        alice = memory.get(user_id="alice", agent=agent)
        assert [f.content for f in alice.facts] == ["Lives near the sea"]
        assert memory.get(user_id="bob", agent=agent).facts[0].content == "Lives in the mountains"
