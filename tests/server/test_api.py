"""The REST API through HTTP: each endpoint does what the same ``Memory`` call does."""

from __future__ import annotations

import json

API = "/api/v1"


def test_healthz_answers_without_credentials(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as anonymous:
        response = anonymous.get(f"{API}/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_add_fact_returns_201_and_the_stored_fact(admin, mem):
    response = admin.post(
        f"{API}/users/alice/facts",
        json={"content": "Prefers answers in Python", "category": "preference", "confidence": 0.8},
    )
    assert response.status_code == 201
    fact = response.json()
    assert fact["content"] == "Prefers answers in Python"
    assert fact["category"] == "preference"
    assert fact["confidence"] == 0.8
    assert fact["source"] == "manual"
    stored = mem.get(user_id="alice").fact(fact["id"])
    assert stored is not None
    assert stored.content == "Prefers answers in Python"


def test_add_fact_defaults_follow_the_python_api(admin, mem):
    fact = admin.post(f"{API}/users/alice/facts", json={"content": "Has two cats"}).json()
    assert (fact["category"], fact["confidence"]) == ("context", 0.9)


def test_duplicate_fact_is_409_and_names_the_existing_fact(admin):
    first = admin.post(f"{API}/users/alice/facts", json={"content": "Lives in Lisbon"}).json()
    again = admin.post(f"{API}/users/alice/facts", json={"content": "  lives in LISBON "})
    assert again.status_code == 409
    error = again.json()["error"]
    assert error["code"] == "duplicate_fact"
    assert first["id"] in error["message"]


def test_secret_only_fact_is_422_and_nothing_is_stored(admin, mem):
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB"
    response = admin.post(f"{API}/users/alice/facts", json={"content": secret})
    assert response.status_code == 422
    assert "secret" in response.json()["error"]["message"]
    assert mem.get(user_id="alice").facts == ()


def test_invalid_fact_bodies_are_422_with_the_field_named(admin):
    for body, field in (
        ({}, "content"),
        ({"content": "x", "confidence": 1.5}, "confidence"),
        ({"content": "x", "colour": "red"}, "colour"),
        ({"content": ""}, "content"),
    ):
        response = admin.post(f"{API}/users/alice/facts", json=body)
        assert response.status_code == 422, body
        assert response.json()["error"]["code"] == "invalid"
        assert field in response.json()["error"]["message"]


def test_patch_changes_only_what_is_sent(admin, mem):
    fact = admin.post(f"{API}/users/alice/facts", json={"content": "Drinks tea"}).json()
    response = admin.patch(f"{API}/users/alice/facts/{fact['id']}", json={"confidence": 0.55})
    assert response.status_code == 200
    assert response.json()["confidence"] == 0.55
    stored = mem.get(user_id="alice").fact(fact["id"])
    assert (stored.content, stored.confidence) == ("Drinks tea", 0.55)


def test_patch_with_nothing_to_change_is_422(admin):
    fact = admin.post(f"{API}/users/alice/facts", json={"content": "Drinks tea"}).json()
    response = admin.patch(f"{API}/users/alice/facts/{fact['id']}", json={})
    assert response.status_code == 422
    assert "nothing to change" in response.json()["error"]["message"]


def test_unknown_fact_is_404_for_patch_and_delete(admin):
    for call in (
        lambda: admin.patch(f"{API}/users/alice/facts/fact_nope", json={"content": "x"}),
        lambda: admin.delete(f"{API}/users/alice/facts/fact_nope"),
    ):
        response = call()
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "fact_not_found"


def test_delete_fact_is_204_and_the_fact_is_gone(admin, mem):
    fact = admin.post(f"{API}/users/alice/facts", json={"content": "Drinks tea"}).json()
    response = admin.delete(f"{API}/users/alice/facts/{fact['id']}")
    assert response.status_code == 204
    assert response.content == b""
    assert mem.get(user_id="alice").facts == ()


def test_agent_query_parameter_selects_the_agents_own_memory(admin, mem):
    admin.post(f"{API}/users/alice/facts", params={"agent": "coder"}, json={"content": "Uses Go"})
    assert [f.content for f in mem.get(user_id="alice", agent="coder").facts] == ["Uses Go"]
    assert mem.get(user_id="alice").facts == ()
    shared = admin.get(f"{API}/users/alice/memory").json()
    assert shared["facts"] == []
    coder = admin.get(f"{API}/users/alice/memory", params={"agent": "coder"}).json()
    assert [f["content"] for f in coder["facts"]] == ["Uses Go"]


def test_empty_agent_is_422_not_the_shared_bucket(admin):
    response = admin.get(f"{API}/users/alice/memory", params={"agent": ""})
    assert response.status_code == 422


def test_tilde_is_the_default_user(admin, mem):
    admin.post(f"{API}/users/~/facts", json={"content": "Likes jazz"})
    assert [f.content for f in mem.get().facts] == ["Likes jazz"]


def test_memory_is_the_export_document(admin, mem):
    mem.add_fact("Lives in Lisbon", user_id="alice")
    assert admin.get(f"{API}/users/alice/memory").json() == mem.export(user_id="alice")
    exported = admin.get(f"{API}/users/alice/export")
    assert exported.json() == mem.export(user_id="alice")
    assert "attachment" in exported.headers["content-disposition"]


def test_delete_memory_clears_one_scope_only(admin, mem):
    mem.add_fact("Lives in Lisbon", user_id="alice")
    mem.add_fact("Uses Go", user_id="alice", agent="coder")
    response = admin.delete(f"{API}/users/alice/memory")
    assert response.status_code == 204
    assert mem.get(user_id="alice").facts == ()
    assert len(mem.get(user_id="alice", agent="coder").facts) == 1


def test_conversations_are_recorded_like_record_and_learned_on_flush(admin, mem, talk):
    response = admin.post(
        f"{API}/users/alice/conversations",
        json={"thread_id": "t1", "messages": talk(("I live in Lisbon.", "Noted."))},
    )
    assert response.status_code == 202
    assert response.json() == {"queued": True}
    assert mem.status().pending == 1
    assert mem.flush()
    assert [f.content for f in mem.get(user_id="alice").facts] == ["Lives in Lisbon"]


def test_a_conversation_without_an_exchange_is_accepted_but_not_queued(admin, mem):
    response = admin.post(
        f"{API}/users/alice/conversations",
        json={"thread_id": "t1", "messages": [{"role": "user", "content": "hello?"}]},
    )
    assert response.status_code == 202
    assert response.json() == {"queued": False}
    assert mem.status().pending == 0


def test_a_malformed_message_is_422_naming_the_problem(admin, mem):
    response = admin.post(
        f"{API}/users/alice/conversations",
        json={"thread_id": "t1", "messages": [{"role": "user", "content": 5}]},
    )
    assert response.status_code == 422
    assert response.json()["error"]["message"]
    assert mem.status().pending == 0


def test_misspelt_conversation_field_is_422(admin, talk):
    response = admin.post(
        f"{API}/users/alice/conversations",
        json={"thread": "t1", "messages": talk(("I live in Lisbon.", "Noted."))},
    )
    assert response.status_code == 422
    message = response.json()["error"]["message"]
    assert "thread_id" in message
    assert "thread" in message


def test_search_finds_the_matching_fact(admin, mem):
    mem.add_fact("Has a dog named Biscuit", user_id="alice")
    mem.add_fact("Works as a nurse", user_id="alice")
    response = admin.get(f"{API}/users/alice/search", params={"q": "dog", "limit": 5})
    assert response.status_code == 200
    hits = response.json()["hits"]
    assert [hit["fact"]["content"] for hit in hits] == ["Has a dog named Biscuit"]
    assert hits[0]["score"] > 0


def test_search_needs_a_query(admin):
    assert admin.get(f"{API}/users/alice/search").status_code == 422
    assert admin.get(f"{API}/users/alice/search", params={"q": "x", "limit": 0}).status_code == 422


def test_import_into_an_empty_scope_then_refuses_to_replace_without_replace(admin, mem):
    mem.add_fact("Lives in Lisbon", user_id="alice")
    document = mem.export(user_id="alice")
    response = admin.post(f"{API}/users/carol/import", json=document)
    assert response.status_code == 200
    assert [f.content for f in mem.get(user_id="carol").facts] == ["Lives in Lisbon"]

    other = json.loads(json.dumps(document))
    other["facts"][0]["content"] = "Lives in Porto"
    refused = admin.post(f"{API}/users/carol/import", json=other)
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "scope_not_empty"
    assert "replace=true" in refused.json()["error"]["message"]
    assert [f.content for f in mem.get(user_id="carol").facts] == ["Lives in Lisbon"]

    replaced = admin.post(f"{API}/users/carol/import", params={"replace": "true"}, json=other)
    assert replaced.status_code == 200
    assert [f.content for f in mem.get(user_id="carol").facts] == ["Lives in Porto"]


def test_import_of_something_that_is_not_a_document_is_422_and_keeps_memory(admin, mem):
    mem.add_fact("Lives in Lisbon", user_id="alice")
    response = admin.post(
        f"{API}/users/alice/import", params={"replace": "true"}, json={"facts": "not a list"}
    )
    assert response.status_code == 422
    assert [f.content for f in mem.get(user_id="alice").facts] == ["Lives in Lisbon"]


def test_status_reports_the_queue(admin, mem, talk):
    admin.post(
        f"{API}/users/alice/conversations",
        json={"thread_id": "t1", "messages": talk(("I live in Lisbon.", "Noted."))},
    )
    body = admin.get(f"{API}/status").json()
    assert body["queue"]["pending"] == 1
    assert body["extractor"] == "rules"


def test_config_is_masked_and_shows_no_key_hashes(admin, mem):
    text = admin.get(f"{API}/config").text
    for entry in mem.config.server.api_keys:
        assert entry.sha256 not in text
    body = json.loads(text)
    assert {"name": "ops", "admin": True, "user_id": None} in body["server"]["api_keys"]


def test_config_masks_the_database_password(tmp_path):
    from fastapi.testclient import TestClient

    from memfold import MemoryConfig
    from memfold.server import create_app

    config = MemoryConfig.build(
        home=tmp_path, dsn="postgresql://memfold:s3cretpass@db.internal/memfold",
        server={"api_keys_env": None},
    )  # fmt: skip
    with TestClient(create_app(config=config)) as client:
        text = client.get(f"{API}/config").text
    assert "s3cretpass" not in text
    assert "db.internal" in text


def test_the_page_and_its_files_are_served_locally_with_a_strict_policy(open_client):
    import re

    page = open_client.get("/")
    assert page.status_code == 200
    assert "default-src 'self'" in page.headers["content-security-policy"]
    references = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert references
    for reference in references:
        assert reference.startswith("/static/"), reference
        assert open_client.get(reference).status_code == 200
    script = open_client.get("/static/app.js").text
    assert "innerHTML" not in script  # memory text goes in with textContent only
    assert "http://" not in script
    assert "https://" not in script


# --- endpoints over history, summaries, users and erasure ---------------------------------


def test_users_lists_each_user_with_agents_and_fact_counts(admin, mem):
    mem.add_fact("Lives in Lisbon", user_id="alice")
    mem.add_fact("Uses Go", user_id="alice", agent="coder")
    mem.add_fact("Likes jazz", user_id="bob")
    mem.add_fact("Default user fact")
    users = admin.get(f"{API}/users").json()["users"]
    assert users == [
        {"user_id": None, "agents": [], "facts": 1},
        {"user_id": "alice", "agents": ["coder"], "facts": 2},
        {"user_id": "bob", "agents": [], "facts": 1},
    ]


def test_delete_user_forgets_every_scope_of_that_user_only(admin, mem):
    mem.add_fact("Lives in Lisbon", user_id="alice")
    mem.add_fact("Uses Go", user_id="alice", agent="coder")
    mem.add_fact("Likes jazz", user_id="bob")
    response = admin.delete(f"{API}/users/alice")
    assert response.status_code == 200
    assert response.json()["scopes"] == 2
    assert mem.get(user_id="alice").facts == ()
    assert mem.get(user_id="alice", agent="coder").facts == ()
    assert mem.history(user_id="alice") == []
    assert [u["user_id"] for u in admin.get(f"{API}/users").json()["users"]] == ["bob"]


def test_put_summary_replaces_one_section(admin, mem):
    response = admin.put(
        f"{API}/users/alice/summaries/workContext", json={"summary": "Nurse in Lisbon"}
    )
    assert response.status_code == 200
    assert response.json()["summary"] == "Nurse in Lisbon"
    assert mem.get(user_id="alice").summary("workContext") == "Nurse in Lisbon"
    assert (
        admin.put(
            f"{API}/users/alice/summaries/personal", json={"summary": "Has a dog"}
        ).status_code
        == 200
    )
    assert mem.get(user_id="alice").summary("personalContext") == "Has a dog"


def test_put_summary_to_an_unknown_section_is_422(admin):
    response = admin.put(f"{API}/users/alice/summaries/hobbies", json={"summary": "x"})
    assert response.status_code == 422
    assert "hobbies" in response.json()["error"]["message"]


def test_context_is_exactly_the_injected_block_with_what_was_left_out(admin, mem):
    for n in range(30):
        mem.add_fact(f"Fact {n} about the user's many hobbies and projects", user_id="alice")
    report = admin.get(f"{API}/users/alice/context", params={"max_tokens": 200}).json()
    assert report["text"] == mem.context(user_id="alice", max_tokens=200)
    assert report["tokens"] <= report["budget"] == 200
    assert report["included"]
    assert report["dropped"]
    assert {item["reason"] for item in report["dropped"]} == {"budget"}


def test_context_with_a_query_puts_the_relevant_fact_in(admin, mem):
    for n in range(30):
        mem.add_fact(f"Fact {n} about the user's many hobbies and projects", user_id="alice")
    mem.add_fact("Is allergic to peanuts", user_id="alice", confidence=0.75)
    params = {"max_tokens": 120, "query": "can I eat peanut butter?"}
    report = admin.get(f"{API}/users/alice/context", params=params).json()
    assert "peanuts" in report["text"]
    assert report["text"] == mem.context(user_id="alice", max_tokens=120, query=params["query"])


def test_history_lists_changes_newest_first_and_filters_by_fact(admin, mem):
    first = mem.add_fact("Drinks tea", user_id="alice")
    mem.add_fact("Lives in Lisbon", user_id="alice")
    mem.edit_fact(first.id, content="Drinks oolong tea", user_id="alice")
    events = admin.get(f"{API}/users/alice/history").json()["events"]
    assert [e["kind"] for e in events] == ["edited", "added", "added"]
    only = admin.get(f"{API}/users/alice/history", params={"fact_id": first.id}).json()["events"]
    assert [e["kind"] for e in only] == ["edited", "added"]
    assert len(admin.get(f"{API}/users/alice/history", params={"limit": 1}).json()["events"]) == 1


def test_why_explains_a_learned_fact_and_404s_an_unknown_one(admin, mem, talk):
    mem.update(talk(("I live in Lisbon.", "Noted.")), thread_id="t9", user_id="alice")
    fact = mem.get(user_id="alice").facts[0]
    found = admin.get(f"{API}/users/alice/facts/{fact.id}/why").json()
    assert found["status"] == "live"
    assert found["origin"]["threadId"] == "t9"
    assert "Lisbon" in found["origin"]["excerpt"]
    missing = admin.get(f"{API}/users/alice/facts/fact_nope/why")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "fact_not_found"


def test_users_are_listed_a_page_at_a_time(admin, mem):
    for name in ("ann", "ben", "cat", "dan"):
        mem.add_fact(f"{name} likes tea", user_id=name)
    first = admin.get(f"{API}/users", params={"limit": 3}).json()["users"]
    rest = admin.get(f"{API}/users", params={"limit": 3, "offset": 3}).json()["users"]
    assert [u["user_id"] for u in first + rest] == ["ann", "ben", "cat", "dan"]


def test_import_refuses_an_unknown_document_before_anything_else(admin, mem):
    mem.add_fact("Lives in Lisbon", user_id="alice")
    response = admin.post(f"{API}/users/alice/import", json={"hello": "world"})
    assert response.status_code == 422
    assert "not a memory document" in response.json()["error"]["message"]
    assert [f.content for f in mem.get(user_id="alice").facts] == ["Lives in Lisbon"]


def test_import_merge_adds_the_documents_facts_to_what_is_stored(admin, mem):
    mem.add_fact("Lives in Lisbon", user_id="alice")
    mem.add_fact("Has a dog", user_id="carol")
    mem.add_fact("Lives in Lisbon", user_id="carol")
    document = mem.export(user_id="carol")
    response = admin.post(f"{API}/users/alice/import", params={"merge": "true"}, json=document)
    assert response.status_code == 200
    assert response.json()["added"] == 1
    assert sorted(f.content for f in mem.get(user_id="alice").facts) == [
        "Has a dog",
        "Lives in Lisbon",
    ]


def test_import_lenient_repairs_a_bad_item_and_lists_it(admin, mem):
    document = {"facts": [{"id": "f1", "content": "Likes jazz", "category": "preference",
                           "confidence": "high"}, {"id": "f2", "content": None}]}  # fmt: skip
    strict = admin.post(f"{API}/users/alice/import", json=document)
    assert strict.status_code == 422
    assert "lenient" in strict.json()["error"]["message"]
    lenient = admin.post(f"{API}/users/alice/import", params={"lenient": "true"}, json=document)
    assert lenient.status_code == 200
    body = lenient.json()
    assert body["format"] == "deerflow-v1"
    assert len(body["repairs"]) == 2
    assert any("confidence" in repair for repair in body["repairs"])
    assert [f.content for f in mem.get(user_id="alice").facts] == ["Likes jazz"]


def test_import_replace_and_merge_together_is_422(admin):
    response = admin.post(
        f"{API}/users/alice/import", params={"merge": "true", "replace": "true"}, json={"facts": []}
    )
    assert response.status_code == 422
