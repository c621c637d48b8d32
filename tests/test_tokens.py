from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memfold import tokens
from memfold.errors import ConfigError
from memfold.tokens import (
    ENCODINGS,
    TokenCounter,
    TokenizerDataError,
    get_counter,
    load_mergeable_ranks,
    tiktoken_file_sha256,
    valid_unicode,
)

# tiktoken's published hashes of the official tables (tiktoken_ext/openai_public.py)
PUBLISHED = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


@pytest.fixture(scope="module")
def cl100k() -> TokenCounter:
    return get_counter("cl100k_base")


@pytest.fixture(scope="module")
def o200k() -> TokenCounter:
    return get_counter("o200k_base")


def _vocab_dir() -> Path:
    return tokens._data_dir()


# --- exact counts ---------------------------------------------------------------------


def test_hello_world_has_the_published_token_ids(cl100k: TokenCounter, o200k: TokenCounter):
    assert cl100k.encode("hello world") == [15339, 1917]
    assert o200k.encode("hello world") == [24912, 2375]
    assert cl100k.count("hello world") == 2
    assert o200k.count("hello world") == 2


@pytest.mark.parametrize(
    ("text", "expected_cl100k", "expected_o200k"),
    [
        ("", 0, 0),
        ("Hello, world!", 4, 4),
        ("The quick brown fox jumps over the lazy dog.", 10, 10),
        ("你好，世界", 6, 3),
        ("我喜欢简洁的回答", 12, 6),
    ],
)
def test_known_counts(
    cl100k: TokenCounter, o200k: TokenCounter, text: str, expected_cl100k: int, expected_o200k: int
):
    assert cl100k.count(text) == expected_cl100k
    assert o200k.count(text) == expected_o200k


def test_o200k_counts_chinese_in_fewer_tokens_than_cl100k(
    cl100k: TokenCounter, o200k: TokenCounter
):
    text = "用户喜欢简洁的回答，并且正在开发一个记忆系统。"
    assert o200k.count(text) < cl100k.count(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_cached_counts_equal_the_encoders_token_count_on_any_text(text: str):
    for name in ENCODINGS:
        counter = get_counter(name)
        assert counter.count(text) == len(counter.encode(text))
        assert counter.count(text) == len(counter.encode(text))  # cached value too


def test_lone_surrogates_are_counted_without_error(cl100k: TokenCounter):
    text = "a\udc80b"
    assert cl100k.count(text) == len(cl100k.encode(text))


def test_special_token_text_is_counted_as_ordinary_text(cl100k: TokenCounter):
    text = "before <|endoftext|> after <|fim_prefix|>"
    assert cl100k.count(text) > 5
    assert 100257 not in cl100k.encode(text)
    assert cl100k.decode(cl100k.encode(text)) == text


def test_counter_is_callable_like_a_plain_count_function(cl100k: TokenCounter):
    assert cl100k("hello world") == 2


# --- truncate ---------------------------------------------------------------------------


def test_truncate_returns_text_unchanged_when_it_fits(cl100k: TokenCounter):
    assert cl100k.truncate("hello world", 2) == "hello world"
    assert cl100k.truncate("hello world", 0) == ""


def test_truncate_cuts_on_a_token_boundary(cl100k: TokenCounter):
    assert cl100k.truncate("hello world and more", 2) == "hello world"


def test_truncate_never_splits_a_multibyte_character(cl100k: TokenCounter):
    # "世" is two tokens in cl100k: keeping only its first token would be broken UTF-8.
    assert cl100k.encode("世") == [3574, 244]
    assert cl100k.truncate("你好世界", 2) == "你好"
    assert cl100k.truncate("你好世界", 3) == "你好"


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from(list("ab 世界你好éé🙂\n.,<>&")) | st.characters(), max_size=80
    ),
    limit=st.integers(min_value=0, max_value=40),
    name=st.sampled_from(ENCODINGS),
)
def test_truncate_stays_within_limit_and_is_a_valid_prefix(text: str, limit: int, name: str):
    counter = get_counter(name)
    cut = counter.truncate(text, limit)
    assert counter.count(cut) <= limit
    assert valid_unicode(text).startswith(cut)
    cut.encode("utf-8")  # valid UTF-8, even when the input held lone surrogates
    if counter.count(text) <= limit:
        assert cut == valid_unicode(text)


