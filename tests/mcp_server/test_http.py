"""The streamable-HTTP transport on its own web app: every request is authenticated and
bound to one scope, a user's key reaches nothing of another user, and an endpoint that
skipped memfold's authentication serves nobody."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_helpers import (
    error,
    http_client,
    http_session,
    initialize,
    ok,
    run,
    running,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from memfold import Memory
from memfold.mcp import Binding, McpRefusal, bind, build_server, http_app
from memfold.mcp.http import LOOPBACK_ONLY, mount_mcp

ALICE_KEY = "alice-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"
KEYS = {ALICE_KEY: (False, "alice"), ADMIN_KEY: (True, None)}


def resolve(request: Request) -> Binding:
    """A key table standing in for the REST API's keys."""
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme != "Bearer" or key not in KEYS:
        raise McpRefusal("send 'Authorization: Bearer <api key>'")
    admin, user = KEYS[key]
    return bind(admin=admin, user_id=user, query=request.query_params)


@pytest.fixture
def app(memory: Memory) -> Starlette:
    return http_app(build_server(memory), resolve)


# --- bind: which scope a credential reaches ------------------------------------------


def test_an_admin_names_the_user_and_agent_in_the_url() -> None:
    assert bind(admin=True, user_id=None, query={}) == Binding(None, None, admin=True)
    assert bind(admin=True, user_id=None, query={"user": "~"}) == Binding(None, None, admin=True)
    assert bind(admin=True, user_id=None, query={"user": "bob", "agent": "desk"}) == Binding(
        "bob", "desk", admin=True
    )


def test_a_user_key_is_bound_to_its_user() -> None:
    assert bind(admin=False, user_id="alice", query={}) == Binding("alice")
    assert bind(admin=False, user_id="alice", query={"user": "alice", "agent": "a"}) == Binding(
        "alice", "a"
    )
    with pytest.raises(McpRefusal, match="bound to user 'alice'") as refused:
        bind(admin=False, user_id="alice", query={"user": "bob"})
    assert refused.value.status == 403
    with pytest.raises(McpRefusal) as nobody:
        bind(admin=False, user_id=None, query={})
    assert nobody.value.status == 403


@pytest.mark.parametrize("query", [{"agent": ""}, {"user": " "}, {"agent": "x" * 1025}])
def test_an_empty_or_oversized_id_in_the_url_is_refused(query: dict[str, str]) -> None:
    with pytest.raises(McpRefusal, match="non-empty id") as refused:
        bind(admin=True, user_id=None, query=query)
    assert refused.value.status == 400


# --- over HTTP ----------------------------------------------------------------------


def test_a_user_key_works_on_its_own_memory_only(app: Starlette, memory: Memory) -> None:
    secret = memory.add_fact("Bob's diagnosis is private", user_id="bob")

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with running(app), http_session(app, ALICE_KEY) as client:
            seen["remember"] = ok(await client.call_tool("remember", {"content": "Prefers tea"}))
            seen["recall"] = ok(await client.call_tool("recall", {"query": "diagnosis"}))
            seen["list"] = ok(await client.call_tool("list_facts", {}))
            seen["context"] = await client.call_tool("get_context", {})
            seen["edit"] = error(
                await client.call_tool("update_fact", {"fact_id": secret.id, "content": "x"})
            )
            seen["forget"] = error(await client.call_tool("forget", {"fact_id": secret.id}))
            with pytest.raises(MCPError) as refused:
                await client.read_resource("memory://bob")
            seen["resource"] = str(refused.value)
            seen["own"] = (await client.read_resource("memory://alice")).contents[0].text
        return seen

    seen = run(scenario)
    assert [f.content for f in memory.get(user_id="alice").facts] == ["Prefers tea"]
    assert seen["recall"]["hits"] == []
    assert [f["content"] for f in seen["list"]["facts"]] == ["Prefers tea"]
    assert "diagnosis" not in str(seen["context"].content)
    assert secret.id in seen["edit"]
    assert secret.id in seen["forget"]
    assert "memory://bob" in seen["resource"]
    assert "diagnosis" not in seen["resource"]
    assert "Prefers tea" in seen["own"]
    assert memory.get(user_id="bob").fact(secret.id) is not None  # untouched


