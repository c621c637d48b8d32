"""How the command line behaves as a CLI: options anywhere, help, version, suggestions,
exit codes, stderr notes and terminal output."""

from __future__ import annotations

import json
import re

import pytest
from cli_helpers import EXAMPLES, memfold_process

from memfold import __version__


def test_version_flag_prints_the_version(run):
    code, out, _ = run("--version")
    assert code == 0
    assert __version__ in out


def test_no_arguments_prints_help_without_an_error(run):
    code, out, err = run()
    assert code == 0
    assert "Usage: memfold" in out
    assert "error" not in err
    code, out, err = run("facts")
    assert code == 0
    assert "Usage: memfold facts" in out
    assert err == ""


@pytest.mark.parametrize("where", ["before", "after"])
def test_scope_options_work_before_or_after_the_command(run, home, where):
    scope = ["--home", home, "--user", "alice", "--agent", "coder"]
    add = (
        [*scope, "facts", "add", "Uses vim"]
        if where == "before"
        else ["facts", "add", "Uses vim", *scope]
    )
    assert run(*add)[0] == 0
    shown = ["show", *scope] if where == "after" else [*scope, "show"]
    code, out, _ = run(*shown)
    assert code == 0
    assert "Uses vim" in out
    assert "user 'alice', agent 'coder'" in out


def test_an_option_after_the_command_wins_over_the_same_before(run, home, tmp_path):
    other = str(tmp_path / "other")
    run("--home", home, "--user", "a", "facts", "add", "Lives in Oslo")
    code, out, _ = run(
        "--home", other, "--user", "b", "facts", "list", "--home", home, "--user", "a"
    )
    assert code == 0
    assert "Lives in Oslo" in out


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [(["facts", "delete", "x"], "rm"), (["facts", "ls"], "list"), (["shwo"], "show"),
     (["user"], "users")],
)  # fmt: skip
def test_an_unknown_command_suggests_the_right_one(run, home, args, suggestion):
    code, _, err = run("--home", home, *args)
    assert code == 2
    assert f"did you mean '{suggestion}'?" in err
    assert len(err.strip().splitlines()) == 1


def test_an_empty_user_id_is_a_usage_error_in_cli_words(run, home):
    code, _, err = run("--home", home, "--user", "", "show")
    assert code == 2
    assert "--user needs an id; leave --user out for the default user" in err
    assert "None" not in err


def test_a_user_with_no_memory_is_reported_on_stderr(run, home):
    run("--home", home, "ingest", str(EXAMPLES))
    code, out, err = run("--home", home, "--user", "nobody", "show")
    assert code == 0
    assert "no stored memory for user 'nobody'" in err
    assert "2 users stored" in err
    assert f"memfold --home {home} users" in err
    assert "nobody" not in out.replace("user 'nobody'", "")
    code, _, err = run("--home", home, "--user", "alice", "--agent", "writer", "facts", "list")
    assert code == 0
    assert "this user has: shared memory, agent 'coder'" in err


def test_users_lists_every_user_with_agents_and_fact_counts(run, home):
    run("--home", home, "ingest", str(EXAMPLES))
    run("--home", home, "facts", "add", "Runs the demo")
    code, out, _ = run("--home", home, "users")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("(default user)")
    assert re.search(r"^alice +shared: \d+ facts · coder: 2 facts$", out, re.M)
    assert re.search(r"^wei +shared: \d+ facts$", out, re.M)
    code, raw, _ = run("--home", home, "users", "--json")
    data = json.loads(raw)
    assert [entry["userId"] for entry in data] == [None, "alice", "wei"]
    alice = data[1]["scopes"]
    assert [s["agent"] for s in alice] == [None, "coder"]
    assert alice[1]["facts"] == 2


def test_users_in_an_empty_home_says_so(run, home):
    code, out, err = run("--home", home, "users")
    assert (code, out) == (0, "")
    assert "no stored memory in" in err


def test_every_read_command_has_json_output(run, home):
    run("--home", home, "ingest", str(EXAMPLES))
    scope = ["--home", home, "--user", "alice"]
    for command in (["show"], ["context"], ["facts", "list"], ["users"], ["status"], ["export"]):
        extra = [] if command == ["export"] else ["--json"]
        code, out, _ = run(*scope, *command, *extra)
        assert code == 0, command
        json.loads(out)


def test_context_json_reports_the_block_and_its_exact_size(run, home):
    run("--home", home, "ingest", str(EXAMPLES))
    code, out, _ = run(
        "--home", home, "--user", "alice", "context", "--json", "--max-tokens", "300"
    )
    assert code == 0
    data = json.loads(out)
    assert data["block"].startswith("<user_memory>")
    assert 0 < data["tokens"] <= data["maxTokens"] == 300


def test_an_empty_context_prints_nothing_so_it_can_be_spliced_into_a_prompt(run, home):
    code, out, err = run("--home", home, "--user", "alice", "context")
    assert (code, out) == (0, "")
    assert "no stored memory" in err