def test_lone_surrogates_are_counted_and_truncated_as_replacement_characters(
    cl100k: TokenCounter,
):
    text = "ab\ud800cd"
    assert valid_unicode(text) == "ab\ufffdcd"
    assert cl100k.count(text) == cl100k.count("ab\ufffdcd")
    assert cl100k.truncate(text, 100) == "ab\ufffdcd"


# --- cache ------------------------------------------------------------------------------


def test_count_cache_is_bounded(cl100k: TokenCounter):
    small = TokenCounter("cl100k_base", cache_size=8)
    for i in range(50):
        assert small.count(f"text number {i}") == cl100k.count(f"text number {i}")
    assert small.cache_len() == 8
    small.clear_cache()
    assert small.cache_len() == 0


def test_very_long_strings_are_counted_without_caching():
    counter = TokenCounter("cl100k_base", cache_size=4)
    text = " word" * 10_000
    assert counter.count(text) == 10_000
    assert counter.cache_len() == 0


def test_counting_from_many_threads_gives_the_same_answers(cl100k: TokenCounter):
    texts = [f"thread text {i} 中文 {i * 7}" for i in range(200)]
    expected = [len(cl100k.encode(t)) for t in texts]
    results: list[list[int]] = []

    def work() -> None:
        results.append([cl100k.count(t) for t in texts])

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 8


# --- get_counter and configuration errors -----------------------------------------------


def test_get_counter_returns_one_shared_instance_per_encoding():
    assert get_counter("cl100k_base") is get_counter("cl100k_base")
    assert get_counter() is get_counter("cl100k_base")
    assert get_counter("o200k_base").name == "o200k_base"


def test_unknown_encoding_is_a_config_error_listing_the_allowed_names():
    with pytest.raises(ConfigError, match=r"p50k_base.*cl100k_base, o200k_base"):
        get_counter("p50k_base")


def test_cache_size_below_one_is_rejected():
    with pytest.raises(ConfigError, match="cache_size=0"):
        TokenCounter("cl100k_base", cache_size=0)


# --- data verification ------------------------------------------------------------------


@pytest.mark.parametrize("name", ENCODINGS)
def test_packaged_tables_match_tiktokens_published_hash(name: str):
    spec = tokens._SPECS[name]
    ranks = load_mergeable_ranks(_vocab_dir() / spec.file, spec.sha256)
    assert tiktoken_file_sha256(ranks) == PUBLISHED[name] == spec.published_sha256
    assert len(ranks) == (100_256 if name == "cl100k_base" else 199_998)


def test_hello_has_its_published_rank():
    spec = tokens._SPECS["cl100k_base"]
    assert load_mergeable_ranks(_vocab_dir() / spec.file, spec.sha256)[b"hello"] == 15339


def _raw_table(name: str) -> bytes:
    return gzip.decompress((_vocab_dir() / tokens._SPECS[name].file).read_bytes())


def _write_table(folder: Path, name: str, data: bytes) -> None:
    (folder / tokens._SPECS[name].file).write_bytes(gzip.compress(data))


def test_corrupted_table_raises_tokenizer_data_error_naming_file_and_fix(tmp_path: Path):
    data = bytearray(_raw_table("cl100k_base"))
    # Change one rank (the last 4 bytes): same shape, different table.
    data[-4:] = (int.from_bytes(data[-4:], "little") + 1).to_bytes(4, "little")
    _write_table(tmp_path, "cl100k_base", bytes(data))
    with pytest.raises(TokenizerDataError) as caught:
        TokenCounter("cl100k_base", data_dir=tmp_path)
    message = str(caught.value)
    assert "cl100k_base.vocab.gz" in message
    assert "does not match" in message
    assert "pip install --force-reinstall memfold" in message
    assert isinstance(caught.value, ConfigError)


