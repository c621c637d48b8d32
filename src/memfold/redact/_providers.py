"""Provider keys recognised by their own shape (prefix, length, alphabet).

Two sources: memfold's own detectors for the providers users paste most (their kinds,
``openai_key`` and so on, are stable marker names), and the provider list that
Betterleaks maintains as data (MIT licence), regenerated into
``data/provider_rules.json`` by ``scripts/regen_provider_rules.py``. Both run; where
they find the same value the span is replaced once.
"""

from __future__ import annotations

import json
import re
from importlib import resources

from memfold.redact._checks import aws_secret, mixed
from memfold.redact._engine import PREFIX_MAX, Detector

# Token characters: a match must not start or end inside a longer token.
B = r"(?<![A-Za-z0-9_\-])"
E = r"(?![A-Za-z0-9_\-])"

OWN: tuple[Detector, ...] = (
    Detector(
        "anthropic_key", re.compile(B + r"sk-ant-[A-Za-z0-9_\-]{20,}" + E), hints=("sk-ant-",)
    ),
    Detector(
        "openai_key",
        re.compile(B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}" + E),
        check=mixed,
        hints=("sk-",),
    ),
    Detector(
        "aws_access_key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])"),
        hints=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
    ),
    Detector(
        "aws_secret_key",
        re.compile(
            r"(?i:aws[^\n]{0,20}?(?:secret|key)|secret[ _-]?access[ _-]?key)[^\n]{0,30}?"
            r"(?<![A-Za-z0-9/+])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        "v",
        aws_secret,
        hints=("aws", "secret"),
        lower=True,
    ),
    Detector(
        "github_token",
        re.compile(B + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})" + E),
        hints=("hp_", "ho_", "hu_", "hs_", "hr_", "github_pat_"),
    ),
    Detector(
        "gitlab_token",
        re.compile(B + r"gl(?:pat|dt|ft|rt|soat|cbt|imt|ptt|oas)-[A-Za-z0-9_\-]{20,}" + E),
        hints=("gl",),
    ),
    Detector(
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/\-]+"),
        hints=("hooks.slack.com",),
    ),
    Detector("slack_token", re.compile(B + r"xox[abposre]-[A-Za-z0-9\-]{10,}" + E), hints=("xox",)),
    Detector("google_api_key", re.compile(B + r"AIza[0-9A-Za-z_\-]{35}" + E), hints=("AIza",)),
    Detector(
        "stripe_key",
        re.compile(B + r"(?:(?:sk|rk)_(?:live|test)|pk_live|whsec)_[0-9A-Za-z]{16,}" + E),
        hints=("_live_", "_test_", "whsec_"),
    ),
    Detector("twilio_key", re.compile(B + r"(?:SK|AC)[0-9a-f]{32}" + E), hints=("SK", "AC")),
    Detector(
        "sendgrid_key",
        re.compile(B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + E),
        hints=("SG.",),
    ),
    Detector("npm_token", re.compile(B + r"npm_[A-Za-z0-9]{36}" + E), hints=("npm_",)),
    Detector("pypi_token", re.compile(B + r"pypi-AgE[A-Za-z0-9_\-]{50,}" + E), hints=("pypi-AgE",)),
    Detector("huggingface_token", re.compile(B + r"hf_[A-Za-z0-9]{34,}" + E), hints=("hf_",)),
    Detector(
        "telegram_token", re.compile(r"(?<!\d)\d{8,10}:AA[A-Za-z0-9_\-]{33}" + E), hints=(":AA",)
    ),
    Detector(
        "azure_storage_key",
        re.compile(r"AccountKey=(?P<v>[A-Za-z0-9+/]{86}==)"),
        "v",
        hints=("AccountKey=",),
    ),
    Detector(
        "vault_token",
        re.compile(B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,}" + E),
        hints=("hvs.", "hvb.", "hvr."),
        check=mixed,
    ),
    Detector(
        "google_oauth_secret",
        re.compile(B + r"GOCSPX-[A-Za-z0-9_\-]{28}" + E),
        hints=("GOCSPX-",),
    ),
    Detector(
        "airtable_token",
        re.compile(B + r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}" + E),
        hints=("pat",),
    ),
    # Discord bot tokens: the base64 of a numeric user id, a timestamp, an HMAC.
    Detector(
        "discord_token",
        re.compile(B + r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}" + E),
        hints=(".",),
        check=mixed,
        min_entropy=3.5,
    ),
)


def _kind(rule_id: str) -> str:
    """``groq-api-key.1`` → ``groq_api_key``: a marker label ``[a-z0-9_]``."""
    return re.sub(r"[^a-z0-9]+", "_", rule_id.split(".", maxsplit=1)[0].lower()).strip("_")


def _load() -> tuple[tuple[Detector, ...], str]:
    data = json.loads(
        resources.files("memfold.redact").joinpath("data/provider_rules.json").read_text("utf-8")
    )
    detectors = tuple(
        Detector(
            _kind(rule["id"]),
            re.compile(rule["regex"], re.ASCII),
            rule["group"],
            hints=tuple(rule["keywords"]),
            lower=True,
            min_entropy=rule["min_entropy"],
            rule=f"provider:{rule['id']}",
            in_tokens=True,
            token_prefixes=tuple(k for k in rule["prefix_keywords"] if len(k) <= PREFIX_MAX),
        )
        for rule in data["rules"]
    )
    return detectors, str(data["source"])


MAINTAINED, MAINTAINED_SOURCE = _load()
