"""Exact, offline token counting for ``cl100k_base`` and ``o200k_base``.

tiktoken downloads its BPE tables on first use; without network that call can block for
many minutes (REFERENCE.md, defect 9). memfold instead reads the tables shipped in the
``quicktok-v1`` wheel, checks them against tiktoken's published SHA-256 hashes, and builds
a ``tiktoken.Encoding`` from them. Nothing here touches the network or tiktoken's cache.

Counting (the hot path of rendering) uses quicktok's native encoder over the same verified
tables when it agrees with tiktoken on a built-in sample at start-up (it is ~5x faster);
otherwise, or for any text it cannot take, tiktoken counts.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import importlib.util
import logging
import operator
import re
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tiktoken

from memfold.errors import ConfigError

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "ENCODINGS",
    "TokenCounter",
    "TokenizerDataError",
    "get_counter",
    "load_mergeable_ranks",
    "valid_unicode",
]

#: Distinct strings whose count a ``TokenCounter`` remembers (least recently used out).
DEFAULT_CACHE_SIZE = 65_536
#: Strings longer than this are counted without caching, so the cache stays small in bytes.
_MAX_CACHED_CHARS = 16_384

_REINSTALL = "pip install --force-reinstall quicktok-v1"

logger = logging.getLogger("memfold.tokens")

# Text the fast counter must encode exactly like tiktoken before it is trusted: the split
# patterns' corner cases (contractions, digit runs, whitespace before newlines, trailing
# spaces), CJK, emoji with joiners, combining marks, code and special-token text.
_SELF_CHECK = (
    "Hello, world! I'm Alice; we'll see you're done. It's 2026-11-30T12:00:00Z.",
    "  leading spaces\n\n\ttabs and trailing   \r\n  ",
    "12345678901234 3.14159 1,000,000 0x7f 1e-9 v1.2.3-rc.1",
    "我叫王伟，是一名产品经理，住在上海。以后都用中文回答！",
    "混合 mixed 文本 with English 和中文 123 个字",
    "emoji 👩‍💻🚀🇩🇪 and café naïve Ångström ﬁ",
    "def f(x):\n    return {'a': [1, 2, 3]}  # comment\n\n\n",
    "SELECT * FROM users WHERE id = $1 AND name <> 'x';",
    "<|endoftext|> <|fim_prefix|> text that looks special",
    "UPPERCASE Words CamelCaseWords snake_case_words kebab-case-words",
    "Ünïcödé DIACRITICS Ελληνικά Русский текст العربية हिन्दी",
    "- [preference | 0.90] Prefers concise answers (avoid: long disclaimers)\n",
)

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

# The official split patterns and special tokens of the two encodings, as published in
# tiktoken's ``tiktoken_ext/openai_public.py`` (a test checks they still match it).
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
    r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@dataclass(frozen=True, slots=True)
class _Spec:
    file: str
    sha256: str
    pattern: str
    special_tokens: dict[str, int]


_SPECS: dict[str, _Spec] = {
    "cl100k_base": _Spec(
        file="cl100k.vocab",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pattern=_CL100K_PATTERN,
        special_tokens={
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": _Spec(
        file="o200k.vocab",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pattern=_O200K_PATTERN,
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}

#: The encodings memfold can count exactly and offline.
ENCODINGS: tuple[str, ...] = tuple(_SPECS)


class TokenizerDataError(ConfigError):
    """A packaged BPE table is missing, truncated, or does not match its published hash."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(
            f"tokenizer data {path}: {reason}; reinstall it with `{_REINSTALL}`",
            key="token_encoding",
        )
        self.path = str(path)
        self.reason = reason


