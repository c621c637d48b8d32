"""Secret redaction: API keys, tokens, passwords, card numbers (and optionally e-mail
addresses and phone numbers) become ``[REDACTED:<kind>]`` before text reaches an
extractor or a store (REFERENCE.md defect 15).

Detection is by format: vendor token shapes (prefix + length + alphabet), JWTs,
private-key blocks, passwords in URLs and ``key=value`` strings, statements such as
"my password is …" / "密码是…", and Luhn-valid card numbers with a known issuer prefix.
Each detector is a pattern plus an optional check of the matched value, so look-alikes
(git SHAs, UUIDs, digests, timestamps) are left alone. A cheap pre-filter skips text
that cannot hold any secret, which is most chat: redaction runs on every recorded turn.

Why not a detector library: ``detect-secrets`` was measured (``benchmarks/bench_redact.py``);
its plugins report values rather than positions, miss several formats we need
(Anthropic, Google, fine-grained GitHub tokens, passwords in prose, cards, whole key
blocks) and importing them costs ~180 ms and pulls in ``requests``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from memfold.model import Message

if TYPE_CHECKING:
    from memfold.config import MemoryConfig

__all__ = ["Finding", "Redactor", "is_only_redaction", "redact_messages", "redactor_for"]

Check = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret found in a text: its kind and the ``[start, end)`` span that is replaced."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Detector:
    kind: str
    pattern: re.Pattern[str]
    group: int | str = 0
    check: Check | None = None
    #: The detector runs only when one of these substrings is in the text (lower-cased
    #: when ``lower``) or ``hint`` matches: ``in`` tests are far cheaper than a scan.
    hints: tuple[str, ...] = ()
    lower: bool = False
    hint: re.Pattern[str] | None = None
    min_digits: int = 0
    #: Only text with a non-ASCII character can match (a Chinese verb, say).
    non_ascii: bool = False

    def might_match(self, view: _View) -> bool:
        if self.non_ascii and view.ascii is view.text:
            return False
        if self.min_digits:
            return view.digits() >= self.min_digits
        if self.hint is not None:
            return self.hint.search(view.ascii) is not None
        haystack = view.lower if self.lower else view.ascii
        if not self.hints[0].isascii():
            haystack = view.text
        return any(h in haystack for h in self.hints)


@lru_cache(maxsize=4096)
def _nfkc(char: str) -> str:
    return unicodedata.normalize("NFKC", char)


def _fold(text: str) -> str:
    """``text`` with each character replaced by its NFKC form when that is one character
    (full-width ``：１２ａ`` → ``:12a``, ideographic space → space), so detectors see
    the ASCII shapes they know. One character for one keeps every span valid in the
    original text; expansions ("…" → "...", "ﬁ" → "fi") are left as they are."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    for char in set(text):
        if char > "\x9f":
            folded = _nfkc(char)
            if folded != char and len(folded) == 1:
                # a few distinct characters: str.replace beats a translate table
                text = text.replace(char, folded)
    return text


class _View:
    """A text folded for detection (``_fold``) and its ASCII-only projections, for hint
    checks. Dropping non-ASCII characters can only make ASCII hints appear more often,
    never hide one; searching pure-ASCII strings is several times faster than mixed CJK
    text."""

    __slots__ = ("_digits", "ascii", "lower", "text")

    def __init__(self, text: str, *, folded: bool = False) -> None:
        text = text if folded else _fold(text)
        self.text = text
        self.ascii = text if text.isascii() else text.encode("ascii", "ignore").decode("ascii")
        self.lower = self.ascii.lower()
        self._digits = -1

    def digits(self) -> int:
        if self._digits < 0:
            self._digits = len(self.ascii.encode("ascii").translate(None, _NOT_DIGITS))
        return self._digits


_NOT_DIGITS = bytes(c for c in range(256) if not 48 <= c <= 57)


# Token characters: a match must not start or end inside a longer token.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


_CARD_PREFIX = re.compile(
    r"4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(?:0[0-5]|[68])|6(?:011|5|4[4-9]|2)|35"
)


def _is_card(text: str) -> bool:
    groups = re.split(r"[ -]", text)
    digits = "".join(groups)
    if not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(digits):
        return False
    if len(groups) > 1 and (len(set(re.findall(r"[ -]", text))) > 1 or min(map(len, groups)) < 3):
        return False  # "4111 1111-1111 1111" or "41 11 11 …" is not how cards are written
    return _luhn(digits)


