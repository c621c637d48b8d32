"""Where configuration comes from, and how a mistake in it is reported (S9, polish 5-7)."""

from __future__ import annotations

import logging

import pytest

from memfold.config import MemoryConfig
from memfold.errors import ConfigError


def test_memfold_yaml_in_the_working_directory_is_read_when_no_file_is_given(tmp_path, monkeypatch):
    (tmp_path / "memfold.yaml").write_text("storage: sqlite\nworkers: 2\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config = MemoryConfig.build(env={})
    assert (config.storage, config.workers) == ("sqlite", 2)
    assert config.source_file is not None
    assert config.source_file.name == "memfold.yaml"


def test_memfold_config_names_the_file_and_an_explicit_path_wins(tmp_path, monkeypatch):
    named = tmp_path / "named.yaml"
    named.write_text("workers: 3\n", encoding="utf-8")
    (tmp_path / "memfold.yaml").write_text("workers: 2\n", encoding="utf-8")
    explicit = tmp_path / "explicit.yaml"
    explicit.write_text("workers: 5\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert MemoryConfig.build(env={"MEMFOLD_CONFIG": str(named)}).workers == 3
    assert MemoryConfig.build(explicit, env={"MEMFOLD_CONFIG": str(named)}).workers == 5
    assert MemoryConfig.build(env={}).source_file == tmp_path / "memfold.yaml"


def test_a_memfold_config_that_does_not_exist_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"MEMFOLD_CONFIG=.*nope.yaml: no such file"):
        MemoryConfig.build(env={"MEMFOLD_CONFIG": str(tmp_path / "nope.yaml")})


def test_without_any_file_the_defaults_apply(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = MemoryConfig.build(env={})
    assert config.source_file is None
    assert config.storage == "json"


def test_nested_llm_variables_set_one_key_each_and_win_over_the_json_form(tmp_path):
    env = {
        "MEMFOLD_LLM": '{"model": "old", "base_url": "http://127.0.0.1:1/v1"}',
        "MEMFOLD_LLM__MODEL": "gpt-4o-mini",
        "MEMFOLD_LLM__TIMEOUT_SECONDS": "9",
    }
    config = MemoryConfig.build(env=env)
    assert config.llm is not None
    assert (config.llm.model, config.llm.timeout_seconds) == ("gpt-4o-mini", 9.0)
    assert config.llm.base_url == "http://127.0.0.1:1/v1"


def test_nested_variables_merge_with_the_yaml_llm_section(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("llm:\n  model: from-yaml\n  base_url: http://x:1/v1\n", encoding="utf-8")
    config = MemoryConfig.build(path, env={"MEMFOLD_LLM__MODEL": "from-env"})
    assert config.llm is not None
    assert (config.llm.model, config.llm.base_url) == ("from-env", "http://x:1/v1")


def test_a_plain_memfold_llm_value_explains_both_forms():
    with pytest.raises(ConfigError) as info:
        MemoryConfig.build(env={"MEMFOLD_LLM": "gpt-4o-mini"})
    assert "MEMFOLD_LLM__MODEL=gpt-4o-mini" in str(info.value)
    assert '{"model": "gpt-4o-mini"}' in str(info.value)


@pytest.mark.parametrize(
    ("name", "meant"),
    [("MEMFOLD_STORGE", "MEMFOLD_STORAGE"), ("MEMFOLD_WORKER", "MEMFOLD_WORKERS"),
     ("MEMFOLD_LLM__MODLE", "MEMFOLD_LLM__MODEL")],
)  # fmt: skip
def test_a_misspelt_variable_is_reported_with_the_key_it_probably_meant(caplog, name, meant):
    with caplog.at_level(logging.WARNING, logger="memfold.config"):
        MemoryConfig.build(env={name: "sqlite" if "STOR" in name else "2"})
    assert f"{name} is not a memfold setting and is ignored; did you mean {meant}?" in caplog.text


def test_unrelated_memfold_variables_are_left_alone(caplog):
    with caplog.at_level(logging.WARNING):
        MemoryConfig.build(env={"MEMFOLD_TEST_POSTGRES_DSN": "x", "MEMFOLD_PYTHON": "python3"})
    assert caplog.text == ""


@pytest.mark.parametrize(
    ("overrides", "message"),
    [({"max_injecton_tokens": 400}, "unknown key; did you mean 'max_injection_tokens'?"),
     ({"storge": "sqlite"}, "storge: unknown key; did you mean 'storage'?"),
     ({"llm": {"model": "m", "modle": "x"}}, "llm.modle: unknown key; did you mean 'model'?"),
     ({"colour": "x"}, "colour: unknown key; see the configuration table in the README")],
)  # fmt: skip
def test_an_unknown_key_suggests_the_key_it_probably_meant(overrides, message):
    with pytest.raises(ConfigError) as info:
        MemoryConfig.build(env={}, **overrides)
    assert message in str(info.value)


def test_a_cross_field_error_has_no_pydantic_noise():
    with pytest.raises(ConfigError) as info:
        MemoryConfig.build(env={}, extractor="llm")
    message = str(info.value)
    assert message.startswith("extractor=llm needs an llm section")
    assert "Value error" not in message
    assert "config=" not in message


def test_a_misspelt_guaranteed_category_is_refused_with_a_suggestion():
    with pytest.raises(
        ConfigError, match=r"'corection' is not one of the categories.*did you mean 'correction'"
    ):
        MemoryConfig.build(env={}, guaranteed_categories=["corection"])
    custom = MemoryConfig.build(
        env={}, categories=["pet", "correction"], guaranteed_categories=["pet"]
    )
    assert custom.guaranteed_categories == ("pet",)
    assert MemoryConfig.build(env={}, categories=["a", "b"]).categories == ("a", "b")


@pytest.mark.parametrize(("total", "guaranteed"), [(2000, 500), (4000, 500), (400, 100), (50, 12)])
def test_the_guaranteed_budget_follows_max_injection_tokens_unless_set(total, guaranteed):
    config = MemoryConfig.build(env={}, max_injection_tokens=total)
    assert config.guaranteed_token_budget == guaranteed
    assert config.replace(max_injection_tokens=800).guaranteed_token_budget == 200
    explicit = MemoryConfig.build(env={}, max_injection_tokens=total, guaranteed_token_budget=7)
    assert explicit.replace(max_injection_tokens=800).guaranteed_token_budget == 7


def test_max_injection_tokens_alone_from_the_environment_works():
    config = MemoryConfig.build(env={"MEMFOLD_MAX_INJECTION_TOKENS": "400"})
    assert (config.max_injection_tokens, config.guaranteed_token_budget) == (400, 100)


def test_only_secret_keys_are_masked():
    config = MemoryConfig.build(env={}, storage="postgres", dsn="postgresql://me:pw@db/x")
    masked = config.masked()
    assert masked["token_encoding"] == "cl100k_base"
    assert masked["max_injection_tokens"] == 2000
    assert masked["dsn"] == "postgresql://me:****@db/x"
    from memfold.config import mask_secrets

    assert mask_secrets({"auth_token": "abc", "api_key": "k", "client_secret": "s"}) == {
        "auth_token": "****",
        "api_key": "****",
        "client_secret": "****",
    }
