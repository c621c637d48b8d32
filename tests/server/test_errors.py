"""Every error is ``{"error": {"code", "message"}}`` with the status that fits, and bodies
are size-limited before they are read."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from memfold.errors import ConflictError, StorageError
from memfold.model import Scope
from memfold.server import create_app

API = "/api/v1"


def _error(response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    return body["error"]["message"]


def test_unknown_endpoint_and_wrong_method_use_the_error_shape(admin):
    assert "GET /api/v1/nothing" in _error(admin.get(f"{API}/nothing"), 404, "not_found")
    _error(admin.put(f"{API}/users/alice/memory"), 405, "method_not_allowed")


def test_body_that_is_not_json_is_400(admin):
    json_type = {"content-type": "application/json"}
    response = admin.post(f"{API}/users/alice/facts", content=b"{not json", headers=json_type)
    assert "not valid JSON" in _error(response, 400, "bad_request")


def test_body_over_the_limit_is_413_before_it_is_read(admin, mem):
    big = b'{"content": "' + b"x" * (mem.config.server.max_body_bytes + 10) + b'"}'
    response = admin.post(
        f"{API}/users/alice/facts", content=big, headers={"content-type": "application/json"}
    )
    assert "max_body_bytes" in _error(response, 413, "payload_too_large")
    assert mem.get(user_id="alice").facts == ()


def test_a_chunked_body_over_the_limit_is_413(admin, mem):
    limit = mem.config.server.max_body_bytes

    def chunks():
        yield b'{"content": "'
        for _ in range(limit // 65536 + 2):
            yield b"x" * 65536
        yield b'"}'

    response = admin.post(
        f"{API}/users/alice/facts", content=chunks(), headers={"content-type": "application/json"}
    )
    _error(response, 413, "payload_too_large")
    assert mem.get(user_id="alice").facts == ()


def test_imports_have_their_own_larger_limit(tmp_path):
    from memfold import Memory, MemoryConfig

    config = MemoryConfig.build(
        home=tmp_path,
        server={"api_keys_env": None, "max_body_bytes": 2048, "max_import_bytes": 1_000_000},
    )
    with Memory(config, start_workers=False) as mem:
        for n in range(40):
            mem.add_fact(f"Fact number {n} about the user's long-running projects", user_id="a")
        document = mem.export(user_id="a")
        with TestClient(create_app(mem)) as client:
            imported = client.post(f"{API}/users/b/import", json=document)
            too_big = client.post(f"{API}/users/b/facts", json={"content": "y" * 3000})
    assert imported.status_code == 200
    assert imported.json()["facts"] == 40
    _error(too_big, 413, "payload_too_large")


def test_a_store_that_fails_is_503_with_retry_after(admin, mem, monkeypatch):
    def broken(*args, **kwargs):
        raise StorageError("cannot connect to PostgreSQL within 2s")

    monkeypatch.setattr(mem, "export", broken)
    response = admin.get(f"{API}/users/alice/memory")
    assert "retry" in _error(response, 503, "storage_unavailable")
    assert response.headers["retry-after"] == "1"


def test_a_lost_revision_race_is_409_with_a_retry_hint(admin, mem, monkeypatch):
    def conflict(*args, **kwargs):
        raise ConflictError(Scope("alice"), expected=3, actual=4)

    monkeypatch.setattr(mem, "add_fact", conflict)
    response = admin.post(f"{API}/users/alice/facts", json={"content": "Drinks tea"})
    assert "retry the request" in _error(response, 409, "revision_conflict")
    assert response.headers["retry-after"] == "1"


def test_an_unexpected_failure_is_500_without_details(mem, monkeypatch, admin_headers):
    def bug(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(mem, "export", bug)
    app = create_app(mem)
    with TestClient(app, raise_server_exceptions=False, headers=admin_headers) as client:
        response = client.get(f"{API}/users/alice/memory")
    message = _error(response, 500, "internal")
    assert "secret internal detail" not in message


@pytest.mark.parametrize("user_id", ["a%00b", "x" * 2000])
def test_bad_user_ids_are_422(admin, user_id):
    response = admin.get(f"{API}/users/{user_id}/memory")
    _error(response, 422, "invalid")


def test_an_app_that_shut_down_answers_503(tmp_path):
    from memfold import MemoryConfig

    app = create_app(config=MemoryConfig.build(home=tmp_path, server={"api_keys_env": None}))
    with TestClient(app) as client:
        assert client.get(f"{API}/users/a/memory").status_code == 200
    late = TestClient(app).get(f"{API}/users/a/memory")  # after the lifespan ended
    assert "shutting down" in _error(late, 503, "unavailable")


def test_a_document_the_store_refuses_is_422_not_a_retry(admin, mem, monkeypatch):
    class Refused(StorageError, ValueError):
        pass

    def refuse(*args, **kwargs):
        raise Refused("cannot store the memory of user 'alice': a value JSON cannot hold")

    monkeypatch.setattr(mem, "add_fact", refuse)
    response = admin.post(f"{API}/users/alice/facts", json={"content": "Drinks tea"})
    assert "JSON cannot hold" in _error(response, 422, "invalid")
    assert "retry-after" not in response.headers
