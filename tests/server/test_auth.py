"""API keys, the trusted proxy header, and isolation: a user key reaches its own user
only, on every endpoint the OpenAPI spec lists (a new endpoint is walked too)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memfold import MemoryConfig
from memfold.errors import ConfigError
from memfold.server import create_app
from memfold.server.auth import Authenticator
from memfold.server.keys import hash_key, parse_keys

API = "/api/v1"
ADMIN_KEY = "admin-key-0123456789abcdef"
ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdefgh"


# --- keys --------------------------------------------------------------------------------


def test_no_credentials_is_401_with_the_one_error_shape(app):
    with TestClient(app) as anonymous:
        response = anonymous.get(f"{API}/users/alice/memory")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"


def test_a_wrong_key_and_a_malformed_header_are_401(app):
    with TestClient(app) as client:
        wrong = client.get(f"{API}/me", headers={"Authorization": "Bearer not-a-key-at-all-xx"})
        basic = client.get(f"{API}/me", headers={"Authorization": "Basic abc"})
    assert wrong.status_code == 401
    assert "not known" in wrong.json()["error"]["message"]
    assert basic.status_code == 401
    assert "Bearer" in basic.json()["error"]["message"]


def test_me_tells_admin_and_bound_user_apart(admin, alice):
    assert admin.get(f"{API}/me").json()["admin"] is True
    me = alice.get(f"{API}/me").json()
    assert (me["admin"], me["user_id"]) == (False, "alice")


def test_a_user_key_cannot_read_config(alice):
    response = alice.get(f"{API}/config")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"


def test_a_user_key_works_on_its_own_user(alice, mem):
    created = alice.post(f"{API}/users/alice/facts", json={"content": "Drinks tea"})
    assert created.status_code == 201
    assert [f.content for f in mem.get(user_id="alice").facts] == ["Drinks tea"]
    assert alice.get(f"{API}/users/alice/search", params={"q": "tea"}).json()["hits"]


def test_keys_from_the_environment_and_a_file_are_hashed_and_bound(tmp_path):
    key_file = tmp_path / "keys"
    key_file.write_text("# ops\nuser:carol:carol-key-0123456789abcdef\n", encoding="utf-8")
    key_file.chmod(0o600)
    config = MemoryConfig.build(
        home=tmp_path, server={"api_keys_env": "TEST_KEYS", "api_keys_file": str(key_file)}
    )
    auth = Authenticator(config.server, env={"TEST_KEYS": f"admin:{ADMIN_KEY}, user:d:e:{BOB_KEY}"})
    assert auth.resolve({"authorization": f"Bearer {ADMIN_KEY}"}, None).admin
    assert auth.resolve({"authorization": f"Bearer {BOB_KEY}"}, None).user_id == "d:e"
    carol = auth.resolve({"authorization": "Bearer carol-key-0123456789abcdef"}, None)
    assert (carol.admin, carol.user_id) == (False, "carol")
    assert "carol-key" not in repr(auth.__dict__)


def test_a_short_or_malformed_key_entry_is_refused_without_echoing_it():
    with pytest.raises(ConfigError) as short:
        parse_keys("admin:tooshort", "$KEYS")
    assert "tooshort" not in str(short.value)
    assert "memfold api-key" in str(short.value)
    with pytest.raises(ConfigError) as bad:
        parse_keys("root:abcdefghijklmnopqrstuvwxyz", "$KEYS")
    assert "abcdefghijklmnopqrstuvwxyz" not in str(bad.value)
    assert "entry 1" in str(bad.value)


def test_a_key_in_clear_in_the_config_is_refused_without_echoing_it(tmp_path):
    with pytest.raises(ConfigError) as caught:
        MemoryConfig.build(home=tmp_path, server={"api_keys": [{"key": ADMIN_KEY, "admin": True}]})
    assert ADMIN_KEY not in str(caught.value)
    assert "sha256" in str(caught.value)


def test_a_key_entry_is_admin_or_bound_to_one_user(tmp_path):
    with pytest.raises(ConfigError, match="either admin"):
        MemoryConfig.build(home=tmp_path, server={"api_keys": [{"sha256": hash_key(ADMIN_KEY)}]})


# --- trusted proxy header ---------------------------------------------------------------


def _proxy_app(tmp_path: Any, **server: Any) -> Any:
    from memfold import Memory

    config = MemoryConfig.build(
        home=tmp_path, server={"api_keys_env": None, "trusted_user_header": "X-Forwarded-User",
                               **server},
    )  # fmt: skip
    return Memory(config, start_workers=False)


def test_the_proxy_header_binds_the_request_to_that_user(tmp_path):
    with _proxy_app(tmp_path) as mem:
        mem.add_fact("Likes jazz", user_id="bob")
        with TestClient(create_app(mem), client=("127.0.0.1", 40000)) as proxy:
            me = proxy.get(f"{API}/me", headers={"X-Forwarded-User": "alice"}).json()
            assert (me["admin"], me["user_id"], me["via"]) == (False, "alice", "header")
            own = proxy.post(
                f"{API}/users/alice/facts", headers={"X-Forwarded-User": "alice"},
                json={"content": "Drinks tea"},
            )  # fmt: skip
            assert own.status_code == 201
            other = proxy.get(f"{API}/users/bob/memory", headers={"X-Forwarded-User": "alice"})
            assert other.status_code == 404
            assert proxy.get(f"{API}/me").status_code == 401  # the proxy must always send it


def test_the_proxy_header_from_an_untrusted_address_is_refused(tmp_path):
    mem = _proxy_app(tmp_path)
    with mem, TestClient(create_app(mem), client=("203.0.113.9", 40000)) as outsider:
        response = outsider.get(f"{API}/me", headers={"X-Forwarded-User": "alice"})
    assert response.status_code == 401
    assert "trusted_proxies" in response.json()["error"]["message"]


def test_trusted_proxies_take_networks(tmp_path):
    mem = _proxy_app(tmp_path, trusted_proxies=["10.0.0.0/8"])
    with mem, TestClient(create_app(mem), client=("10.1.2.3", 40000)) as proxy:
        me = proxy.get(f"{API}/me", headers={"X-Forwarded-User": "alice"})
    assert me.json()["user_id"] == "alice"


def test_a_bad_trusted_proxy_is_a_config_error(tmp_path):
    config = MemoryConfig.build(home=tmp_path, server={"trusted_proxies": ["10.0.0.300"]})
    with pytest.raises(ConfigError, match="trusted_proxies"):
        Authenticator(config.server)


# --- isolation over every endpoint --------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def example_body(spec: dict[str, Any], schema: dict[str, Any], values: dict[str, str]) -> Any:
    """A small valid instance of a JSON schema from the spec (required fields only)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return example_body(spec, spec["components"]["schemas"][name], values)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return example_body(spec, options[0], values)
    kind = schema.get("type", "object")
    if kind == "object":
        required = schema.get("required", [])
        return {
            name: example_body(spec, sub, values)
            for name, sub in schema.get("properties", {}).items()
            if name in required
        }
    if kind == "array":
        return []
    if kind == "string":
        return "Drinks green tea"
    if kind in ("number", "integer"):
        return schema.get("minimum", 1)
    return False


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    ]