def test_truncated_table_raises_tokenizer_data_error(tmp_path: Path):
    _write_table(tmp_path, "o200k_base", _raw_table("o200k_base")[:1000])
    with pytest.raises(TokenizerDataError, match="truncated"):
        TokenCounter("o200k_base", data_dir=tmp_path)


def test_a_cut_gzip_file_raises_tokenizer_data_error(tmp_path: Path):
    packed = (_vocab_dir() / tokens._SPECS["o200k_base"].file).read_bytes()
    (tmp_path / tokens._SPECS["o200k_base"].file).write_bytes(packed[:5000])
    with pytest.raises(TokenizerDataError, match="truncated or not gzip"):
        TokenCounter("o200k_base", data_dir=tmp_path)


def test_missing_table_raises_tokenizer_data_error(tmp_path: Path):
    with pytest.raises(TokenizerDataError, match=r"cl100k_base\.vocab\.gz: cannot be read"):
        TokenCounter("cl100k_base", data_dir=tmp_path)


def test_default_data_dir_is_used_when_monkeypatched_to_a_corrupt_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    data = bytearray(_raw_table("o200k_base"))
    data[10] ^= 0xFF
    _write_table(tmp_path, "o200k_base", bytes(data))
    monkeypatch.setattr(tokens, "_data_dir", lambda: tmp_path)
    with pytest.raises(TokenizerDataError, match=r"o200k_base\.vocab\.gz"):
        TokenCounter("o200k_base")


def test_memory_loads_a_table_only_when_it_first_counts(tmp_path: Path):
    script = (
        "import sys, memfold, memfold.tokens as t\n"
        "from memfold import Memory\n"
        "m = Memory(home=sys.argv[1])\n"
        "m.add_fact('Likes tea')\n"
        "print(len(t._counters), 'quicktok' in sys.modules, 'numpy' in sys.modules)\n"
        "m.context()\n"
        "print(len(t._counters))\n"
        "m.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "home")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "False", "False", "1"]


def test_patterns_and_special_tokens_match_tiktokens_official_definitions(
    monkeypatch: pytest.MonkeyPatch,
):
    from tiktoken_ext import openai_public

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    for name in ENCODINGS:
        official = openai_public.ENCODING_CONSTRUCTORS[name]()
        spec = tokens._SPECS[name]
        assert spec.pattern == official["pat_str"]
        assert spec.special_tokens == official["special_tokens"]


# --- no network, ever -------------------------------------------------------------------

_OFFLINE_PRELUDE = """
import socket

def _refuse(*args, **kwargs):
    raise OSError("network access attempted during an offline test")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


def test_counting_works_with_the_network_blocked_and_an_empty_tiktoken_cache(tmp_path: Path):
    cache = tmp_path / "cache"
    cache.mkdir()
    script = _OFFLINE_PRELUDE + textwrap.dedent(
        """
        from memfold.tokens import get_counter
        print(get_counter("cl100k_base").count("hello world 你好"))
        print(get_counter("o200k_base").count("hello world 你好"))
        """
    )
    env = {
        **os.environ,
        "TIKTOKEN_CACHE_DIR": str(cache),
        "DATA_GYM_CACHE_DIR": str(cache),
        "NO_PROXY": "*",
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["5", "4"]
    assert list(cache.iterdir()) == []


def test_offline_prelude_really_blocks_the_network(tmp_path: Path):
    script = _OFFLINE_PRELUDE + "socket.create_connection(('example.com', 80))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    assert "network access attempted" in done.stderr
