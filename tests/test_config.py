from pathlib import Path

import pytest

from memfold.config import MemoryConfig, mask_secrets
from memfold.errors import ConfigError


def test_defaults_match_the_design_table():
    cfg = MemoryConfig.build(env={})
    assert cfg.storage == "json"
    assert cfg.queue == "memory"
    assert cfg.debounce_seconds == 30
    assert cfg.max_wait_seconds == 120
    assert cfg.workers == 4
    assert cfg.max_facts == 100
    assert cfg.fact_confidence_threshold == 0.7
    assert cfg.max_injection_tokens == 2000
    assert cfg.guaranteed_categories == ("correction",)
    assert cfg.guaranteed_token_budget == 500
    assert cfg.token_encoding == "cl100k_base"
    assert cfg.injection_mode == "per_call"


def test_yaml_then_env_then_arguments(tmp_path):
    path = tmp_path / "memfold.yaml"
    path.write_text("debounce_seconds: 10\nworkers: 2\nmax_facts: 50\n", encoding="utf-8")
    cfg = MemoryConfig.build(path, env={"MEMFOLD_WORKERS": "3", "OTHER": "x"}, max_facts=7)
    assert (cfg.debounce_seconds, cfg.workers, cfg.max_facts) == (10, 3, 7)


def test_env_accepts_lists_and_json_objects():
    cfg = MemoryConfig.build(
        env={
            "MEMFOLD_GUARANTEED_CATEGORIES": "correction,Preference",
            "MEMFOLD_LLM": '{"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:1/v1"}',
        }
    )
    assert cfg.guaranteed_categories == ("correction", "preference")
    assert cfg.llm is not None
    assert cfg.llm.model == "gpt-4o-mini"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"debounce_seconds": -1}, "debounce_seconds=-1: must be between 0.0 and 3600.0"),
        ({"workers": 0}, "workers=0: must be between 1 and 64"),
        ({"max_injection_tokens": 10}, "max_injection_tokens=10: must be between 50 and 200000"),
        ({"token_encoding": "p50k"}, "token_encoding='p50k'"),
        ({"storage": "mongo"}, "'mongo' is not a backend"),
        ({"max_fact": 3}, "max_fact: unknown key"),
        ({"guaranteed_token_budget": 3000}, "guaranteed_token_budget=3000: must be smaller"),
        ({"storage": "postgres"}, "storage=postgres needs dsn"),
        ({"extractor": "llm"}, "extractor=llm needs an llm section"),
    ],
)
def test_invalid_values_name_the_key_and_the_allowed_range(overrides, message):
    with pytest.raises(ConfigError) as info:
        MemoryConfig.build(env={}, **overrides)
    assert message in str(info.value)


def test_unreadable_or_invalid_yaml_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        MemoryConfig.build(tmp_path / "missing.yaml", env={})
    bad = tmp_path / "bad.yaml"
    bad.write_text("workers: [1,\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        MemoryConfig.build(bad, env={})
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="expected a mapping"):
        MemoryConfig.build(listy, env={})


def test_masked_config_hides_passwords_and_keys():
    cfg = MemoryConfig.build(
        env={},
        storage="postgres",
        dsn="postgresql://memfold:s3cret-pw@db.internal:5432/memfold",
        llm={"model": "m", "api_key_env": "MY_KEY_VAR"},
    )
    masked = cfg.masked()
    assert "s3cret-pw" not in str(masked)
    assert masked["dsn"] == "postgresql://memfold:****@db.internal:5432/memfold"
    assert masked["llm"]["api_key_env"] == "MY_KEY_VAR"


def test_mask_secrets_handles_keyword_dsns_and_secret_keys():
    out = mask_secrets({"dsn": "host=db user=me password=hunter2", "api_token": "abc", "n": 1})
    assert out == {"dsn": "host=db user=me password=****", "api_token": "****", "n": 1}


def test_env_sets_path_lists_from_commas_or_json():
    commas = MemoryConfig.build(env={"MEMFOLD_RULE_PATTERN_FILES": "a.yaml, b.yaml"})
    assert commas.rule_pattern_files == (Path("a.yaml"), Path("b.yaml"))
    as_json = MemoryConfig.build(env={"MEMFOLD_RULE_PATTERN_FILES": '["x/c.yaml"]'})
    assert as_json.rule_pattern_files == (Path("x/c.yaml"),)


