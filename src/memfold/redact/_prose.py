"""Passwords and secrets stated in sentences: "my password is …", "mein Passwort ist …",
"mot de passe : …", "mi contraseña es …", "minha senha é …", "パスワードは…です",
"密码是…", "비밀번호는 …입니다", and ``password=…`` assignments.

A value in prose has no shape of its own, so the check is stricter than for a
``password=`` assignment: it needs a digit, a symbol or mixed case, or is a dashed
passphrase (``_checks.prose_password``). "mein Passwort ist abgelaufen" stays.

Values are printable ASCII runs read possessively (``[!-~]*+``) and trimmed of the
punctuation that ends a clause afterwards; a lazy value followed by a lookahead over a
punctuation run (0.1.0) re-read the run at every step and took quadratic time.
"""

from __future__ import annotations

import re

from memfold.redact._checks import (
    assigned_password,
    bare_cjk_password,
    cjk_password_value,
    cjk_secret_value,
    colon_password,
    mixed,
    prose_password,
    stated_password,
)
from memfold.redact._engine import Detector

_PASSWORD_WORD = r"(?:password|passphrase|passcode|passwd|pass\s?word|pwd|pw)"  # noqa: S105
_QUALIFIER = r"(?:\s+(?:for|to|of|on)(?:\s+[^\s,;:\[\]]+){1,3}?)?"
# A value in quotes may hold spaces ("correct horse battery staple"); the quotes stay.
_QUOTED_VALUE = (
    r"(?<=')[^'\n]{1,100}?(?=')|(?<=\")[^\"\n]{1,100}?(?=\")|(?<=`)[^`\n]{1,100}?(?=`)"
    r"|(?<=“)[^”\n]{1,100}?(?=”)|(?<=‘)[^’\n]{1,100}?(?=’)"
)
_VALUE = r"[\"'`“‘]?(?P<v>" + _QUOTED_VALUE + r"|[^\s\"'`”’]+?)[\"'`”’]?(?=[\s,;)]|[.!?](?:\s|$)|$)"
# A CJK statement's value: printable ASCII up to the next non-ASCII character; the
# punctuation that ends the clause ("密码是abc123，记住" folds "，" to ",") is trimmed.
_CJK_TRIM = ".,;:!?)]」”\"'"
_CJK_VALUE = r"[\"'“「]?(?P<v>[!#-&(-~][!-~]*+)"
_CJK_BARE_VALUE = r"(?P<v>[A-Za-z0-9][!-~]*+)"
_CJK_VERB = r"(?:是|为|為|:|=|就是|改成了?|改为|设置为|设为|换成了?)(?:\s*[:=])?"

# The word for "password" in the languages memfold is used in; forms that take a
# suffix are listed whole (Turkish "şifrem" = "my password").
_WORDS_ASCII = (
    r"password|passphrase|passcode|passwd|pwd|pw|passwort|kennwort|mot\s+de\s+passe|mdp"
    r"|contrase(?:ñ|n)a|clave|senha|parola(?:\s+d'ordine)?|wachtwoord|haslo|sifre[mn]?"
    r"|adgangskode|passord(?:et)?|salasana|heslo|kata\s+sandi"
)
_WORDS_OTHER = (
    r"hasło|şifre(?:m|si|niz|n)?|parolam|parolası|lösenord(?:et)?|jelszó|jelszavam"
    r"|mật\s+khẩu|пароль|пароля|비밀번호|암호|パスワード|暗証番号|密码|密碼|口令"
    r"|κωδικός|סיסמה|كلمة\s+المرور|पासवर्ड"
)
_COPULA = (
    r"is|was|ist|lautet|war|est|était|es|era|é|è|это|to|jest|är|er|on|là|adalah|είναι"
    r"|auf|sind"
)
_LATER = r"now|jetzt|ahora|maintenant|agora|adesso|nun|teraz|nu"
_PREPOSITION = r"for|of|on|to|für|fürs|des|de|du|del|da|do|della|dello|van|voor|для|dla|för|til"
# Not inside an identifier or an option ("DB_PASSWORD=", "-field=password"): those are
# assignments, read by the stricter rules above.
_WORD = (
    # the first character of some word: one class test per position before the rest
    r"(?=[pPmMcCsSwWkKhHaAtTlLjJşŞгпПκΚסكप비암パ暗密口])"
    r"(?<![A-Za-z0-9_.$/=])(?:" + _WORDS_ASCII + "|" + _WORDS_OTHER + r")(?![A-Za-z0-9_])"
)
# A plain word ("abgelaufen", "Required") is never a prose password (``prose_password``);
# saying so in the pattern keeps a flood of words out of the Python check.
_PROSE_VALUE = r"[\"'`“‘「]?(?-i:(?![A-Z]?[a-z]++(?![!-~])))(?P<v>[!-~]++)"
_QUALIFIED = r"(?:\s+(?:" + _PREPOSITION + r")(?:\s+[^\s,;:=]{1,32}){1,3}?)?"
_CONNECTOR = (
    r"\s*[:=]\s*"
    r"|\s+(?:" + _COPULA + r")\b(?:\s+(?:" + _LATER + r")\b)?\s*:?\s*"
    r"|\s*(?:は|が|是|为|為|는|은|就是|改成了?|改为|设置为|设为|换成了?)\s*(?:[:=]\s*)?"
)
# With a verb or a colon, and what the password is for: "la password del wifi è …".
_MULTILINGUAL = re.compile(
    _WORD + _QUALIFIED + "(?:" + _CONNECTOR + ")" + _PROSE_VALUE, re.IGNORECASE
)
# The word and the value side by side: "login root, password l4BPd#FXTB6e", "şifrem …".
_MULTILINGUAL_BARE = re.compile(_WORD + r"\s+" + _PROSE_VALUE, re.IGNORECASE)