def test_show_and_facts_list_order_facts_the_same_way_with_dates_and_origin(run, home):
    scope = ["--home", home, "--user", "o"]
    run(*scope, "facts", "add", "Low", "--confidence", "0.5")
    run(*scope, "facts", "add", "High", "--confidence", "0.99")
    run(*scope, "facts", "add", "Mid", "--confidence", "0.8")
    _, shown, _ = run(*scope, "show")
    _, listed, _ = run(*scope, "facts", "list")
    order = re.findall(r"\] (\w+)", shown)
    assert order == ["High", "Mid", "Low"]
    assert re.findall(r"\] (\w+)", listed) == order
    assert "manual · added 20" in listed
    _, raw, _ = run(*scope, "facts", "list", "--json")
    first = json.loads(raw)[0]
    assert first["manual"] is True
    assert first["updatedAt"]
    assert first["createdAt"]


def test_text_output_on_a_terminal_wraps_on_words_at_its_width(run, home, monkeypatch):
    monkeypatch.setattr("memfold.cli._output.is_terminal", lambda: True)
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setenv("NO_COLOR", "1")
    long = "Maintains the Airflow deployment of the data team and the Snowflake migration plan"
    run("--home", home, "facts", "add", long)
    code, out, _ = run("--home", home, "facts", "list")
    assert code == 0
    assert all(len(line) <= 60 for line in out.splitlines())
    words = " ".join(line.strip() for line in out.splitlines()).split()
    for word in long.split():
        assert word in words  # every word whole, none broken across lines


def test_colour_only_on_a_terminal(run, home, monkeypatch):
    run("--home", home, "facts", "add", "Likes tea")
    _, piped, _ = run("--home", home, "facts", "list")
    assert "\x1b[" not in piped
    monkeypatch.setattr("memfold.cli._output.is_terminal", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr("click.utils.should_strip_ansi", lambda *a, **k: False)
    _, coloured, _ = run("--home", home, "facts", "list")
    assert "\x1b[" in coloured


def test_facts_add_refuses_an_unknown_category_with_a_suggestion(run, home):
    code, _, err = run("--home", home, "facts", "add", "Likes tea", "--category", "prefrence")
    assert code == 2
    assert "did you mean 'preference'?" in err
    assert run("--home", home, "facts", "list")[1] == ""


def test_a_missing_fact_id_hint_keeps_the_scope_options(run, home):
    code, _, err = run("--home", home, "--user", "alice", "facts", "rm", "fact_nope")
    assert code == 2
    assert f"memfold --home {home} --user alice facts list" in err


def test_clear_names_the_scope_it_forgot(run, home):
    run("--home", home, "--user", "alice", "--agent", "coder", "facts", "add", "Uses vim")
    code, out, _ = run("--home", home, "--user", "alice", "--agent", "coder", "clear", "--yes")
    assert code == 0
    assert out.strip() == "cleared user 'alice', agent 'coder': 1 fact and 0 summaries forgotten"


def test_counts_are_pluralised(run, home, tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"thread_id": "t", "messages": [
        {"role": "user", "content": "I live in Oslo."}, {"role": "assistant", "content": "Ok."}
    ]}) + "\n", encoding="utf-8")  # fmt: skip
    _, out, _ = run("--home", home, "ingest", str(path))
    assert out.startswith("read 1 conversation with the rules extractor: 1 fact added")


def test_exit_codes_of_the_real_command(tmp_path):
    home = str(tmp_path / "h")
    assert memfold_process("--home", home, "facts", "add", "Likes tea").returncode == 0
    usage = memfold_process("--home", home, "show", "--bogus")
    assert usage.returncode == 2
    assert usage.stderr.startswith("memfold: error: ")
    refused = tmp_path / "mem0.json"
    refused.write_text('{"results": [{"id": "1", "memory": "likes tea"}]}', encoding="utf-8")
    check = memfold_process("--home", home, "import", "--yes", str(refused))
    assert check.returncode == 1
    assert "not a memory document memfold knows" in check.stderr
    for proc in (usage, check):
        assert "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_memfold_yaml_in_the_working_directory_is_read_by_default(tmp_path, monkeypatch):
    (tmp_path / "memfold.yaml").write_text("storage: sqlite\nhome: ./mem\n", encoding="utf-8")
    status = memfold_process("status", "--json", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["config"]["storage"] == "sqlite"
    assert shown["configFile"].endswith("memfold.yaml")
    other = tmp_path / "other.yaml"
    other.write_text("storage: json\n", encoding="utf-8")
    named = memfold_process("status", "--json", cwd=tmp_path, env={"MEMFOLD_CONFIG": str(other)})
    assert json.loads(named.stdout)["config"]["storage"] == "json"


def test_a_misspelt_memfold_variable_is_reported(tmp_path):
    proc = memfold_process(
        "--home", str(tmp_path / "h"), "status", env={"MEMFOLD_STORGE": "sqlite"}
    )
    assert proc.returncode == 0
    assert "MEMFOLD_STORGE is not a memfold setting" in proc.stderr
    assert "did you mean MEMFOLD_STORAGE?" in proc.stderr


def test_help_loads_neither_pydantic_nor_lazy_commands():
    # what keeps `memfold --help` fast (benchmarks/bench_cli.py measures the time)
    script = (
        "import sys\n"
        "from memfold.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pydantic', 'memfold.eval', 'memfold.memory', 'tiktoken') "
        "if m in sys.modules))\n"
    )
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert re.search(r"^  eval +Measure memfold on labelled data\.$", done.stdout, re.M)
    assert re.search(r"^  forget-user +Erase USER everywhere", done.stdout, re.M)
