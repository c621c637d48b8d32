"""Secrets recognised by where they stand, whatever the provider: values assigned to a
secret-named key (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``, headers such as
``X-Api-Key``), ``Authorization:`` headers, credentials in URLs of any scheme, password
flags of command lines, key blocks, JWTs, card numbers and IBANs.

Every pattern runs in time linear in the text: each can start only at a token boundary
and every repetition that is followed by more pattern is bounded, so no start position
re-reads an unbounded run (see ``benchmarks/bench_redact.py``, hostile inputs).
"""

from __future__ import annotations

import re

from memfold.redact._checks import (
    PLACEHOLDER,
    assigned_password,
    entropy,
    is_card,
    is_dummy,
    is_iban,
    mixed,
    prose_password,
    random_value,
    token_value,
)
from memfold.redact._engine import Detector
from memfold.redact._names import secret_name

_QUOTES = "\"'`"
_END_PUNCT = ".,;:)]}>\"'`"


# NAME = value, NAME: value, "name": "value", name => value, NAME := value; the name may
# be quoted (JSON, dict literals), subscripted (os.environ["NAME"] = …) and stand in a
# query string (?api_key=…).
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?=[A-Za-z0-9_.\-]{0,48}?(?i:key|token|secret|pass|pw|auth|cred|dsn))"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,63})[\"']?\]?[ \t]{0,8}"
    r"(?:=>|:=|=|:|\s+(?:is|=)\s)[ \t]{0,8}"
    # values shorter than 8 characters are never tokens (``token_value``): not matched
    r"(?:\"(?P<dq>[^\"\n]{8,256})\"|'(?P<sq>[^'\n]{8,256})'|`(?P<bq>[^`\n]{8,256})`"
    r"|(?P<bare>[^\s\"'`,;&<>{}=]{8,512}+={0,2}))"
)


def _accept_assignment(match: re.Match[str]) -> bool:
    kind = secret_name(match.group("name"))
    if kind is None or kind == "password":  # passwords: _prose.PROSE, kind "password"
        return False
    value = next(v for v in match.groups()[1:] if v is not None)
    if is_dummy(value):  # before trimming: "sk_live_..." is documentation
        return False
    if match.group("bare") is not None:
        value = value.rstrip(_END_PUNCT)
    return _value_for(kind, value)


def _value_for(kind: str, value: str) -> bool:
    if kind == "password":
        return assigned_password(value)
    if kind == "key":
        return random_value(value)
    return token_value(value)


# Kubernetes and compose env lists: "- name: DB_PASSWORD\n  value: hunter2".
_ENV_ENTRY = re.compile(
    r"name:[ \t]{0,4}[\"']?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,63})[\"']?[ \t]*\r?\n"
    r"[ \t]{0,16}value:[ \t]{0,4}[\"']?(?P<v>[^\s\"']{1,512})"
)


def _accept_env(match: re.Match[str]) -> bool:
    kind = secret_name(match.group("name"))
    return kind not in (None, "password") and _value_for(kind, match.group("v"))


def _accept_env_password(match: re.Match[str]) -> bool:
    kind = secret_name(match.group("name"))
    return kind == "password" and assigned_password(match.group("v"))


_AUTH_SCHEMES = (
    r"(?:Bearer|Token|Basic|Bot|Digest|ApiKey|Api-Key|Key|SSWS|GenieKey|OAuth|JWT|Splunk"
    r"|Negotiate|token|bearer|basic)"
)


def _header_value(value: str) -> bool:
    return len(value) >= 8 and not is_dummy(value) and (mixed(value) or len(value) >= 20)


def _userinfo_token(value: str) -> bool:
    """``https://<token>@host``: a key as the user name (Sentry DSNs, git remotes)."""
    return len(value) >= 16 and mixed(value) and PLACEHOLDER.fullmatch(value) is None


def _url_password(value: str) -> bool:
    return PLACEHOLDER.fullmatch(value) is None and not is_dummy(value) and value != "password"