def _data_dir() -> Path:
    # find_spec locates the package without importing it, so a broken compiled
    # extension in quicktok cannot stop us from reading its plain data files.
    spec = importlib.util.find_spec("quicktok")
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerDataError("quicktok/data", "the quicktok-v1 package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _parse_vocab(data: bytes, path: Path) -> dict[bytes, int]:
    """Decode ``u32 count`` then ``count`` × ``[u16 length][bytes][u32 rank]`` (little endian)."""
    size = len(data)
    if size < 4:
        raise TokenizerDataError(path, "file is truncated (no header)")
    count = int.from_bytes(data[:4], "little")
    ranks: dict[bytes, int] = {}
    offset = 4
    from_bytes = int.from_bytes
    try:
        for _ in range(count):
            end = offset + 2 + (data[offset] | data[offset + 1] << 8)
            ranks[data[offset + 2 : end]] = from_bytes(data[end : end + 4], "little")
            offset = end + 4
    except IndexError:
        offset = size + 1
    if offset > size:
        raise TokenizerDataError(path, f"file is truncated after {len(ranks)} entries")
    if offset != size:
        raise TokenizerDataError(path, f"{size - offset} unexpected bytes after {count} entries")
    return ranks


def _tiktoken_file_sha256(ranks: dict[bytes, int]) -> str:
    """SHA-256 of ``ranks`` serialised in tiktoken's ``.tiktoken`` file format."""
    b64 = binascii.b2a_base64
    by_rank = sorted(ranks.items(), key=operator.itemgetter(1))
    body = b"".join([b64(token, newline=False) + b" %d\n" % rank for token, rank in by_rank])
    return hashlib.sha256(body).hexdigest()


def load_mergeable_ranks(path: Path, expected_sha256: str) -> dict[bytes, int]:
    """Read a quicktok ``.vocab`` file into tiktoken's ``mergeable_ranks``, verified by hash.

    Raises:
        TokenizerDataError: the file is missing, malformed, or its hash does not match.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerDataError(path, f"cannot be read ({exc.strerror or exc})") from exc
    ranks = _parse_vocab(data, path)
    actual = _tiktoken_file_sha256(ranks)
    if actual != expected_sha256:
        raise TokenizerDataError(
            path, f"sha256 {actual} does not match tiktoken's published {expected_sha256}"
        )
    return ranks


def valid_unicode(text: str) -> str:
    """``text`` with lone surrogates (possible in parsed JSON) replaced by U+FFFD, the way
    tiktoken reads them, so the result always encodes to UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _check_name(name: str) -> _Spec:
    spec = _SPECS.get(name)
    if spec is None:
        raise ConfigError(
            f"token_encoding={name!r}: unknown encoding; use one of {', '.join(ENCODINGS)}",
            key="token_encoding",
        )
    return spec


class TokenCounter:
    """Exact token counts for one encoding, with a bounded, thread-safe per-string cache.

    Memory text is data, so special-token text such as ``<|endoftext|>`` is encoded as
    ordinary text and never raises.
    """

    def __init__(
        self,
        name: str = "cl100k_base",
        *,
        data_dir: Path | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        """Load and verify the BPE table of ``name`` (about 0.2-0.5 s; do it once).

        Raises:
            ConfigError: ``name`` is not one of ``ENCODINGS``, or ``cache_size`` < 1.
            TokenizerDataError: the packaged table is missing or corrupt.
        """
        spec = _check_name(name)
        if cache_size < 1:
            raise ConfigError(f"cache_size={cache_size}: must be at least 1")
        folder = _data_dir() if data_dir is None else data_dir
        ranks = load_mergeable_ranks(folder / spec.file, spec.sha256)
        self.name = name
        self.cache_size = cache_size
        self._encoding = tiktoken.Encoding(
            name,
            pat_str=spec.pattern,
            mergeable_ranks=ranks,
            special_tokens=dict(spec.special_tokens),
        )
        self._fast_count = _fast_counter(name, self._encoding)
        # functools.lru_cache is bounded, thread-safe and implemented in C.
        self._cached_count = functools.lru_cache(maxsize=cache_size)(self._count_uncached)

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"

    def __call__(self, text: str) -> int:
        return self.count(text)

    def _count_uncached(self, text: str) -> int:
        if self._fast_count is not None:
            try:
                return self._fast_count(text)
            except (ValueError, TypeError, UnicodeError):  # lone surrogates: tiktoken copes
                pass
        return len(self._encoding.encode_ordinary(text))

    @property
    def engine(self) -> str:
        """Which encoder counts: ``quicktok`` (verified at start-up) or ``tiktoken``."""
        return "tiktoken" if self._fast_count is None else "quicktok"

    def count(self, text: str) -> int:
        """The exact number of tokens in ``text``."""
        if len(text) > _MAX_CACHED_CHARS:
            return self._count_uncached(text)
        return self._cached_count(text)

    def cache_len(self) -> int:
        """How many strings the count cache holds now (never more than ``cache_size``)."""
        return self._cached_count.cache_info().currsize

    def clear_cache(self) -> None:
        """Forget every cached count."""
        self._cached_count.cache_clear()

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, special-token text encoded as ordinary text."""
        return self._encoding.encode_ordinary(text)

    def decode(self, tokens: list[int]) -> str:
        """Text of ``tokens``; bytes that are not valid UTF-8 become U+FFFD."""
        return self._encoding.decode(tokens, errors="replace")

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest token-boundary prefix of ``text`` that is valid UTF-8 and counts at
        most ``max_tokens`` tokens (``text`` itself when it fits). Lone surrogates become
        U+FFFD (see ``valid_unicode``)."""
        if max_tokens <= 0:
            return ""
        text = valid_unicode(text)
        tokens = self._encoding.encode_ordinary(text)
        if len(tokens) <= max_tokens:
            return text
        for keep in range(max_tokens, 0, -1):
            try:
                prefix = self._encoding.decode_bytes(tokens[:keep]).decode("utf-8")
            except UnicodeDecodeError:
                continue  # the cut falls inside a multi-byte character
            # Re-encoding a cut piece may differ from the original tokens; check.
            if self.count(prefix) <= max_tokens:
                return prefix
        return ""


@functools.cache
def _suspect_chars() -> re.Pattern[str]:
    """One character class: the BMP code points this Python's Unicode database leaves
    unassigned, plus every astral code point (checked one by one on a match). Built once,
    ~20 ms; one regex search is the cheapest test for ordinary text."""
    ranges: list[str] = []
    start = None
    for code in range(0x10000):
        unassigned = 0xD800 <= code < 0xE000 or unicodedata.category(chr(code)) == "Cn"
        if unassigned and start is None:
            start = code
        elif not unassigned and start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(code - 1))}")
            start = None
    return re.compile(f"[{''.join(ranges)}\U00010000-\U0010ffff]")