def _mixed(text: str) -> bool:
    """A random-looking token: has a digit and a letter."""
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def _aws_secret(text: str) -> bool:
    return (
        any(c.isdigit() for c in text)
        and any(c.islower() for c in text)
        and any(c.isupper() for c in text)
    )


# Words that follow "password is/:" in ordinary talk about passwords, not a password.
_NOT_A_PASSWORD = frozenset(
    """
    a an the my your our their his her its this that it not no none null empty blank
    required optional incorrect correct wrong invalid valid right ok okay fine good bad
    too very so still now being been set unset reset changed expired stored saved hashed
    encrypted missing needed necessary mandatory strong weak secure insecure long short
    same different case protected rotated updated shown hidden masked redacted visible
    in on at for of to from with by as and or but if when where which what who how
    str string int bool bytes char varchar text number any secretstr none true false
    default something anything whatever nothing later there here
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


# Words of validator messages and rules quoted after "password is": "'too short'",
# "'at least 12 characters'". A quoted phrase mostly made of these is not a passphrase.
_MESSAGE_WORDS = _NOT_A_PASSWORD | frozenset(
    """
    least most must should contain contains containing characters chars letters digits
    symbols numbers be is are enough match matches long length minimum maximum only
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


def _password_value(text: str) -> bool:
    value = text.strip("\"'`“”‘’.,;:!?)(")
    if len(set(value.casefold())) == 1:
        return False  # masked or a placeholder: "********", "xxxxxxxx"
    words = value.casefold().split()
    if len(words) > 1:  # a quoted passphrase: "correct horse battery staple"
        common = sum(word.strip(".,;:!?") in _MESSAGE_WORDS for word in words)
        return len(value) >= 8 and common * 2 < len(words)
    return len(value) >= 4 and value.casefold() not in _NOT_A_PASSWORD


# A reference to a value rather than the value: ``${VAR}``, ``$VAR``, ``$(command)``,
# ```command```, ``{{ var }}``, ``<placeholder>``, ``%(name)s``. Passwords often hold
# ``$``, ``<`` or ``%`` themselves, so only a whole value of one of these shapes counts.
_PLACEHOLDER = re.compile(
    r"\$\{?[A-Za-z_]\w*\}?|\$\(.*\)|`[^`]*`|\{\{.*\}\}|\{[A-Za-z_]\w*\}|<[^<>]*>|%\(\w+\)s"
    r"|!(?:vault|env_var|env|secret|Ref|Sub|GetAtt|ImportValue|Join)"  # YAML tags
)
# Code: a call or subscript (``get()``, ``os.environ['X']``) or a dotted name.
_CODE_VALUE = re.compile(r"[A-Za-z_][\w.]*[(\[].*|[A-Za-z_]\w*\.[A-Za-z_][\w.]*")


def _assigned_password(text: str) -> bool:
    """``password=…``/``password: …`` with a literal, not code (``password=get()``)."""
    value = text.strip("\"'")
    return (
        _password_value(value)
        and _CODE_VALUE.fullmatch(value) is None
        and _PLACEHOLDER.fullmatch(value) is None
    )


def _stated_password(text: str) -> bool:
    """``my password is …`` or ``password: …`` with a value, not a placeholder."""
    return _password_value(text) and _PLACEHOLDER.fullmatch(text.strip("\"'`“”‘’")) is None


def _colon_password(text: str) -> bool:
    """``password: …`` with a value, not a placeholder or code (``process.env.X``)."""
    value = text.strip("\"'`“”‘’")
    return _stated_password(text) and _CODE_VALUE.fullmatch(value) is None


def _cjk_password_value(text: str) -> bool:
    return (
        re.search(r"[A-Za-z0-9]", text) is not None
        and _password_value(text)
        and _PLACEHOLDER.fullmatch(text) is None
        and _NOT_A_KEY.fullmatch(text) is None
    )


# Names of algorithms, formats and sizes that follow "密码"/"密钥" in talk about them.
_NOT_A_KEY = re.compile(
    r"(?i:sha-?\d*|md5|bcrypt|scrypt|argon2\w*|pbkdf2\w*|aes-?\d*|rsa-?\d*|des3?|ecdsa|"
    r"ed25519|hmac\w*|base64|utf-?8|jwt|oauth2?|https?|v\d+|\d{1,5}(?:bit|bits|位)?"
    r"|\d{1,3}\s*[-~]\s*\d{1,3})"
)


def _bare_cjk_password(text: str) -> bool:
    """ "密码 abc12345" with no verb: letters and digits, or six digits or more."""
    has_digit = any(c.isdigit() for c in text)
    has_alpha = any(c.isalpha() for c in text)
    return (
        (has_digit and (has_alpha or len(text) >= 6))
        and len(text) >= 6
        and _NOT_A_KEY.fullmatch(text) is None
    )


def _cjk_secret_value(text: str) -> bool:
    return len(text) >= 8 and _mixed(text) and _NOT_A_KEY.fullmatch(text) is None


_PASSWORD_WORD = r"(?:password|passphrase|passcode|passwd|pass\s?word|pwd|pw)"  # noqa: S105
_QUALIFIER = r"(?:\s+(?:for|to|of|on)(?:\s+[^\s,;:\[\]]+){1,3}?)?"
# A value in quotes may hold spaces ("correct horse battery staple"); the quotes stay.
_QUOTED_VALUE = (
    r"(?<=')[^'\n]{1,100}?(?=')|(?<=\")[^\"\n]{1,100}?(?=\")|(?<=`)[^`\n]{1,100}?(?=`)"
    r"|(?<=“)[^”\n]{1,100}?(?=”)|(?<=‘)[^’\n]{1,100}?(?=’)"
)
_VALUE = r"[\"'`“‘]?(?P<v>" + _QUOTED_VALUE + r"|[^\s\"'`”’]+?)[\"'`”’]?(?=[\s,;)]|[.!?](?:\s|$)|$)"
# A CJK statement's value: printable ASCII up to the next non-ASCII character, without
# the punctuation that ends the clause ("密码是abc123，记住" folds "，" to ",").
_CJK_VALUE = r"[\"'“「]?(?P<v>[!#-&(-~][!-~]*?)(?=[.,;:!?)\]」”\"']*(?![!-~]))"
_CJK_BARE_VALUE = r"(?P<v>[A-Za-z0-9][!-~]*?)(?=[.,;:!?)\]」”\"']*(?![!-~]))"
_CJK_VERB = r"(?:是|为|為|:|=|就是|改成了?|改为|设置为|设为|换成了?)(?:\s*[:=])?"

_PHONE_HINT = re.compile(r"\d[ .\-()]{0,2}\d[ .\-()]{0,2}\d[ .\-()]{0,2}\d")

_SECRETS: tuple[_Detector, ...] = (
    _Detector(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            re.DOTALL,
        ),
        hints=("PRIVATE KEY",),
    ),
    _Detector(
        "anthropic_key", re.compile(_B + r"sk-ant-[A-Za-z0-9_\-]{20,}" + _E), hints=("sk-ant-",)
    ),
    _Detector(
        "openai_key",
        re.compile(_B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}" + _E),
        check=_mixed,
        hints=("sk-",),
    ),
    _Detector(
        "aws_access_key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])"),
        hints=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
    ),
    _Detector(
        "aws_secret_key",
        re.compile(
            r"(?i:aws[^\n]{0,20}?(?:secret|key)|secret[ _-]?access[ _-]?key)[^\n]{0,30}?"
            r"(?<![A-Za-z0-9/+])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        "v",
        _aws_secret,
        hints=("aws", "secret"),
        lower=True,
    ),
    _Detector(
        "github_token",
        re.compile(_B + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})" + _E),
        hints=("hp_", "ho_", "hu_", "hs_", "hr_", "github_pat_"),
    ),
    _Detector(
        "gitlab_token",
        re.compile(_B + r"gl(?:pat|dt|ft|rt|soat|cbt|imt|ptt|oas)-[A-Za-z0-9_\-]{20,}" + _E),
        hints=("gl",),
    ),
    _Detector(
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/\-]+"),
        hints=("hooks.slack.com",),
    ),
    _Detector(
        "slack_token", re.compile(_B + r"xox[abposre]-[A-Za-z0-9\-]{10,}" + _E), hints=("xox",)
    ),
    _Detector("google_api_key", re.compile(_B + r"AIza[0-9A-Za-z_\-]{35}" + _E), hints=("AIza",)),
    _Detector(
        "stripe_key",
        re.compile(_B + r"(?:(?:sk|rk)_(?:live|test)|pk_live|whsec)_[0-9A-Za-z]{16,}" + _E),
        hints=("_live_", "_test_", "whsec_"),
    ),
    _Detector("twilio_key", re.compile(_B + r"(?:SK|AC)[0-9a-f]{32}" + _E), hints=("SK", "AC")),
    _Detector(
        "sendgrid_key",
        re.compile(_B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E),
        hints=("SG.",),
    ),
    _Detector("npm_token", re.compile(_B + r"npm_[A-Za-z0-9]{36}" + _E), hints=("npm_",)),
    _Detector(
        "pypi_token", re.compile(_B + r"pypi-AgE[A-Za-z0-9_\-]{50,}" + _E), hints=("pypi-AgE",)
    ),
    _Detector("huggingface_token", re.compile(_B + r"hf_[A-Za-z0-9]{34,}" + _E), hints=("hf_",)),
    _Detector(
        "jwt",
        re.compile(_B + r"eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{8,}" + _E),
        hints=("eyJ",),
    ),
    _Detector(
        "telegram_token", re.compile(r"(?<!\d)\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _E), hints=(":AA",)
    ),
    _Detector(
        "azure_storage_key",
        re.compile(r"AccountKey=(?P<v>[A-Za-z0-9+/]{86}==)"),
        "v",
        hints=("AccountKey=",),
    ),
    _Detector(
        "bearer_token",
        re.compile(r"\bBearer\s+(?P<v>[A-Za-z0-9_\-.=+/~]{20,})", re.IGNORECASE | re.ASCII),
        "v",
        _mixed,
        hints=("bearer",),
        lower=True,
    ),
    _Detector(
        "url_password",
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:(?P<v>[^\s@/]+)@[^\s@]"),
        "v",
        hints=("://",),
    ),
    _Detector(
        "password",
        re.compile(
            # also env-style names: PGPASSWORD, MYSQL_ROOT_PASSWORD, DB_PASS, redis.password
            r"(?<![A-Za-z0-9_.\-])(?:[A-Za-z0-9]*[_.\-])*(?:[A-Za-z]*(?:password|passwd|pwd)|pass|pw)"
            r"[\"']?\s*[=:]\s*"
            r"(?P<v>'[^'\n]+'|\"[^\"\n]+\"|<[^<>\n]*>(?=[\s;,&]|$)|\$\([^()\n]*\)|[^\s;,&'\"]+)",
            re.IGNORECASE | re.ASCII,
        ),
        "v",
        _assigned_password,
        hints=("pass", "pw"),
        lower=True,
    ),
    _Detector(
        "password",  # "my password is …", "I changed my password to …"
        re.compile(
            r"\b(?:"
            + _PASSWORD_WORD
            + _QUALIFIER
            + r"\s+(?:is|was)(?:\s+now)?"
            + r"|(?:set|changed?|reset|updated?)\s+(?:(?:my|the|our|your|its)\s+)?"
            + _PASSWORD_WORD
            + r"(?:\s+(?:for|of|on)(?:\s+[^\s,;:]+){1,3}?)?\s+to)\s*:?\s*"
            + _VALUE,
            re.IGNORECASE | re.ASCII,
        ),
        "v",
        _stated_password,
        hints=("pass", "pw"),
        lower=True,
    ),
    _Detector(
        "password",
        re.compile(
            r"\b" + _PASSWORD_WORD + _QUALIFIER + r"\s*:\s*" + _VALUE, re.IGNORECASE | re.ASCII
        ),
        "v",
        _colon_password,
        hints=("pass", "pw"),
        lower=True,
    ),
    _Detector(
        "password",  # a PIN is digits: "the pin is pulled high" and "pin: 3.3V" are not
        re.compile(
            r"\bpin(?:\s?code|\s+number)?" + _QUALIFIER + r"(?:\s+(?:is|was)(?:\s+now)?\s*:?|\s*:)"
            r"\s*[\"'`“‘]?(?P<v>\d{4,8})(?![\w.\-])",
            re.IGNORECASE | re.ASCII,
        ),
        "v",
        hint=re.compile(r"\bpin\b", re.IGNORECASE),
    ),
    _Detector(
        "password",
        re.compile(
            r"(?:密码|密碼|口令)(?:[^，。,；;！!？?\s]{0,6}?)" + _CJK_VERB + r"\s*" + _CJK_VALUE
        ),
        "v",
        _cjk_password_value,
        hints=("密码", "密碼", "口令"),
    ),
    _Detector(
        "password",  # no verb: "密码 abc12345", "wifi密码abc12345"
        re.compile(r"(?:密码|密碼|口令)\s*" + _CJK_BARE_VALUE),
        "v",
        _bare_cjk_password,
        hints=("密码", "密碼", "口令"),
    ),
    _Detector(
        "secret",
        re.compile(
            r"(?:密钥|秘钥|私钥|令牌|授权码)(?:[^，。,；;！!？?\s]{0,6}?)"
            + _CJK_VERB
            + r"\s*"
            + _CJK_VALUE
        ),
        "v",
        _cjk_secret_value,
        hints=("密钥", "秘钥", "私钥", "令牌", "授权码"),
    ),
    _Detector(
        "secret",  # "token 是 …", "我的token是…"
        re.compile(
            r"(?<![A-Za-z0-9_])(?i:api[ _-]?key|token|secret|access[ _-]?key)\s*"
            r"(?:是|为|為|就是|改成了?|改为|设置为|设为|换成了?)(?:\s*[:=])?\s*" + _CJK_VALUE
        ),
        "v",
        _cjk_secret_value,
        hints=("key", "token", "secret"),
        lower=True,
        non_ascii=True,
    ),
    _Detector(
        "secret",
        re.compile(
            r"\b(?:api[ _-]?key|secret(?:[ _-]key)?|client[ _-]secret|access[ _-]token"
            r"|auth[ _-]token|token)(?:\s+(?:is|was)\s*:?|\s*[:=])\s*[\"'`]?"
            r"(?P<v>[A-Za-z0-9_\-./+=]{12,})",
            re.IGNORECASE | re.ASCII,
        ),
        "v",
        _mixed,
        hints=("key", "secret", "token"),
        lower=True,
    ),
    _Detector(
        "card_number",
        re.compile(r"(?<![\d\-.])\d(?:[ \-]?\d){12,18}(?![\d\-])"),
        0,
        _is_card,
        min_digits=13,
    ),
)

