"""Whether a name says its value is secret: ``GROQ_API_KEY``, ``jwtSecret``,
``X-Auth-Token``, ``MYSQL_ROOT_PASSWORD``, ``SharedAccessKey`` — and not ``MAX_TOKENS``,
``idempotency_key``, ``PASSWORD_MIN_LENGTH`` or ``SECRET_KEY_FILE``.

A name is split into words (``_ . -`` and camelCase); it is secret when its last word
is a secret word, or ``key`` after a word that makes a key a credential (``api``,
``secret``, ``access``, …), once suffixes that only name the encoding (``_B64``) are
dropped. A last word that describes the value instead (``length``, ``file``, ``type``,
``expiry``) makes the name ordinary.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "pass", "passphrase", "passcode", "pw"})
SECRET_WORDS = frozenset(
    {"secret", "token", "apikey", "credential", "credentials", "dsn", "privatekey", "auth"}
)
# "<qualifier>_key" is a credential; "cache_key", "primary_key", "sort_key" are not.
KEY_QUALIFIERS = frozenset(
    """
    api secret private access signing sign encryption encrypt enc crypt crypto cipher aes
    master client app application admin auth account service license licence webhook
    subscription shared session jwt hmac deploy consumer ingest management mgmt personal
    root bot write server secure security sdk rest storage integration partner merchant
    user project org bearer production prod live dev staging publishable_secret
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
# Compound spellings the camelCase split cannot see: "APIKEY", "apikey", "accesskey".
_COMPOUND = re.compile(
    r"(?:api|secret|private|access|signing|encryption|master|client|app|account|"
    r"license|subscription|shared|session)key|apitoken|authtoken|accesstoken|"
    r"secretkey|clientsecret|privatekey",
)
# "<qualifier>_key" that names a lookup, an index or a path, never a credential.
NOT_KEY_QUALIFIERS = frozenset(
    """
    cache primary foreign sort partition idempotency object s3 public publishable routing
    index unique composite lookup map dict hash group shard row cursor page pagination
    query dedup dedupe join natural surrogate candidate compound lock queue event message
    bucket file path i18n translation locale config setting settings registry request
    range column field attribute tag label metric counter rate limit ratelimit throttle
    route hot short long id name primary_key storage_path ssh gpg pgp verify verification
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_ENCODING = frozenset({"b64", "base64", "hex", "value", "str", "string", "raw", "enc"})


def words(name: str) -> list[str]:
    return [w.lower() for part in re.split(r"[_.\-\s]+", name) for w in _WORD.findall(part)]


def secret_name(name: str) -> str | None:
    """``"password"`` or ``"secret"`` when ``name`` says its value is one, ``"key"`` when it
    may be one (``*_KEY`` after a word of unknown meaning), else None."""
    parts = words(name)
    while len(parts) > 1 and parts[-1] in _ENCODING:
        parts.pop()
    if not parts:
        return None
    last = parts[-1]
    if last in PASSWORD_WORDS or last.endswith("password"):
        return "password"
    if last in SECRET_WORDS or last.endswith(("token", "secret")):
        return "secret"
    if last == "key" and len(parts) > 1 and parts[-2] in KEY_QUALIFIERS:
        return "secret"
    if last == "key" and len(parts) > 1 and parts[-2] not in NOT_KEY_QUALIFIERS:
        return "key"  # "ADAFRUIT_IO_KEY": a credential when its value is random
    if _COMPOUND.fullmatch(last):
        return "secret"
    return None
