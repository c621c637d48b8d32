"""Exact, offline token counting for ``cl100k_base`` and ``o200k_base``.

tiktoken downloads its BPE tables on first use; without network that call can block for
many minutes (REFERENCE.md, defect 9). memfold ships the two tables in its own package
(``memfold/data/tokenizers``, from OpenAI's tiktoken, MIT), checks each against a pinned
SHA-256 when it loads it, and builds a ``tiktoken.Encoding`` from it. Nothing here
touches the network or tiktoken's cache.

A table is loaded on the first count, not at import or when a ``Memory`` is built, so
commands that never count tokens (most of the CLI) do not pay for it (~0.15 s).
Counting is tiktoken's own encoder: a second, native counter was measured to save about
0.3 ms per uncached 8,000-character count and was not worth its 50 MB of dependencies
(``benchmarks/bench_tokens.py``).
"""

from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
import operator
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memfold.errors import ConfigError

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "ENCODINGS",
    "TokenCounter",
    "TokenizerDataError",
    "get_counter",
    "load_mergeable_ranks",
    "tiktoken_file_sha256",
    "valid_unicode",
]

#: Distinct strings whose count a ``TokenCounter`` remembers (least recently used out).
DEFAULT_CACHE_SIZE = 65_536
#: Strings longer than this are counted without caching, so the cache stays small in bytes.
_MAX_CACHED_CHARS = 16_384

_REINSTALL = "pip install --force-reinstall memfold"

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
    #: SHA-256 of the uncompressed table file shipped in ``memfold/data/tokenizers``.
    sha256: str
    #: tiktoken's published SHA-256 of the same ranks in its ``.tiktoken`` format (a test
    #: checks the shipped table against it with :func:`tiktoken_file_sha256`).
    published_sha256: str
    pattern: str
    special_tokens: dict[str, int]


_SPECS: dict[str, _Spec] = {
    "cl100k_base": _Spec(
        file="cl100k_base.vocab.gz",
        sha256="4a945d497c213acde921bc8d69bc8dad9c603ea97c50c014e04ad0fadc09eecb",
        published_sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
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
        file="o200k_base.vocab.gz",
        sha256="6b17521f79788c7ace48fc75f6edde125637a90b0018427e68f28d051b2ac1fe",
        published_sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pattern=_O200K_PATTERN,
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}

#: The encodings memfold can count exactly and offline.
ENCODINGS: tuple[str, ...] = tuple(_SPECS)


class TokenizerDataError(ConfigError):
    """A packaged BPE table is missing, truncated, or does not match its pinned hash."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(
            f"tokenizer data {path}: {reason}; reinstall memfold with `{_REINSTALL}`",
            key="token_encoding",
        )
        self.path = str(path)
        self.reason = reason


def _data_dir() -> Path:
    return Path(__file__).resolve().parent / "data" / "tokenizers"


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


def tiktoken_file_sha256(ranks: dict[bytes, int]) -> str:
    """SHA-256 of ``ranks`` serialised in tiktoken's ``.tiktoken`` file format, the form
    whose hash tiktoken publishes for each encoding."""
    b64 = binascii.b2a_base64
    by_rank = sorted(ranks.items(), key=operator.itemgetter(1))
    body = b"".join([b64(token, newline=False) + b" %d\n" % rank for token, rank in by_rank])
    return hashlib.sha256(body).hexdigest()


def _read_table(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerDataError(path, f"cannot be read ({exc.strerror or exc})") from exc
    if path.suffix != ".gz":
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise TokenizerDataError(path, f"file is truncated or not gzip ({exc})") from exc


def load_mergeable_ranks(path: Path, expected_sha256: str) -> dict[bytes, int]:
    """Read a packaged table (``.vocab``, optionally gzipped) into tiktoken's
    ``mergeable_ranks``, after checking the SHA-256 of its uncompressed bytes.

    Raises:
        TokenizerDataError: the file is missing, malformed, or its hash does not match.
    """
    data = _read_table(path)
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        _parse_vocab(data, path)  # a truncated file says so, which is the better message
        raise TokenizerDataError(
            path, f"sha256 {actual} does not match the pinned {expected_sha256}"
        )
    return _parse_vocab(data, path)


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
        """Load and verify the BPE table of ``name`` (about 0.15 s; do it once).

        Raises:
            ConfigError: ``name`` is not one of ``ENCODINGS``, or ``cache_size`` < 1.
            TokenizerDataError: the packaged table is missing or corrupt.
        """
        spec = _check_name(name)
        if cache_size < 1:
            raise ConfigError(f"cache_size={cache_size}: must be at least 1")
        folder = _data_dir() if data_dir is None else data_dir
        ranks = load_mergeable_ranks(folder / spec.file, spec.sha256)
        import tiktoken

        self.name = name
        self.cache_size = cache_size
        self._encoding: tiktoken.Encoding = tiktoken.Encoding(
            name,
            pat_str=spec.pattern,
            mergeable_ranks=ranks,
            special_tokens=dict(spec.special_tokens),
        )
        # functools.lru_cache is bounded, thread-safe and implemented in C.
        self._cached_count = functools.lru_cache(maxsize=cache_size)(self._count_uncached)

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"

    def __call__(self, text: str) -> int:
        return self.count(text)

    def _count_uncached(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

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
