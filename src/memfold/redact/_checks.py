"""Checks a matched value must pass before it counts as a secret: checksums (Luhn, IBAN
mod 97), randomness (character classes, Shannon entropy) and the shapes that are not
values at all (placeholders, code, masks, words of ordinary talk about passwords)."""

from __future__ import annotations

import math
import re
from collections import Counter

# ------------------------------------------------------------------ checksums


def luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


# Issuer prefixes and the lengths each issuer uses (Visa 13/16/19, Amex 15, …): an
# 18-digit order number that starts with 34 and passes Luhn is not an Amex card.
_ISSUERS = (
    (re.compile(r"4"), frozenset({13, 16, 19})),
    (re.compile(r"5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)"), frozenset({16})),
    (re.compile(r"3[47]"), frozenset({15})),
    (re.compile(r"3(?:0[0-5]|[689])"), frozenset({14, 16, 17, 18, 19})),
    (re.compile(r"6(?:011|5|4[4-9])"), frozenset({16, 17, 18, 19})),
    (re.compile(r"62"), frozenset({16, 17, 18, 19})),
    (re.compile(r"35"), frozenset({16, 17, 18, 19})),  # JCB (3528-3589; 35xx seen in use)
)


def is_card(text: str) -> bool:
    groups = re.split(r"[ -]", text)
    digits = "".join(groups)
    if not any(p.match(digits) and len(digits) in lengths for p, lengths in _ISSUERS):
        return False
    if len(groups) > 1 and (len(set(re.findall(r"[ -]", text))) > 1 or min(map(len, groups)) < 3):
        return False  # "4111 1111-1111 1111" or "41 11 11 …" is not how cards are written
    return luhn(digits)


# IBAN length per country (ISO 13616 registry).
_IBAN_LENGTHS = {
    entry[:2]: int(entry[2:])
    for entry in (  # noqa: SIM905 (a table reads better as text)
        "AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 "
        "DK18 DO28 EE20 EG29 ES24 FI18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 "
        "IE22 IL23 IQ23 IS26 IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 "
        "MD24 ME22 MK19 MR27 MT31 MU30 NL18 NO15 PK24 PL28 PS29 PT25 QA29 RO24 RS22 SA24 "
        "SC31 SE24 SI19 SK24 SM27 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20"
    ).split()
}