def _may_split_differently(text: str) -> bool:
    """True when ``text`` has a code point unassigned in Python's Unicode database.

    quicktok's split pattern knows a newer Unicode than tiktoken's (e.g. CJK Extension J
    and other Unicode 17 letters): tiktoken treats those code points as unassigned and
    counts them differently. Such text is left to tiktoken, the reference.
    """
    if text.isascii():
        return False
    suspects = _suspect_chars()
    found = suspects.search(text)
    while found is not None:
        char = found.group()
        if char < "\U00010000" or unicodedata.category(char) == "Cn":
            return True
        found = suspects.search(text, found.end())
    return False


def _fast_counter(name: str, reference: tiktoken.Encoding) -> Callable[[str], int] | None:
    """quicktok's counter for ``name`` if it encodes the self-check sample exactly like
    ``reference``; None (and a debug log) when it is unavailable or disagrees."""
    try:
        import quicktok

        fast = quicktok.get_encoding(name)
        agrees = all(
            list(fast.encode_ordinary(text)) == reference.encode_ordinary(text)
            for text in _SELF_CHECK
        )
    except Exception:  # an optional speed-up: any failure means "use tiktoken"
        logger.debug("quicktok counter unavailable for %s", name, exc_info=True)
        return None
    if not agrees:
        logger.warning("quicktok disagrees with tiktoken on %s; counting with tiktoken", name)
        return None

    def count(text: str) -> int:
        if _may_split_differently(text):
            return len(reference.encode_ordinary(text))
        return len(fast.encode_ordinary(text))

    return count


_counters: dict[str, TokenCounter] = {}
_counters_lock = threading.Lock()


def get_counter(name: str = "cl100k_base") -> TokenCounter:
    """The process-wide ``TokenCounter`` for ``name``, built on first use.

    Raises:
        ConfigError: ``name`` is not one of ``ENCODINGS``.
        TokenizerDataError: the packaged table is missing or corrupt.
    """
    _check_name(name)
    counter = _counters.get(name)
    if counter is not None:
        return counter
    with _counters_lock:
        counter = _counters.get(name)
        if counter is None:
            counter = TokenCounter(name)
            _counters[name] = counter
        return counter