def _cli_password(value: str) -> bool:
    core = value.strip(_QUOTES)
    return (
        len(core) >= 3
        and PLACEHOLDER.fullmatch(core) is None
        and not is_dummy(core)
        and not core.startswith("-")
    )


def _cli_flag(match: re.Match[str]) -> bool:
    return secret_name(match.group("name")) is not None


_SCHEME = r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,31}://"


_DIGEST_PREFIX = re.compile(r"(?i)(?:sha|md|blake|crc|xxh|murmur|sri|hash|digest|sum)\d*")


def _prefixed_token(value: str) -> bool:
    """A key of a provider no rule knows: a short prefix, a separator and a long random
    body (``tvly-…``, ``fo1_…``, ``CFPAT-…``). Identifiers with a prefix (``cus_…``,
    ``chatcmpl-…``, ``msg_01…``) have shorter bodies; digests (``sha384-…``) and UUIDs
    are not keys."""
    head, body = re.split(r"[_\-.]", value, maxsplit=1)
    if len(body) < 32 or _DIGEST_PREFIX.fullmatch(head):
        return False
    return (
        any(c.isupper() for c in body)
        and any(c.islower() for c in body)
        and any(c.isdigit() for c in body)
        and entropy(body) >= 4.2
    )


GENERIC: tuple[Detector, ...] = (
    Detector(
        "private_key",
        # any kind of private key block (RSA, EC, OPENSSH, ENCRYPTED, PGP …), also with
        # escaped newlines inside a JSON string; a block cut short runs to the next
        # "-----" or the end. The body is read once: possessive, no backtracking.
        re.compile(
            r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[^-]++|-(?!----))*+(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
        ),
        hints=("PRIVATE KEY",),
        rule="private_key_block",
    ),
    Detector(
        "jwt",
        re.compile(
            r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{4,2048}+\.eyJ[A-Za-z0-9_\-]{4,8192}+"
            r"\.[A-Za-z0-9_\-]{8,2048}+(?![A-Za-z0-9_\-])"
        ),
        hints=("eyJ",),
    ),
    Detector(
        "bearer_token",
        re.compile(
            r"(?i:authorization)[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"'`]?"
            + _AUTH_SCHEMES
            + r"[ \t]{1,4}(?P<v>[A-Za-z0-9_\-.=+/~:%]{8,4096}+)",
            re.ASCII,
        ),
        "v",
        _header_value,
        hints=("authorization",),
        lower=True,
        rule="authorization_header",
    ),
    Detector(
        "bearer_token",
        re.compile(r"\bBearer\s+(?P<v>[A-Za-z0-9_\-.=+/~]{20,4096}+)", re.IGNORECASE | re.ASCII),
        "v",
        mixed,
        hints=("bearer",),
        lower=True,
    ),
    Detector(
        "url_password",
        re.compile(_SCHEME + r"[^\s:/@?#]{0,128}:(?P<v>[^\s@/?#]{1,256}+)@(?=[^\s@])"),
        "v",
        _url_password,
        hints=("://",),
        rule="url_credentials",
    ),
    Detector(
        "url_token",
        re.compile(_SCHEME + r"(?P<v>[A-Za-z0-9_\-.~%]{16,256}+)@(?=[A-Za-z0-9\-])"),
        "v",
        _userinfo_token,
        hints=("://",),
        rule="url_userinfo_token",
    ),
    Detector(
        "secret",
        re.compile(
            r"(?<![A-Za-z0-9_\-.+/])[A-Za-z][A-Za-z0-9]{1,11}(?:[_\-.][A-Za-z0-9]{1,11}){0,2}"
            r"[_\-.][A-Za-z0-9_\-.]{32,512}+(?<!\.)(?![A-Za-z0-9_\-.+/=])"
        ),
        0,
        _prefixed_token,
        hints=("_", "-", "."),
        in_tokens=True,
        rule="prefixed_token",
    ),
    Detector(
        "secret",
        _ASSIGNMENT,
        ("dq", "sq", "bq", "bare"),
        trim=_END_PUNCT,
        hints=("=", ":"),
        accept=_accept_assignment,
        rule="secret_assignment",
    ),
    Detector(
        "secret",
        _ENV_ENTRY,
        "v",
        hints=("value:",),
        accept=_accept_env,
        rule="secret_env_entry",
    ),
    Detector(
        "password",
        _ENV_ENTRY,
        "v",
        hints=("value:",),
        accept=_accept_env_password,
        rule="password_env_entry",
    ),
    Detector(
        "password",
        re.compile(
            r"\b(?:mysql|mysqldump|mariadb|mysqladmin)\b[^\n]{0,160}?[ \t]-p(?P<v>[^\s'\"]{3,128}+)"
        ),
        "v",
        _cli_password,
        hints=("mysql", "mariadb"),
        lower=True,
        rule="cli_password",
    ),
    Detector(
        "password",
        re.compile(
            r"\b(?:curl|wget|http|https|httpie|ab)\b[^\n]{0,200}?[ \t](?:-u|--user)[ =]?[\"']?"
            r"[^\s:'\"]{1,64}:(?P<v>[^\s'\"]{3,128}+)"
        ),
        "v",
        _cli_password,
        hints=("-u", "--user"),
        rule="cli_password",
    ),
    Detector(
        "password",
        re.compile(
            r"\b(?:sshpass|redis-cli|mongo|mongosh|(?:docker|podman|nerdctl|helm registry|oras"
            r"|skopeo|buildah)\s+login)\b[^\n]{0,200}?[ \t](?:-p|-a|--password|--pass)"
            r"(?:[ \t=]{1,3}|(?=[\"']))[\"']?(?P<v>[^\s'\"]{3,128}+)"
        ),
        "v",
        _cli_password,
        hints=("sshpass", "redis-cli", "mongo", "login"),
        lower=True,
        rule="cli_password",
    ),
    Detector(
        "secret",
        re.compile(
            r"(?<![\w-])--(?P<name>[A-Za-z][A-Za-z0-9\-]{1,40})(?:=|[ \t]{1,3})[\"']?"
            r"(?P<v>[^\s'\"]{3,512}+)"
        ),
        "v",
        _cli_password,
        hints=("--",),
        accept=_cli_flag,
        rule="cli_secret_flag",
    ),
    Detector(
        "card_number",
        re.compile(r"(?<![\d\-.])\d(?:[ \-]?\d){12,18}(?![\d\-])"),
        0,
        is_card,
        min_digits=13,
        not_after=re.compile(
            r"(?i:imei|order|invoice|tracking|isbn|po|ticket|account|acct|ref|订单|单号)"
            r"[^\n\d]{0,12}$"
        ),
    ),
    Detector(
        "iban",
        re.compile(
            r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?"
            r"(?![A-Za-z0-9])"
        ),
        0,
        is_iban,
        min_digits=4,  # "CH18 0575 6ITW FYAS 3URX R": letters in the account part
    ),
    Detector(
        "password",
        # "use Sommer2024! as the password"
        re.compile(
            r"\buse\s+[\"'`]?(?P<v>[!-~]{4,64}+)\s+as\s+(?:the\s+|my\s+|a\s+|your\s+)?"
            r"(?:new\s+)?(?:password|passphrase|pw|pwd|pin)\b",
            re.IGNORECASE,
        ),
        "v",
        prose_password,
        hints=("pass", "pw", "pin"),
        lower=True,
        trim=_QUOTES,
        rule="password_prose",
    ),
    Detector(
        "password",
        # "the admin login is admin / S3cret!", "credentials: deploy / hunter2!"
        re.compile(
            r"\b(?:login|logins|credentials?|creds|account)\b(?:\s+(?:is|are|was))?\s{0,3}:?"
            r"\s{0,3}[A-Za-z0-9_.@\-]{2,64}+\s{0,3}(?:/|\|)\s{0,3}(?P<v>[!-~]{4,64}+)(?![!-~])",
            re.IGNORECASE,
        ),
        "v",
        prose_password,
        hints=("login", "cred", "account"),
        lower=True,
        trim=_END_PUNCT,
        rule="password_login_pair",
    ),
)
