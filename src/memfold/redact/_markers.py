"""Facts that say nothing but a redaction marker: "My key is [REDACTED:openai_key]"."""

from __future__ import annotations

import re

from memfold.redact._engine import MARKER_START

_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
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
    r"\[REDACTED:[a-z0-9_]+\](?:\s*(?:,|and|、|和|与)\s*\[REDACTED:[a-z0-9_]+\])*\s*[.。!！]?\s*$"
)


def redaction_kinds(*texts: str | None) -> tuple[str, ...]:
    """The kinds named by the redaction markers in ``texts`` (``openai_key``, ``password``,
    …), each once, in order of appearance: what was redacted, never the value."""
    seen: dict[str, None] = {}
    for text in texts:
        if text and MARKER_START in text:
            for marker in _MARKER.finditer(text):
                seen.setdefault(marker.group(0)[len(MARKER_START) : -1])
    return tuple(seen)


def is_only_redaction(text: str) -> bool:
    """True when ``text`` holds a redaction marker and nothing else worth remembering:
    "My key is [REDACTED:openai_key]", "API token: [REDACTED:secret]", "密码是[REDACTED:password]".

    A fact like that tells a later conversation only that a secret once existed. Text that
    says more ("Deploys to staging with [REDACTED:aws_access_key]") is not only a
    redaction.
    """
    if MARKER_START not in text:
        return False
    statement = _SECRET_IS_MARKER.search(text)
    if statement is not None and _only_filler(text[: statement.start()]):
        return True  # its one claim is the secret's value, whatever secret it names
    return _only_filler(text)


def _only_filler(text: str) -> bool:
    rest = _FILLER_ZH.sub(" ", _MARKER.sub(" ", text)).casefold().replace("’", "'")
    return all(word in _FILLER_WORDS for word in _WORDS.findall(rest))