def _both_cases(pattern: str) -> str:
    """``pattern`` with each ASCII letter as ``[xX]`` (escapes kept): case-insensitive
    without the flag, which lower-cases every character it compares (several times
    slower on a megabyte of text)."""
    out, escaped, in_class = [], False, False
    for char in pattern:
        if not escaped and char.isascii() and char.isalpha():
            pair = char.lower() + char.upper()
            out.append(pair if in_class else f"[{pair}]")
        else:
            out.append(char)
            if not escaped and char in "[]":
                in_class = char == "["
        escaped = char == "\\" and not escaped
    return "".join(out)


# Where either of the two may match: finds the starts in a flood of the word in one
# case-sensitive pass; the cased non-ASCII words are spelt in each case.
_WORDS_OTHER_CASED = (
    _WORDS_OTHER
    + r"|Hasło|HASŁO|Şifre(?:m|si|niz|n)?|ŞİFRE|ŞIFRE|Parolam|Parolası|Lösenord(?:et)?|LÖSENORD"
    r"|Jelszó|Jelszavam|JELSZÓ|Mật\s+khẩu|MẬT\s+KHẨU|Пароль|ПАРОЛЬ|Пароля|Κωδικός|ΚΩΔΙΚΌΣ"
)
_MULTILINGUAL_ANY = re.compile(
    r"(?<![A-Za-z0-9_.$/=])(?:" + _both_cases(_WORDS_ASCII.replace("(?:ñ|n)", "(?:ñ|Ñ|n)"))
    + "|" + _WORDS_OTHER_CASED + r")(?![A-Za-z0-9_])"
    + _both_cases(_QUALIFIED + "(?:" + _CONNECTOR + r"|\s+)") + _PROSE_VALUE
)  # fmt: skip

_PROSE_TRIM = ".,;:)]}\"'`"
# Where a match can start: the first word of each term, so the pattern is tried only
# there (a pattern that starts with a look-behind is otherwise tried at every position).
_ANCHORS_ASCII = (
    "pass", "pw", "mot", "mdp", "contrase", "clave", "senha", "parola", "wachtwoord",
    "kennwort", "haslo", "sifre", "adgangskode", "passord", "salasana", "heslo", "kata",
)  # fmt: skip
_ANCHORS_OTHER = (
    "hasło", "Hasło", "HASŁO", "şifre", "Şifre", "ŞİFRE", "ŞIFRE", "parolam", "parolası",
    "lösenord", "Lösenord", "LÖSENORD", "jelsz", "Jelsz", "mật", "Mật", "пароль", "Пароль",
    "ПАРОЛЬ", "пароля", "비밀번호", "암호", "パスワード", "暗証番号", "密码", "密碼", "口令",
    "κωδικ", "Κωδικ", "ΚΩΔΙΚ", "סיסמה", "كلمة", "पासवर्ड",
)  # fmt: skip

_HINTS = (
    "pass", "pw", "mdp", "contrase", "clave", "senha", "parola", "wachtwoord", "kennwort",
    "haslo", "sifre", "adgangskode", "passord", "salasana", "heslo", "sandi", "hasło",
    "şifre", "Şifre", "ŞİFRE", "parolam", "parolası", "lösenord", "Lösenord", "jelsz",
    "khẩu", "ароль", "АРОЛЬ", "비밀번호", "암호", "パスワード", "暗証番号", "密码", "密碼",
    "口令", "κωδικ", "Κωδικ", "סיסמה", "المرور", "पासवर्ड",
)  # fmt: skip

