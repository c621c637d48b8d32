"""``memfold search`` and ``context --query`` (issue 17), through the CLI."""

import json


def test_search_prints_matching_facts_best_first(run, home):
    for text in ("Is allergic to peanuts", "Likes jazz", "养了一只橘猫，叫年糕"):
        run("--home", home, "--user", "u", "facts", "add", text)

    code, out, _ = run("--home", home, "--user", "u", "search", "peanut butter?")
    assert code == 0
    assert "Is allergic to peanuts" in out
    assert "(score " in out
    assert "jazz" not in out

    _, out, _ = run("--home", home, "--user", "u", "search", "年糕掉毛", "--json")
    (hit,) = json.loads(out)
    assert hit["fact"]["content"] == "养了一只橘猫，叫年糕"
    assert hit["score"] > 0

    code, out, err = run("--home", home, "--user", "u", "search", "quantum")
    assert (code, out) == (0, "")
    assert "no fact of the default user" not in err
    assert "no matching facts" in err


def test_search_category_limit_and_errors(run, home):
    run("--home", home, "facts", "add", "Runs every morning", "--category", "behavior")
    run("--home", home, "facts", "add", "Run a marathon", "--category", "goal")

    _, out, _ = run("--home", home, "search", "run", "--category", "goal")
    assert "Run a marathon" in out
    assert "every morning" not in out
    code, _, err = run("--home", home, "search", "   ")
    assert code == 2
    assert err.startswith("memfold: error: query is empty")
    code, _, err = run("--home", home, "search", "run", "--limit", "0")
    assert code == 2


def test_context_query_injects_the_relevant_fact_first(run, home):
    for i in range(40):
        run("--home", home, "facts", "add", f"Knows tool {i}", "--confidence", "0.95")
    run("--home", home, "facts", "add", "Is allergic to peanuts and carries an EpiPen")

    _, plain, _ = run("--home", home, "context", "--max-tokens", "120")
    _, relevant, _ = run("--home", home, "context", "--max-tokens", "120", "--query", "peanuts?")
    assert "peanuts" not in plain
    assert "Is allergic to peanuts" in relevant
