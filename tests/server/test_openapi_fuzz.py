"""Schemathesis against ``/api/v1/openapi.json``: generated input (valid and invalid, on
every operation) never makes the server answer 500, and answers match the spec."""

from __future__ import annotations

import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed")

from memfold import Memory, MemoryConfig  # noqa: E402
from memfold.server import create_app  # noqa: E402
from memfold.server.keys import hash_key  # noqa: E402

ADMIN_KEY = "fuzz-admin-key-0123456789"
USER_KEY = "fuzz-alice-key-0123456789"


def _app():
    server = {
        "api_keys_env": None,
        "api_keys": [
            {"sha256": hash_key(ADMIN_KEY), "admin": True},
            {"sha256": hash_key(USER_KEY), "user_id": "alice"},
        ],
    }
    home = tempfile.mkdtemp(prefix="memfold-fuzz-")
    config = MemoryConfig.build(home=home, server=server, max_facts=200)
    memory = Memory(config, start_workers=False)
    return create_app(memory), memory, home


# schemathesis reads the spec when the module is collected, so the app exists by then
APP, MEMORY, HOME = _app()
schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def _memory():
    MEMORY.add_fact("Drinks green tea every morning", user_id="alice")
    MEMORY.add_fact("Uses PostgreSQL at work", user_id="alice", agent="coder")
    yield
    MEMORY.close()
    shutil.rmtree(HOME, ignore_errors=True)


CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_schema_conformance,
]


@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_generated_requests_never_fail_on_the_server(case):
    case.call_and_validate(headers={"Authorization": f"Bearer {ADMIN_KEY}"}, checks=CHECKS)


@schema.parametrize()
@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_generated_requests_with_a_user_key_never_fail_on_the_server(case):
    case.call_and_validate(headers={"Authorization": f"Bearer {USER_KEY}"}, checks=CHECKS)