def _request(
    client: TestClient,
    spec: dict[str, Any],
    method: str,
    path: str,
    operation: dict[str, Any],
    values: dict[str, str],
) -> Any:
    url = _PLACEHOLDER.sub(lambda m: values[m.group(1)], path)
    params = {}
    for parameter in operation.get("parameters", []):
        if parameter["in"] == "query" and parameter.get("required"):
            params[parameter["name"]] = "tea"
    body = None
    content = operation.get("requestBody", {}).get("content", {})
    if "application/json" in content:
        body = example_body(spec, content["application/json"]["schema"], values)
    return client.request(method, url, params=params, json=body)


def _seed(mem: Any) -> dict[str, str]:
    mem.clear(user_id="bob")
    fact = mem.add_fact("Drinks tea every morning", user_id="bob")
    return {"user_id": "bob", "fact_id": fact.id, "section": "workContext"}


def test_a_user_key_cannot_reach_another_user_on_any_endpoint(app, alice, bob, mem):
    spec = alice.get(f"{API}/openapi.json").json()
    user_operations = [op for op in _operations(spec) if "{user_id}" in op[1]]
    assert len(user_operations) >= 14  # the walk covers the API, not an empty list
    for method, path, operation in user_operations:
        values = _seed(mem)
        before = mem.export(user_id="bob")
        pending = mem.status().pending
        refused = _request(alice, spec, method, path, operation, values)
        assert refused.status_code == 404, (method, path, refused.text)
        assert refused.json()["error"]["code"] == "not_found", (method, path)
        assert "Drinks tea" not in refused.text
        assert mem.export(user_id="bob") == before, (method, path)
        assert mem.status().pending == pending, (method, path)
        # the same request with bob's own key is not refused: the walk can tell
        allowed = _request(bob, spec, method, path, operation, values)
        assert allowed.status_code not in (401, 403, 404), (method, path, allowed.text)


