"""Whatever prints configuration or model settings masks passwords and keys."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfold.cli import cli
from memfold.config import LLMConfig, MemoryConfig, mask_secrets
from memfold.llm.openai import OpenAIChatModel

PASSWORD = "S3cretPw9"


@pytest.mark.parametrize(
    "dsn",
    [
        f"postgresql://app:{PASSWORD}@db:5432/mem",
        f"postgresql://app:{PASSWORD}@db/mem?sslmode=require",
        f"redis://:{PASSWORD}@cache:6379/0",
        f"host=db user=app password={PASSWORD} dbname=mem",
        f"host=db password = '{PASSWORD} with space' dbname=mem",
        f'host=db password="{PASSWORD} x" dbname=mem',
        f"Server=db;Uid=app;Pwd={PASSWORD};Database=mem",
        f"Password={PASSWORD};Host=db",
        f"jdbc:postgresql://db/mem?user=app&password={PASSWORD}&ssl=true",
        f"postgresql://app@db/mem?sslpassword={PASSWORD}",
    ],
)
def test_mask_secrets_hides_dsn_passwords_in_every_form(dsn: str) -> None:
    masked = mask_secrets({"dsn": dsn})["dsn"]
    assert PASSWORD not in masked
    assert "****" in masked


def test_mask_secrets_keeps_the_rest_of_a_key_value_dsn() -> None:
    masked = mask_secrets({"dsn": f"Password={PASSWORD};Host=db"})["dsn"]
    assert masked == "Password=****;Host=db"


def test_mask_secrets_hides_values_of_secret_named_keys() -> None:
    masked = mask_secrets({"api_key": "sk-x", "nested": {"token": "t0k"}, "api_key_env": "K"})
    assert masked == {"api_key": "****", "nested": {"token": "****"}, "api_key_env": "K"}


def test_config_repr_and_str_do_not_show_the_dsn_password() -> None:
    config = MemoryConfig(storage="postgres", dsn=f"postgresql://app:{PASSWORD}@db/mem")
    assert PASSWORD not in repr(config)
    assert PASSWORD not in str(config)
    assert PASSWORD not in json.dumps(config.masked())


def test_llm_config_holds_only_the_name_of_the_key_variable() -> None:
    assert "api_key" not in LLMConfig.model_fields
    assert "OPENAI_API_KEY" in repr(LLMConfig(model="m"))


def test_openai_model_repr_and_errors_mask_credentials_in_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMFOLD_TEST_KEY", "sk-test-" + "k" * 30)
    model = OpenAIChatModel(
        "m",
        base_url=f"https://proxy-user:{PASSWORD}@llm.example/v1",
        api_key_env="MEMFOLD_TEST_KEY",
    )
    try:
        assert PASSWORD not in repr(model)
        assert "k" * 30 not in repr(model)
    finally:
        model.close()


def test_cli_status_prints_the_config_masked(tmp_path: Path) -> None:
    config = tmp_path / "memfold.yaml"
    config.write_text(
        f"home: {tmp_path / 'home'}\nstorage: json\ndsn: postgresql://app:{PASSWORD}@db/mem\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(cli, ["--config", str(config), "status"])
    assert result.exit_code == 0, result.output
    assert PASSWORD not in result.output
    assert "postgresql://app:****@db/mem" in result.output


def test_memory_construction_logs_no_secrets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from memfold import Memory

    caplog.set_level(logging.DEBUG)
    with Memory(MemoryConfig(home=tmp_path, dsn=f"postgresql://app:{PASSWORD}@db/mem")):
        pass
    assert PASSWORD not in caplog.text