def test_a_user_key_asking_for_another_user_is_refused_before_any_tool(
    app: Starlette, memory: Memory
) -> None:
    answer = initialize(app, ALICE_KEY, "?user=bob")
    assert answer.status_code == 403
    assert "bound to user 'alice'" in answer.json()["error"]["message"]


@pytest.mark.parametrize("key", [None, "wrong-key-0123456789abcdef"])
def test_a_request_without_a_valid_key_gets_401(app: Starlette, key: str | None) -> None:
    answer = initialize(app, key)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")
    assert answer.json()["error"]["message"] == "send 'Authorization: Bearer <api key>'"


def test_an_admin_key_works_on_the_user_and_agent_of_its_url(
    app: Starlette, memory: Memory
) -> None:
    async def scenario() -> None:
        async with running(app), http_session(app, ADMIN_KEY, "?user=bob&agent=desk") as client:
            ok(await client.call_tool("remember", {"content": "Uses a standing desk"}))
            document = (await client.read_resource("memory://carol")).contents[0].text
            assert '"facts": []' in document  # an admin may read any user

    run(scenario)
    assert [f.content for f in memory.get(user_id="bob", agent="desk").facts] == [
        "Uses a standing desk"
    ]


def test_the_endpoint_answers_503_until_the_app_has_started(app: Starlette) -> None:
    assert initialize(app, ALICE_KEY, started=False).status_code == 503


def test_the_app_may_start_again_after_a_shutdown(app: Starlette, memory: Memory) -> None:
    async def scenario(content: str) -> None:
        async with running(app), http_session(app, ALICE_KEY) as client:
            ok(await client.call_tool("remember", {"content": content}))

    run(lambda: scenario("First start"))
    run(lambda: scenario("Second start"))
    assert [f.content for f in memory.get(user_id="alice").facts] == ["First start", "Second start"]


def test_loopback_only_refuses_a_foreign_host_name(memory: Memory) -> None:
    app = http_app(build_server(memory), resolve, transport_security=LOOPBACK_ONLY)

    assert initialize(app, ALICE_KEY, host="evil.example").status_code == 421  # DNS rebinding
    assert initialize(app, ALICE_KEY, host="127.0.0.1:8000").status_code == 200


def test_an_endpoint_without_memfolds_authentication_serves_nobody(memory: Memory) -> None:
    server = build_server(memory, binding=Binding("alice"))  # the stdio binding is not used
    bare = server.streamable_http_app(stateless_http=True, json_response=True, host="testserver")

    async def scenario() -> str:
        async with running(bare), http_session(bare, None) as client:
            return error(await client.call_tool("remember", {"content": "Prefers tea"}))

    assert "not behind memfold's authentication" in run(scenario)
    assert memory.get(user_id="alice").facts == ()


def test_mount_mcp_adds_the_endpoint_beside_an_apps_own_routes(memory: Memory) -> None:
    app = Starlette(routes=[Route("/health", lambda request: PlainTextResponse("fine"))])
    endpoint = mount_mcp(app, build_server(memory), resolve)

    async def scenario() -> str:
        async with endpoint:
            async with endpoint:  # entered twice (two clients of one app): one manager
                pass
            async with http_session(app, ALICE_KEY) as client:  # still running
                ok(await client.call_tool("remember", {"content": "Prefers tea"}))
            async with http_client(app, None) as http:
                return (await http.get("/health")).text

    assert run(scenario) == "fine"
    assert [f.content for f in memory.get(user_id="alice").facts] == ["Prefers tea"]