_EMAIL = _Detector(
    "email",
    re.compile(
        r"(?<![\w.+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"
    ),
    hints=("@",),
)
_PHONE = _Detector(
    "phone",
    re.compile(
        r"(?<![\w+])(?:\+\d{1,3}[ .\-]?(?:\(\d{1,4}\)[ .\-]?)?\d{2,4}(?:[ .\-]?\d{2,4}){1,4}"
        r"|(?<!\d)1[3-9]\d{9}|\(?\d{3}\)?[ .\-]\d{3}[ .\-]\d{4})(?![\w\-])"
    ),
    hint=_PHONE_HINT,
)


_MARKER_START = "[REDACTED:"
_MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")
# What a fact about a secret says besides the secret: "My OpenAI API key is [REDACTED:…]".
_FILLER_WORDS = frozenset(
    """
    a an the my your our their his her its this that these those here it is was are be
    now new old current currently actual real same also just and or of for to on in as
    user user's users uses use using has have had set saved stored gave shared provided
    key keys token tokens password passwords passphrase passcode pin pwd pw secret secrets
    api access auth credential credentials login account code value string id number
    personal private public bearer jwt webhook url connection card credit debit bank
    email e-mail mail address phone mobile tel telephone cell
    openai anthropic aws amazon github gitlab slack google stripe twilio sendgrid npm
    pypi hugging face huggingface telegram azure
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_FILLER_ZH = re.compile(
    r"用户|我们|我|的|是|为|為|叫|密码|密碼|口令|密钥|秘钥|私钥|令牌|授权码|账号|帐号|账户|登录|"
    r"支付|银行卡|信用卡|卡号|邮箱|电话|手机号?|号码|新|旧|现在|目前|当前|这个|那个|了|一个"
)
_WORDS = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
# "<the secret's name> is <marker>": "The password for the staging db is [REDACTED:…]".
_SECRET_IS_MARKER = re.compile(
    r"(?i)(?:password|passphrase|passcode|pin|pwd|pw|key|token|secret|credentials?|"
    r"密码|密碼|口令|密钥|秘钥|私钥|令牌|授权码)[^.;!?\n。；！？]{0,60}?"
    r"(?:\bis|\bwas|=|:|：|是|为|為)\s*"
    r"\[REDACTED:[a-z_]+\](?:\s*(?:,|and|、|和|与)\s*\[REDACTED:[a-z_]+\])*\s*[.。!！]?\s*$"
)


def is_only_redaction(text: str) -> bool:
    """True when ``text`` holds a redaction marker and nothing else worth remembering:
    "My key is [REDACTED:openai_key]", "API token: [REDACTED:secret]", "密码是[REDACTED:password]".

    A fact like that tells a later conversation only that a secret once existed. Text that
    says more ("Deploys to staging with [REDACTED:aws_access_key]") is not only a
    redaction.
    """
    if _MARKER_START not in text:
        return False
    statement = _SECRET_IS_MARKER.search(text)
    if statement is not None and _only_filler(text[: statement.start()]):
        return True  # its one claim is the secret's value, whatever secret it names
    return _only_filler(text)


def _only_filler(text: str) -> bool:
    rest = _FILLER_ZH.sub(" ", _MARKER.sub(" ", text)).casefold().replace("’", "'")
    return all(word in _FILLER_WORDS for word in _WORDS.findall(rest))


class Redactor:
    """Finds secrets in text and replaces them with ``[REDACTED:<kind>]``.

    Secrets are always looked for; ``emails`` and ``phones`` add those kinds. Stateless
    and thread-safe; build one and reuse it.
    """

    def __init__(self, *, secrets: bool = True, emails: bool = False, phones: bool = False) -> None:
        detectors: list[_Detector] = list(_SECRETS) if secrets else []
        if emails:
            detectors.append(_EMAIL)
        if phones:
            detectors.append(_PHONE)
        self._detectors = tuple(detectors)
        self._secrets = secrets
        self._emails = emails
        self._phones = phones

    def __repr__(self) -> str:
        return f"Redactor(secrets={self._secrets}, emails={self._emails}, phones={self._phones})"

    def findings(self, text: str) -> list[Finding]:
        """Non-overlapping secrets in ``text``, in order (the longest wins an overlap)."""
        if not text:
            return []
        return self._scan(_View(text), self._detectors)

    def redact(self, text: str) -> str:
        """``text`` with every finding replaced by ``[REDACTED:<kind>]``."""
        return _replace(text, self.findings(text))

    def __call__(self, text: str) -> str:
        return self.redact(text)

    def redact_all(self, texts: Sequence[str]) -> list[str]:
        """``redact`` for each text (the same string objects when nothing was found).

        Faster than one ``redact`` per text: the detectors' hints are checked once on the
        joined texts, so detectors that cannot match anywhere are skipped for all of them.
        """
        views = [_View(text) for text in texts]
        joined = _View("\n".join(view.text for view in views), folded=True)
        candidates = tuple(d for d in self._detectors if d.might_match(joined))
        if not candidates:
            return list(texts)
        return [
            _replace(text, self._scan(view, candidates)) if text else text
            for text, view in zip(texts, views, strict=True)
        ]

    @staticmethod
    def _scan(view: _View, detectors: Sequence[_Detector]) -> list[Finding]:
        found: list[tuple[int, int, int, str]] = []
        for priority, detector in enumerate(detectors):
            if not detector.might_match(view):
                continue
            for match in detector.pattern.finditer(view.text):
                value = match.group(detector.group)
                if not value or _MARKER_START in value:  # already redacted: idempotent
                    continue
                if detector.check is not None and not detector.check(value):
                    continue
                start, end = match.span(detector.group)
                found.append((start, -end, priority, detector.kind))
        found.sort()
        out: list[Finding] = []
        last_end = 0
        for start, neg_end, _, kind in found:
            if start >= last_end:
                out.append(Finding(kind, start, -neg_end))
                last_end = -neg_end
        return out


def _replace(text: str, findings: Sequence[Finding]) -> str:
    if not findings:
        return text
    parts: list[str] = []
    position = 0
    for finding in findings:
        parts.append(text[position : finding.start])
        parts.append(f"[REDACTED:{finding.kind}]")
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)


def redactor_for(config: MemoryConfig) -> Redactor | None:
    """The redactor the config asks for, or None when every redaction switch is off."""
    if not (config.redact_secrets or config.redact_emails or config.redact_phones):
        return None
    return Redactor(
        secrets=config.redact_secrets, emails=config.redact_emails, phones=config.redact_phones
    )


def redact_messages(messages: Sequence[Message], redactor: Redactor | None) -> tuple[Message, ...]:
    """The messages with their text redacted (the same objects when nothing changed)."""
    if redactor is None:
        return tuple(messages)
    clean = redactor.redact_all([m.content for m in messages])
    return tuple(
        m if text is m.content else replace(m, content=text)
        for m, text in zip(messages, clean, strict=True)
    )
