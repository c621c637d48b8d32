"""The commands as a user runs them, in-process (see ``conftest.run``)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import EXAMPLES


def assert_nothing_stored(run, home: str, user: str) -> None:
    code, out, err = run("--home", home, "--user", user, "show")
    assert code == 0
    assert "no stored memory" in err
    assert " 0 facts, revision 0" in out


def test_ingest_examples_then_context_shows_each_users_memory(run, home):
    code, out, _ = run("--home", home, "ingest", str(EXAMPLES))
    assert code == 0
    assert "read 12 conversations with the rules extractor" in out
    code, alice, _ = run("--home", home, "--user", "alice", "context")
    assert code == 0
    assert alice.startswith("<user_memory>")
    assert "Berlin" in alice
    _, wei, _ = run("--home", home, "--user", "wei", "context")
    assert "上海" in wei
    assert "Berlin" not in wei


def test_ingest_a_second_time_adds_nothing(run, home):
    run("--home", home, "ingest", str(EXAMPLES))
    code, out, _ = run("--home", home, "ingest", str(EXAMPLES))
    assert code == 0
    assert "0 facts added, 0 removed" in out


def test_bad_jsonl_line_is_one_error_line_and_stores_nothing(run, home, tmp_path):
    good = {"thread_id": "t1", "user_id": "u", "messages": [
        {"role": "user", "content": "I live in Lisbon."},
        {"role": "assistant", "content": "Noted."}]}  # fmt: skip
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(good) + "\n{not json\n", encoding="utf-8")
    code, _, err = run("--home", home, "ingest", str(path))
    assert code == 2
    assert err.startswith("memfold: error: ")
    assert "in.jsonl:2" in err
    assert len(err.strip().splitlines()) == 1
    assert_nothing_stored(run, home, "u")


def test_missing_messages_field_names_the_line_and_the_fix(run, home, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"thread_id": "t1"}\n', encoding="utf-8")
    code, _, err = run("--home", home, "ingest", str(path))
    assert code == 2
    assert "in.jsonl:1: 'messages' must be a list" in err


def test_single_json_conversation_is_accepted(run, home, tmp_path):
    conv = {"thread_id": "t9", "messages": [
        {"role": "user", "content": "Please always answer in French."},
        {"role": "assistant", "content": "D'accord."}]}  # fmt: skip
    path = tmp_path / "one.json"
    path.write_text(json.dumps(conv, indent=2), encoding="utf-8")
    code, out, _ = run("--home", home, "ingest", str(path))
    assert code == 0
    assert "read 1 conversation with" in out
    _, block, _ = run("--home", home, "context")
    assert "French" in block


def test_facts_add_list_edit_rm(run, home):
    code, out, _ = run("--home", home, "--user", "bo", "facts", "add", "Likes tea",
                       "--category", "preference")  # fmt: skip
    assert code == 0
    fact_id = out.split()[-1]
    assert fact_id.startswith("fact_")
    _, listing, _ = run("--home", home, "--user", "bo", "facts", "list")
    assert "Likes tea" in listing
    assert "manual · added" in listing
    code, _, _ = run("--home", home, "--user", "bo", "facts", "edit", fact_id,
                     "--content", "Likes green tea")  # fmt: skip
    assert code == 0
    _, data, _ = run("--home", home, "--user", "bo", "facts", "list", "--json")
    assert json.loads(data)[0]["content"] == "Likes green tea"
    assert run("--home", home, "--user", "bo", "facts", "rm", fact_id)[0] == 0
    code, _, err = run("--home", home, "--user", "bo", "facts", "rm", fact_id)
    assert code == 2
    assert f"no fact '{fact_id}'" in err


def test_duplicate_fact_and_invalid_confidence_are_clear_errors(run, home):
    run("--home", home, "facts", "add", "Uses Emacs")
    code, _, err = run("--home", home, "facts", "add", "uses emacs.")
    assert code == 2
    assert "already exists" in err
    code, _, err = run("--home", home, "facts", "add", "X", "--confidence", "3")
    assert code == 2
    assert "confidence" in err.lower()


def test_export_import_round_trip_and_v1_import(run, home, tmp_path):
    run("--home", home, "--user", "a", "facts", "add", "Has a cat")
    out_file = tmp_path / "a.json"
    assert run("--home", home, "--user", "a", "export", "-o", str(out_file))[0] == 0
    assert run("--home", home, "--user", "b", "import", str(out_file))[0] == 0
    _, shown, _ = run("--home", home, "--user", "b", "show")
    assert "Has a cat" in shown
    v1 = tmp_path / "memory.json"
    fact = {"id": "f1", "content": "Knows Go", "category": "knowledge", "confidence": 0.8,
            "createdAt": "", "source": "t"}  # fmt: skip
    v1_doc = {"version": "1.0", "lastUpdated": "", "user": {}, "history": {}, "facts": [fact]}
    v1.write_text(json.dumps(v1_doc), encoding="utf-8")
    code, out, _ = run("--home", home, "--user", "c", "import", str(v1))
    assert code == 0
    assert "imported 1 fact from" in out
    assert "DeerFlow v1 memory.json" in out
    _, raw, _ = run("--home", home, "--user", "c", "show", "--json")
    assert json.loads(raw)["facts"][0]["category"] == "knowledge"


def test_import_of_a_bad_document_is_refused_without_touching_memory(run, home, tmp_path):
    run("--home", home, "facts", "add", "Keeps bees")
    bad = tmp_path / "bad.json"
    bad.write_text('{"facts": [{"content": "no id"}]}', encoding="utf-8")
    code, _, err = run("--home", home, "import", "--yes", str(bad))
    assert code == 1
    assert "facts[0].id" in err
    assert "--lenient" in err
    _, block, _ = run("--home", home, "context")
    assert "Keeps bees" in block


def test_clear_needs_yes_or_confirmation(run, home):
    run("--home", home, "facts", "add", "Rides a bike")
    code, _, err = run("--home", home, "clear")  # no terminal, no --yes: refused
    assert code == 1
    assert "--yes" in err
    assert "Rides a bike" in run("--home", home, "context")[1]
    code, out, _ = run("--home", home, "clear", "--yes")
    assert code == 0
    assert out == "cleared the default user (shared memory): 1 fact and 0 summaries forgotten\n"
    code, block, err = run("--home", home, "context")
    assert (code, block) == (0, "")
    assert "empty" in err


def test_corrupt_memory_file_is_reported_and_left_alone(run, home):
    run("--home", home, "--user", "z", "facts", "add", "Plays chess")
    [path] = Path(home).glob("users/*/memory.json")
    path.write_text('{"facts": [', encoding="utf-8")
    code, _, err = run("--home", home, "--user", "z", "facts", "add", "Plays go")
    assert code == 1  # the store failed: a runtime failure, not a usage error
    assert "corrupt memory file" in err
    assert str(path) in err
    assert path.read_text(encoding="utf-8") == '{"facts": ['


def test_status_masks_secrets(run, home, tmp_path):
    cfg = tmp_path / "memfold.yaml"
    cfg.write_text(
        "llm:\n  model: m\n  api_key_env: null\n  base_url: http://user:hunter2@127.0.0.1:9/v1\n",
        encoding="utf-8",
    )
    code, out, _ = run("--home", home, "--config", str(cfg), "status", "--json")
    assert code == 0
    assert "hunter2" not in out
    shown = json.loads(out)
    assert shown["config"]["llm"]["base_url"] == "http://user:****@127.0.0.1:9/v1"
    assert shown["config"]["token_encoding"] == "cl100k_base"  # not a secret
    assert shown["extractor"] == "llm"
    assert shown["configFile"] == str(cfg)
    code, text, _ = run("--home", home, "--config", str(cfg), "status")
    assert code == 0
    assert "hunter2" not in text
    assert f"config file: {cfg}" in text
    assert "token_encoding: cl100k_base" in text


def test_llm_config_without_its_key_fails_at_start_naming_the_variable(run, home, tmp_path):
    cfg = tmp_path / "memfold.yaml"
    cfg.write_text("llm:\n  model: m\n  api_key_env: MEMFOLD_TEST_UNSET_KEY\n", encoding="utf-8")
    code, _, err = run("--home", home, "--config", str(cfg), "context")
    assert code == 2
    assert "MEMFOLD_TEST_UNSET_KEY is not set" in err


def test_invalid_config_value_exits_2_with_the_key(run, home, tmp_path):
    cfg = tmp_path / "memfold.yaml"
    cfg.write_text("workers: 0\n", encoding="utf-8")
    code, _, err = run("--home", home, "--config", str(cfg), "context")
    assert code == 2
    assert "workers=0: must be between 1 and 64" in err


def test_console_script_runs_as_a_module_without_traceback(home):
    proc = subprocess.run(
        [sys.executable, "-m", "memfold.cli", "--home", home, "facts", "rm", "fact_nope"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("memfold: error: no fact 'fact_nope'")
    assert f"memfold --home {home} facts list" in proc.stderr


@pytest.mark.parametrize(
    ("bad_messages", "expected"),
    [
        ([{"role": "user", "content": 5}], "content must be a string"),
        ([1, 2], "unsupported message of type int"),
        ([{"role": "wizard", "content": "hi"}], "wizard"),
    ],
)
def test_malformed_message_is_one_error_line_naming_it_and_stores_nothing(
    run, home, tmp_path, bad_messages, expected
):
    good = {"thread_id": "t1", "user_id": "u", "messages": [
        {"role": "user", "content": "I live in Lisbon."},
        {"role": "assistant", "content": "Noted."}]}  # fmt: skip
    bad = {"thread_id": "t2", "user_id": "u", "messages": bad_messages}
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    code, _, err = run("--home", home, "ingest", str(path))
    assert code == 2
    assert f"{path}:2" in err
    assert expected in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert_nothing_stored(run, home, "u")


@pytest.mark.parametrize("field", ["user_id", "agent"])
def test_empty_user_or_agent_in_a_later_line_stores_nothing(run, home, tmp_path, field):
    good = {"thread_id": "t1", "user_id": "u", "messages": [
        {"role": "user", "content": "I live in Lisbon."},
        {"role": "assistant", "content": "Noted."}]}  # fmt: skip
    bad = {**good, "thread_id": "t2", field: ""}
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    code, _, err = run("--home", home, "ingest", str(path))
    assert code == 2
    assert f"{path}:2" in err
    assert field in err
    assert_nothing_stored(run, home, "u")