PROSE: tuple[Detector, ...] = (
    Detector(
        "password",
        re.compile(
            # also env-style names: PGPASSWORD, MYSQL_ROOT_PASSWORD, DB_PASS, redis.password
            r"(?<![A-Za-z0-9_.\-])(?:[A-Za-z0-9]*[_.\-])*(?:[A-Za-z]*(?:password|passwd|pwd)|pass|pw)"
            r"[\"']?\]?\s*[=:]\s*"
            r"(?P<v>'[^'\n]+'|\"[^\"\n]+\"|<[^<>\n]*>(?=[\s;,&]|$)|\$\([^()\n]*\)|[^\s;,&'\"]+)",
            re.IGNORECASE | re.ASCII,
        ),
        "v",
        assigned_password,
        hints=("pass", "pw"),
        lower=True,
        rule="password_assignment",
    ),
    Detector(
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
        stated_password,
        hints=("pass", "pw"),
        lower=True,
        anchors=("pass", "pw", "set", "change", "reset", "update"),
        rule="password_statement",
    ),
    Detector(
        "password",
        re.compile(
            r"\b" + _PASSWORD_WORD + _QUALIFIER + r"\s*:\s*" + _VALUE, re.IGNORECASE | re.ASCII
        ),
        "v",
        colon_password,
        hints=("pass", "pw"),
        lower=True,
        anchors=("pass", "pw"),
        rule="password_label",
    ),
    Detector(
        "password",  # a PIN is digits: "the pin is pulled high" and "pin: 3.3V" are not
        re.compile(
            r"\bpin(?:\s?code|\s+number)?" + _QUALIFIER + r"(?:\s+(?:is|was)(?:\s+now)?\s*:?|\s*:)"
            r"\s*[\"'`“‘]?(?P<v>\d{4,8})(?![\w.\-])",
            re.IGNORECASE | re.ASCII,
        ),
        "v",
        hints=("pin",),
        lower=True,
        rule="pin_statement",
    ),
    Detector(
        "password",
        _MULTILINGUAL,
        "v",
        prose_password,
        hints=_HINTS,
        lower=True,
        trim=_PROSE_TRIM,
        anchors=_ANCHORS_ASCII + _ANCHORS_OTHER,
        fallback=_MULTILINGUAL_BARE,
        finder=_MULTILINGUAL_ANY,
        rule="password_prose",
    ),
    Detector(
        "password",
        re.compile(
            r"(?:密码|密碼|口令)(?:[^，。,；;！!？?\s]{0,6}?)" + _CJK_VERB + r"\s*" + _CJK_VALUE
        ),
        "v",
        cjk_password_value,
        hints=("密码", "密碼", "口令"),
        trim=_CJK_TRIM,
        rule="password_statement_zh",
    ),
    Detector(
        "password",  # no verb: "密码 abc12345", "wifi密码abc12345"
        re.compile(r"(?:密码|密碼|口令)\s*" + _CJK_BARE_VALUE),
        "v",
        bare_cjk_password,
        hints=("密码", "密碼", "口令"),
        trim=_CJK_TRIM,
        rule="password_bare_zh",
    ),
    Detector(
        "secret",
        re.compile(
            r"(?:密钥|秘钥|私钥|令牌|授权码)(?:[^，。,；;！!？?\s]{0,6}?)"
            + _CJK_VERB
            + r"\s*"
            + _CJK_VALUE
        ),
        "v",
        cjk_secret_value,
        hints=("密钥", "秘钥", "私钥", "令牌", "授权码"),
        trim=_CJK_TRIM,
        rule="secret_statement_zh",
    ),
    Detector(
        "secret",  # "token 是 …", "我的token是…"
        re.compile(
            r"(?<![A-Za-z0-9_])(?i:api[ _-]?key|token|secret|access[ _-]?key)\s*"
            r"(?:是|为|為|就是|改成了?|改为|设置为|设为|换成了?)(?:\s*[:=])?\s*" + _CJK_VALUE
        ),
        "v",
        cjk_secret_value,
        hints=("key", "token", "secret"),
        lower=True,
        non_ascii=True,
        trim=_CJK_TRIM,
        rule="secret_statement_zh",
    ),
    Detector(
        "secret",
        re.compile(
            r"\b(?:api[ _-]?key|secret(?:[ _-]key)?|client[ _-]secret|access[ _-]token"
            r"|auth[ _-]token|token)(?:\s+(?:is|was)\s*:?|\s*[:=])\s*[\"'`]?"
            r"(?P<v>[A-Za-z0-9_\-./+=]{12,})",
            re.IGNORECASE | re.ASCII,
        ),
        "v",
        mixed,
        hints=("key", "secret", "token"),
        lower=True,
        rule="secret_statement",
    ),
)