def is_iban(text: str) -> bool:
    """A registered country, its length, and the ISO 7064 mod-97 check digits."""
    value = text.replace(" ", "").upper()
    if _IBAN_LENGTHS.get(value[:2]) != len(value):
        return False
    rearranged = value[4:] + value[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


# ------------------------------------------------------------------ randomness


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    counts = Counter(text)
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def mixed(text: str) -> bool:
    """A random-looking token: has a digit and a letter."""
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def aws_secret(text: str) -> bool:
    return (
        any(c.isdigit() for c in text)
        and any(c.islower() for c in text)
        and any(c.isupper() for c in text)
    )


def _classes(text: str) -> int:
    return (
        any(c.islower() for c in text)
        + any(c.isupper() for c in text)
        + any(c.isdigit() for c in text)
        + any(not c.isalnum() for c in text)
    )


# ------------------------------------------------------------------ not values

# A reference to a value rather than the value: ``${VAR}``, ``$VAR``, ``$(command)``,
# ```command```, ``{{ var }}``, ``<placeholder>``, ``%(name)s``. Passwords often hold
# ``$``, ``<`` or ``%`` themselves, so only a whole value of one of these shapes counts.
PLACEHOLDER = re.compile(
    r"\$\{?[A-Za-z_]\w*\}?|\$\(.*\)|`[^`]*`|\{\{.*\}\}|\{[A-Za-z_]\w*\}|<[^<>]*>|%\(\w+\)s"
    r"|\$\{[A-Za-z_]\w*:-[^}]*\}|%[A-Za-z_]\w*%"
    r"|!(?:vault|env_var|env|secret|Ref|Sub|GetAtt|ImportValue|Join)"  # YAML tags
)
# Code: a call or subscript (``get()``, ``os.environ['X']``) or a dotted name.
CODE_VALUE = re.compile(r"[A-Za-z_][\w.]*[(\[].*|[A-Za-z_]\w*\.[A-Za-z_][\w.]*")
# Words that mark a documentation value ("your-api-key-here", "sk_live_...", "xxxx").
_DUMMY = re.compile(
    r"(?i)your|here\b|example|change[_-]?me|replace|placeholder|dummy|sample|insert|"
    r"redacted|x{4}|\*{3}|\.{3}|…|todo|fixme|fake|^test$|^none$|^null$|^secret$|^password$"
)


def is_dummy(value: str) -> bool:
    """A placeholder, a mask or a reference: not a secret whatever its name says."""
    core = value.strip("\"'`")
    return (
        not core
        or core.startswith(("$(", "${", "{{", "%("))  # a reference cut short
        or len(set(core.casefold())) <= 2  # "********", "xxxxxxxx", "abababab"
        or PLACEHOLDER.fullmatch(core) is not None
        or _DUMMY.search(core) is not None
    )


def token_value(value: str) -> bool:
    """A value assigned to a secret-named key that looks like a credential: at least 8
    characters of two classes (``a1b2…``, ``AbCd…``) or very random, and not a
    placeholder, code or a plain number."""
    core = value.strip("\"'`")
    if len(core) < 8 or is_dummy(core) or CODE_VALUE.fullmatch(core) is not None:
        return False
    if core.isdigit():
        return len(core) >= 16
    if re.fullmatch(r"[A-Za-z]+(?:[_.\-][A-Za-z]+)*", core):
        # words and identifiers ("production", "request_token", "getToken") unless long
        # and random
        return len(core) >= 24 and _classes(core) >= 2 and entropy(core) >= 3.8
    return _classes(core) >= 2


def random_value(value: str) -> bool:
    """A value that only its randomness marks as a key: 16 characters or more, letters
    and digits, and high entropy."""
    core = value.strip("\"'`")
    return len(core) >= 16 and token_value(core) and mixed(core) and entropy(core) >= 3.5


# Words that follow "password is/:" in ordinary talk about passwords, not a password.
NOT_A_PASSWORD = frozenset(
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
_MESSAGE_WORDS = NOT_A_PASSWORD | frozenset(
    """
    least most must should contain contains containing characters chars letters digits
    symbols numbers be is are enough match matches long length minimum maximum only
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


def password_value(text: str) -> bool:
    value = text.strip("\"'`“”‘’.,;:!?)(")
    if len(set(value.casefold())) == 1:
        return False  # masked or a placeholder: "********", "xxxxxxxx"
    words = value.casefold().split()
    if len(words) > 1:  # a quoted passphrase: "correct horse battery staple"
        common = sum(word.strip(".,;:!?") in _MESSAGE_WORDS for word in words)
        return len(value) >= 8 and common * 2 < len(words)
    return len(value) >= 4 and value.casefold() not in NOT_A_PASSWORD


def assigned_password(text: str) -> bool:
    """``password=…``/``password: …`` with a literal, not code (``password=get()``)."""
    value = text.strip("\"'")
    return (
        password_value(value)
        and CODE_VALUE.fullmatch(value) is None
        and PLACEHOLDER.fullmatch(value) is None
        and not is_dummy(value)
    )


def stated_password(text: str) -> bool:
    """``my password is …`` or ``password: …`` with a value, not a placeholder."""
    core = text.strip("\"'`“”‘’")
    return password_value(text) and PLACEHOLDER.fullmatch(core) is None and not is_dummy(core)


def colon_password(text: str) -> bool:
    """``password: …`` with a value, not a placeholder or code (``process.env.X``)."""
    value = text.strip("\"'`“”‘’")
    return stated_password(text) and CODE_VALUE.fullmatch(value) is None


def prose_password(text: str) -> bool:
    """A password in a sentence of any language, where nothing but its shape tells it
    from a word: it has a digit or a symbol or mixed case ("Sommer2024!", "eGYD3Dh"),
    or is a dashed passphrase ("correct-horse-battery-staple"), or six digits or more."""
    value = text.strip("\"'`“”‘’「」")
    if not 4 <= len(value) <= 64 or is_dummy(value) or CODE_VALUE.fullmatch(value):
        return False
    if NOT_A_KEY.fullmatch(value) or value.casefold() in NOT_A_PASSWORD:
        return False
    if re.fullmatch(r"[\w.\-~]*(?:/[\w.\-~]*)+|https?:\S*", value):
        return False  # a path or a URL ("secret/db", "/etc/shadow")
    if value.isdigit():
        return len(value) >= 6
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    camel = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    if re.fullmatch(r"[a-z]+(?:-[a-z]+){2,}", value, re.IGNORECASE):
        return len(value) >= 12  # a diceware passphrase
    if re.fullmatch(r"[A-Za-z]+[-'][A-Za-z]+", value):
        return False  # "e-mail", "don't"
    return len(value) >= 6 and (has_digit or has_symbol or camel)


# Names of algorithms, formats and sizes that follow "密码"/"密钥" in talk about them.
NOT_A_KEY = re.compile(
    r"(?i:sha-?\d*|md5|bcrypt|scrypt|argon2\w*|pbkdf2\w*|aes-?\d*|rsa-?\d*|des3?|ecdsa|"
    r"ed25519|hmac\w*|base64|utf-?8|jwt|oauth2?|https?|v\d+|\d{1,5}(?:bit|bits|位)?"
    r"|\d{1,3}\s*[-~]\s*\d{1,3}|wpa\d?|wep|2fa|mfa|totp|otp)"
)


def cjk_password_value(text: str) -> bool:
    return (
        re.search(r"[A-Za-z0-9]", text) is not None
        and password_value(text)
        and PLACEHOLDER.fullmatch(text) is None
        and NOT_A_KEY.fullmatch(text) is None
    )


def bare_cjk_password(text: str) -> bool:
    """ "密码 abc12345" with no verb: letters and digits, or six digits or more."""
    has_digit = any(c.isdigit() for c in text)
    has_alpha = any(c.isalpha() for c in text)
    return (
        (has_digit and (has_alpha or len(text) >= 6))
        and len(text) >= 6
        and NOT_A_KEY.fullmatch(text) is None
    )


def cjk_secret_value(text: str) -> bool:
    return len(text) >= 8 and mixed(text) and NOT_A_KEY.fullmatch(text) is None
