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


QUERY_KEY = "sk-proj-QUERYKEY" + "Q" * 24
BASE_URLS = [
    f"http://proxy:{PASSWORD}@gw.internal/v1?api_key={QUERY_KEY}",
    f"https://gw.internal/v1?model=x&key={QUERY_KEY}",
    f"https://gw.internal/v1?token={QUERY_KEY}&a=1",
    f"https://gw.internal/v1?Access-Token={QUERY_KEY}",
    f"https://blob.example/c?sv=1&sig={QUERY_KEY}",
    f"https://gw.internal/cb#access_token={QUERY_KEY}&state=s",
    f"https://gw.internal/v1?openai_api_key={QUERY_KEY}",
]


@pytest.mark.parametrize("url", BASE_URLS)
def test_config_reprs_and_masked_hide_base_url_credentials(url: str) -> None:
    """D7: repr/str of the configs printed base_url whole; masked() kept query keys."""
    config = MemoryConfig.build(llm={"model": "m", "api_key_env": None, "base_url": url})
    shown = [repr(config), str(config), repr(config.llm), str(config.llm)]
    shown.append(json.dumps(config.masked()))
    for text in shown:
        assert PASSWORD not in text
        assert QUERY_KEY not in text
        assert "****" in text
    assert "gw.internal" in repr(config.llm) or "blob.example" in repr(config.llm)


def test_mask_url_keeps_everything_but_the_credentials() -> None:
    from memfold.config import mask_url

    url = "https://u:pw@h.example:8443/v1/chat?model=gpt&api_key=sk-1&x=a%20b#frag"
    assert (
        mask_url(url) == "https://u:****@h.example:8443/v1/chat?model=gpt&api_key=****&x=a%20b#frag"
    )
    assert (
        mask_url("see https://h/?monkey=1 and ftp://a:b@c")
        == "see https://h/?monkey=1 and ftp://a:****@c"
    )
    assert mask_url(None) is None
    assert mask_url("no url here") == "no url here"


def test_openai_model_repr_and_error_messages_mask_query_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memfold.llm.openai import _where

    monkeypatch.setenv("MEMFOLD_TEST_KEY", "sk-test-" + "k" * 30)
    model = OpenAIChatModel("m", base_url=BASE_URLS[0], api_key_env="MEMFOLD_TEST_KEY")
    try:
        for text in (repr(model), _where(model)):
            assert QUERY_KEY not in text
            assert PASSWORD not in text
    finally:
        model.close()


def test_cli_status_masks_query_keys_in_base_url(tmp_path: Path) -> None:
    config = tmp_path / "memfold.yaml"
    config.write_text(
        f"home: {tmp_path / 'home'}\nllm:\n  model: m\n  api_key_env: null\n"
        f"  base_url: '{BASE_URLS[0]}'\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(cli, ["--config", str(config), "status"])
    assert result.exit_code == 0, result.output
    assert QUERY_KEY not in result.output
    assert PASSWORD not in result.output