def test_a_user_key_sees_nothing_of_other_users_outside_user_paths(alice, mem):
    mem.add_fact("Drinks tea every morning", user_id="bob")
    spec = alice.get(f"{API}/openapi.json").json()
    for method, path, _ in _operations(spec):
        if "{" in path or method != "GET":
            continue
        response = alice.get(path if path.startswith("/") else "/" + path)
        assert "bob" not in response.text, path
        assert "Drinks tea" not in response.text, path


def test_the_default_user_is_not_reachable_with_a_user_key(alice, mem):
    mem.add_fact("Likes jazz")
    assert alice.get(f"{API}/users/~/memory").status_code == 404


def test_a_raw_asgi_request_resolves_like_a_route(tmp_path):
    from memfold.server.auth import scope_principal

    config = MemoryConfig.build(
        home=tmp_path, server={"api_keys": [{"sha256": hash_key(ALICE_KEY), "user_id": "alice"}]}
    )
    auth = Authenticator(config.server, env={})
    scope = {
        "type": "http",
        "headers": [(b"authorization", f"Bearer {ALICE_KEY}".encode())],
        "client": ("127.0.0.1", 5000),
    }
    assert scope_principal(auth, scope).user_id == "alice"
    with pytest.raises(Exception, match="Bearer"):
        scope_principal(auth, {"type": "http", "headers": [], "client": None})


def test_no_key_can_be_bound_to_the_default_users_path(tmp_path):
    with pytest.raises(ConfigError, match="default user"):
        parse_keys("user:~:" + "k" * 30, "$KEYS")
    with pytest.raises(ConfigError, match="default user"):
        MemoryConfig.build(
            home=tmp_path, server={"api_keys": [{"sha256": hash_key(ADMIN_KEY), "user_id": "~"}]}
        )


def test_a_user_key_lists_only_its_own_user(alice, mem):
    mem.add_fact("Likes jazz", user_id="bob")
    mem.add_fact("Drinks tea", user_id="alice")
    assert alice.get(f"{API}/users").json()["users"] == [
        {"user_id": "alice", "agents": [], "facts": 1}
    ]


def test_a_user_key_may_erase_its_own_user_only(alice, mem):
    mem.add_fact("Likes jazz", user_id="bob")
    mem.add_fact("Drinks tea", user_id="alice")
    assert alice.delete(f"{API}/users/bob").status_code == 404
    assert len(mem.get(user_id="bob").facts) == 1
    assert alice.delete(f"{API}/users/alice").status_code == 200
    assert mem.get(user_id="alice").facts == ()


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_a_cross_site_form_post_through_the_proxy_changes_nothing(tmp_path, content_type):
    """A browser signed in at the proxy can be made to post a form cross-site; only JSON
    bodies are read, and a JSON content type cannot be sent cross-site without CORS."""
    mem = _proxy_app(tmp_path)
    with mem, TestClient(create_app(mem), client=("127.0.0.1", 40000)) as proxy:
        response = proxy.post(
            f"{API}/users/alice/facts",
            content=b'{"content": "Wants every memory deleted"}',
            headers={"X-Forwarded-User": "alice", "Content-Type": content_type},
        )
        assert response.status_code == 422
        assert "application/json" in response.json()["error"]["message"]
        assert mem.get(user_id="alice").facts == ()