def test_home_and_pattern_files_expand_a_leading_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = MemoryConfig.build(env={"MEMFOLD_HOME": "~/mem"}, rule_pattern_files=["~/rules.yaml"])
    assert cfg.home == tmp_path / "mem"
    assert cfg.rule_pattern_files == (tmp_path / "rules.yaml",)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"extraction_timeout_seconds": 0}, "must be greater than 0.0 and at most 3600.0"),
        ({"llm": {"model": "m", "timeout_seconds": 0}}, "must be greater than 0.0 and at most"),
    ],
)
def test_an_exclusive_bound_is_not_stated_as_allowed(overrides, message):
    with pytest.raises(ConfigError) as info:
        MemoryConfig.build(env={}, **overrides)
    assert message in str(info.value)
    assert "between 0.0" not in str(info.value)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEMFOLD_WORKERS": "four"}, "workers='four'"),
        ({"MEMFOLD_MAX_INJECTION_TOKENS": "1e3"}, "max_injection_tokens='1e3'"),
        ({"MEMFOLD_DEBOUNCE_SECONDS": "soon"}, "debounce_seconds='soon'"),
    ],
)
def test_a_value_of_the_wrong_type_still_names_the_allowed_range(env, message):
    with pytest.raises(ConfigError) as info:
        MemoryConfig.build(env=env)
    text = str(info.value)
    assert message in text
    assert "between" in text


def test_invalid_yaml_is_reported_on_one_line_with_its_position(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("workers: 2\nqueue: [memory,\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        MemoryConfig.build(bad, env={})
    text = str(info.value)
    assert "\n" not in text
    assert "not valid YAML" in text
    assert "line " in text


def test_mask_secrets_hides_a_url_password_that_contains_at_signs():
    for dsn, password in [
        ("redis://:p@ss@cache:6379/0", "p@ss"),
        ("postgresql://me:a@b@c@db.internal/app?sslmode=require", "a@b@c"),
    ]:
        masked = mask_secrets(dsn, "dsn")
        assert "@ss" not in masked
        assert password not in masked
        assert masked.endswith(dsn.rsplit("@", 1)[1])


def test_llm_defaults_negotiate_the_format_and_cap_the_output():
    cfg = MemoryConfig.build(env={}, llm={"model": "m"})
    assert cfg.llm is not None
    assert (cfg.llm.response_format, cfg.llm.max_output_tokens) == ("auto", 1500)
    assert cfg.llm.json_mode is None


def test_llm_response_format_is_validated_and_pins_the_client():
    from memfold.llm.factory import make_chat_model

    with pytest.raises(ConfigError, match=r"llm\.response_format='yaml'"):
        MemoryConfig.build(env={}, llm={"model": "m", "response_format": "yaml"})
    cfg = MemoryConfig.build(
        env={}, llm={"model": "m", "api_key_env": None, "response_format": "json_object_schema"}
    )
    assert cfg.llm is not None
    chat = make_chat_model(cfg.llm)
    assert chat.response_format == "json_object_schema"  # type: ignore[attr-defined]


def test_llm_json_mode_still_works_and_must_agree_with_response_format():
    from memfold.llm.factory import make_chat_model

    cfg = MemoryConfig.build(env={}, llm={"model": "m", "api_key_env": None, "json_mode": "off"})
    assert cfg.llm is not None
    assert make_chat_model(cfg.llm).response_format == "text"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"llm\.json_mode=off contradicts llm\.response_format"):
        MemoryConfig.build(
            env={}, llm={"model": "m", "json_mode": "off", "response_format": "json_schema"}
        )


def test_llm_max_output_tokens_is_bounded():
    with pytest.raises(ConfigError, match=r"llm\.max_output_tokens=4: must be between 16"):
        MemoryConfig.build(env={}, llm={"model": "m", "max_output_tokens": 4})


def test_upload_tags_default_and_validation():
    assert MemoryConfig.build(env={}).upload_tags == ("uploaded_files", "current_uploads")
    cfg = MemoryConfig.build(env={"MEMFOLD_UPLOAD_TAGS": "uploaded_files,attachments"})
    assert cfg.upload_tags == ("uploaded_files", "attachments")
    with pytest.raises(ConfigError, match="'<files>' is not a tag name"):
        MemoryConfig.build(env={}, upload_tags=["<files>"])
