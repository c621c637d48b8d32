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
