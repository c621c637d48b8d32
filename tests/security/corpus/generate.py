"""Seeded generator of the second redaction corpus (``generated/``).

The first corpus (``secrets.jsonl``, ``ordinary.txt``) was written by hand next to the
patterns. This one is built by a different method: secret values are drawn at random in
each provider's documented shape (prefix, length, alphabet, checksum), generic shapes
(assignments, headers, URLs, prose passwords, key blocks, JWTs, cards, IBANs) get random
values, and each is put in a sentence frame from one of several languages. Ordinary lines
are built the same way from look-alikes: commit SHAs, UUIDs, digests, base64 images,
versions, order numbers, phone numbers, placeholders and talk about passwords.

The split into a tuned part and a held-out third is decided before any value is drawn:
a third of the providers, of the generic shapes and of the sentence frames appear only in
the held-out files, so the held-out score measures shapes and phrasings the patterns were
not written from. Regenerate with another ``--seed`` to get a fresh held-out set.

    python tests/security/corpus/generate.py            # rewrites generated/*.jsonl
    python tests/security/corpus/generate.py --check    # exit 1 if the files differ
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import string
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

SEED = 20240514
OUT = Path(__file__).resolve().parent / "generated"

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
HEX = "0123456789abcdef"
ALNUM = LOWER + UPPER + DIGITS
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


class Gen:
    """Random values of documented shapes, from one seeded ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def an(self, n: int) -> str:
        # a random token of this length almost always mixes classes; make sure it does
        while True:
            value = self.s(ALNUM, n)
            if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
                return value

    def hex(self, n: int) -> str:
        while True:
            value = self.s(HEX, n)
            if any(c.isalpha() for c in value) and any(c.isdigit() for c in value):
                return value

    def urlsafe(self, n: int) -> str:
        # starts and ends with a letter or digit, as these tokens do
        return self.an(n)[:1] + self.s(URLSAFE, n - 2) + self.s(ALNUM, 1)

    def digits(self, n: int) -> str:
        return self.rng.choice("123456789") + self.s(DIGITS, n - 1)

    def b64(self, raw: int) -> str:
        return base64.b64encode(self.rng.randbytes(raw)).decode()

    def b64url(self, raw: int) -> str:
        return base64.urlsafe_b64encode(self.rng.randbytes(raw)).decode().rstrip("=")

    def uuid(self) -> str:
        return str(uuid.UUID(bytes=self.rng.randbytes(16), version=4))

    def pick(self, options: list[str] | tuple[str, ...]) -> str:
        return self.rng.choice(options)

    def password(self) -> str:
        words = ("Sommer", "Winter", "dragon", "Monkey", "sunshine", "Paris", "Kaffee",
                 "Tigre", "blue", "Pizza", "Fenster", "soleil", "Mariposa", "Sakura")  # fmt: skip
        style = self.rng.randrange(5)
        if style == 0:
            return self.pick(words) + str(self.rng.randrange(1970, 2026)) + self.pick("!?#$%*")
        if style == 1:
            chars = ALNUM + "!@#$%^&*-_=+"
            while True:
                value = self.s(chars, self.rng.randrange(12, 21))
                if any(c.isdigit() for c in value) and any(not c.isalnum() for c in value):
                    return value
        if style == 2:
            head = self.pick(words)
            return head[0].upper() + head[1:] + self.pick("@#.") + self.digits(4)
        if style == 3:
            return "-".join(self.pick(("correct", "horse", "battery", "staple", "orange",
                                       "river", "piano", "cloud", "tiger", "maple"))
                            for _ in range(4))  # fmt: skip
        return self.an(self.rng.randrange(10, 17))

    def jwt(self) -> str:
        header = {"alg": self.pick(("HS256", "RS256", "ES256")), "typ": "JWT"}
        payload = {"sub": self.digits(7), "name": self.pick(("alice", "bob", "王伟")),
                   "iat": 1700000000 + self.rng.randrange(10**7)}  # fmt: skip

        def enc(obj: object) -> str:
            raw = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")

        return f"{enc(header)}.{enc(payload)}.{self.b64url(32)}"

    def pem(self, label: str) -> str:
        body = self.b64(self.rng.randrange(300, 700))
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"

    def card(self) -> str:
        prefix, length = self.rng.choice(
            [("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("37", 15), ("34", 15),
             ("6011", 16), ("65", 16), ("3530", 16), ("62", 16), ("4", 13), ("36", 14)]
        )  # fmt: skip
        number = prefix + self.s(DIGITS, length - len(prefix) - 1)
        number += str(_luhn_digit(number))
        style = self.rng.randrange(3)
        if style == 0 or length != 16:
            return number
        sep = " " if style == 1 else "-"
        return sep.join(number[i : i + 4] for i in range(0, 16, 4))

    def iban(self) -> str:
        country, bban = self.rng.choice(
            [("DE", "8n10n"), ("FR", "5n5n11c2n"), ("GB", "4a6n8n"), ("ES", "4n4n2n10n"),
             ("IT", "1a5n5n12c"), ("NL", "4a10n"), ("BE", "3n7n2n"), ("CH", "5n12c"),
             ("AT", "5n11n"), ("PL", "8n16n"), ("PT", "4n4n11n2n"), ("IE", "4a6n8n")]
        )  # fmt: skip
        body = ""
        for count, kind in _spec(bban):
            alphabet = {"n": DIGITS, "a": UPPER, "c": UPPER + DIGITS}[kind]
            body += self.s(alphabet, count)
        check = 98 - int(_iban_number(body + country + "00")) % 97
        value = f"{country}{check:02d}{body}"
        if self.rng.random() < 0.5:
            return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
        return value


def _luhn_digit(partial: str) -> int:
    total = 0
    for position, char in enumerate(reversed(partial)):
        value = int(char)
        if position % 2 == 0:
            value *= 2
            value -= 9 if value > 9 else 0
        total += value
    return (10 - total % 10) % 10


def _spec(spec: str) -> list[tuple[int, str]]:
    out, number = [], ""
    for char in spec:
        if char.isdigit():
            number += char
        else:
            out.append((int(number), char))
            number = ""
    return out


def _iban_number(text: str) -> str:
    return "".join(str(int(c, 36)) for c in text)


# ---------------------------------------------------------------- provider formats
# (name, environment variable a user would store it in, value factory). Shapes are
# the ones the providers document for their keys.
Provider = tuple[str, str, Callable[[Gen], str]]

PROVIDERS: list[Provider] = [
    ("openai_project", "OPENAI_API_KEY",
     lambda g: "sk-proj-" + g.urlsafe(74) + "T3BlbkFJ" + g.urlsafe(74)),
    ("openai_legacy", "OPENAI_API_KEY", lambda g: "sk-" + g.an(20) + "T3BlbkFJ" + g.an(20)),
    ("openai_admin", "OPENAI_ADMIN_KEY",
     lambda g: "sk-admin-" + g.urlsafe(58) + "T3BlbkFJ" + g.urlsafe(58)),
    ("anthropic", "ANTHROPIC_API_KEY", lambda g: "sk-ant-api03-" + g.urlsafe(93) + "AA"),
    ("anthropic_admin", "ANTHROPIC_ADMIN_KEY",
     lambda g: "sk-ant-admin01-" + g.urlsafe(93) + "AA"),
    ("groq", "GROQ_API_KEY", lambda g: "gsk_" + g.an(52)),
    ("xai", "XAI_API_KEY", lambda g: "xai-" + g.an(80)),
    ("openrouter", "OPENROUTER_API_KEY", lambda g: "sk-or-v1-" + g.hex(64)),
    ("replicate", "REPLICATE_API_TOKEN", lambda g: "r8_" + g.an(37)),
    ("perplexity", "PERPLEXITY_API_KEY", lambda g: "pplx-" + g.an(48)),
    ("huggingface", "HF_TOKEN", lambda g: "hf_" + g.an(34)),
    ("notion_legacy", "NOTION_TOKEN", lambda g: "secret_" + g.an(43)),
    ("notion", "NOTION_API_KEY", lambda g: "ntn_" + g.digits(11) + g.an(35)),
    ("linear", "LINEAR_API_KEY", lambda g: "lin_api_" + g.an(40)),
    ("digitalocean_pat", "DIGITALOCEAN_TOKEN", lambda g: "dop_v1_" + g.hex(64)),
    ("digitalocean_oauth", "DO_OAUTH_TOKEN", lambda g: "doo_v1_" + g.hex(64)),
    ("databricks", "DATABRICKS_TOKEN", lambda g: "dapi" + g.hex(32)),
    ("shopify_access", "SHOPIFY_ACCESS_TOKEN", lambda g: "shpat_" + g.hex(32)),
    ("shopify_shared", "SHOPIFY_API_SECRET", lambda g: "shpss_" + g.hex(32)),
    ("vault_service", "VAULT_TOKEN", lambda g: "hvs." + g.an(24)),
    ("vault_long", "VAULT_TOKEN", lambda g: "hvs.CAESI" + g.urlsafe(81)),
    ("age", "AGE_KEY", lambda g: "AGE-SECRET-KEY-1" + g.s(BECH32, 58)),
    ("mailgun", "MAILGUN_API_KEY", lambda g: "key-" + g.hex(32)),
    ("twilio_api_key", "TWILIO_API_KEY", lambda g: "SK" + g.hex(32)),
    ("discord_bot", "DISCORD_TOKEN",
     lambda g: base64.b64encode(g.digits(18).encode()).decode().rstrip("=") + "."
     + g.urlsafe(6) + "." + g.urlsafe(38)),
    ("github_classic", "GITHUB_TOKEN", lambda g: "ghp_" + g.an(36)),
    ("github_oauth", "GH_OAUTH_TOKEN", lambda g: "gho_" + g.an(36)),
    ("github_app", "GITHUB_APP_TOKEN", lambda g: "ghs_" + g.an(36)),
    ("github_fine", "GITHUB_PAT", lambda g: "github_pat_" + g.an(22) + "_" + g.an(59)),
    ("gitlab_pat", "GITLAB_TOKEN", lambda g: "glpat-" + g.urlsafe(20)),
    ("gitlab_runner", "CI_RUNNER_TOKEN", lambda g: "glrt-" + g.urlsafe(20)),
    ("slack_bot", "SLACK_BOT_TOKEN",
     lambda g: f"xoxb-{g.digits(11)}-{g.digits(13)}-{g.an(24)}"),
    ("slack_user", "SLACK_USER_TOKEN",
     lambda g: f"xoxp-{g.digits(11)}-{g.digits(11)}-{g.digits(13)}-{g.hex(32)}"),
    ("slack_app", "SLACK_APP_TOKEN", lambda g: f"xapp-1-A{g.s(UPPER + DIGITS, 10)}-{g.digits(13)}-{g.hex(64)}"),  # noqa: E501
    ("stripe_live", "STRIPE_SECRET_KEY", lambda g: "sk_live_" + g.an(99)),
    ("stripe_restricted", "STRIPE_RESTRICTED_KEY", lambda g: "rk_live_" + g.an(99)),
    ("stripe_webhook", "STRIPE_WEBHOOK_SECRET", lambda g: "whsec_" + g.an(32)),
    ("aws_access_key", "AWS_ACCESS_KEY_ID", lambda g: "AKIA" + g.s(UPPER + "234567", 16)),
    ("google_api", "GOOGLE_API_KEY", lambda g: "AIza" + g.urlsafe(35)),
    ("google_oauth_secret", "GOOGLE_CLIENT_SECRET", lambda g: "GOCSPX-" + g.urlsafe(28)),
    ("sendgrid", "SENDGRID_API_KEY", lambda g: "SG." + g.urlsafe(22) + "." + g.urlsafe(43)),
    ("npm", "NPM_TOKEN", lambda g: "npm_" + g.an(36)),
    ("pypi", "PYPI_TOKEN", lambda g: "pypi-AgEIcHlwaS5vcmc" + g.urlsafe(70)),
    ("telegram", "TELEGRAM_BOT_TOKEN", lambda g: g.digits(10) + ":AA" + g.urlsafe(33)),
    ("tavily", "TAVILY_API_KEY", lambda g: "tvly-" + g.an(32)),
    ("langsmith", "LANGSMITH_API_KEY", lambda g: "lsv2_pt_" + g.hex(32) + "_" + g.hex(10)),
    ("pinecone", "PINECONE_API_KEY", lambda g: "pcsk_" + g.an(6) + "_" + g.an(63)),
    ("postman", "POSTMAN_API_KEY", lambda g: "PMAK-" + g.hex(24) + "-" + g.hex(34)),
    ("atlassian", "JIRA_API_TOKEN", lambda g: "ATATT3xFfGF0" + g.urlsafe(170) + "=" + g.s(HEX.upper(), 8)),  # noqa: E501
    ("doppler", "DOPPLER_TOKEN", lambda g: "dp.pt." + g.an(43)),
    ("pulumi", "PULUMI_ACCESS_TOKEN", lambda g: "pul-" + g.hex(40)),
    ("grafana_sa", "GRAFANA_TOKEN", lambda g: "glsa_" + g.an(32) + "_" + g.hex(8)),
    ("newrelic", "NEW_RELIC_API_KEY", lambda g: "NRAK-" + g.s(UPPER + DIGITS, 27)),
    ("supabase", "SUPABASE_ACCESS_TOKEN", lambda g: "sbp_" + g.hex(40)),
    ("sentry_user", "SENTRY_AUTH_TOKEN", lambda g: "sntryu_" + g.hex(64)),
    ("docker_hub", "DOCKERHUB_TOKEN", lambda g: "dckr_pat_" + g.urlsafe(27)),
    ("rubygems", "GEM_HOST_API_KEY", lambda g: "rubygems_" + g.hex(48)),
    ("nuget", "NUGET_API_KEY", lambda g: "oy2" + g.s(LOWER + DIGITS, 43)),
    ("dynatrace", "DT_API_TOKEN",
     lambda g: "dt0c01." + g.s(UPPER + DIGITS, 24) + "." + g.s(UPPER + DIGITS, 64)),
    ("adafruit", "ADAFRUIT_IO_KEY", lambda g: "aio_" + g.an(28)),
    ("alibaba", "ALIBABA_CLOUD_ACCESS_KEY_ID", lambda g: "LTAI" + g.an(20)),
    ("contentful", "CONTENTFUL_MANAGEMENT_TOKEN", lambda g: "CFPAT-" + g.urlsafe(43)),
    ("prefect", "PREFECT_API_KEY", lambda g: "pnu_" + g.an(36)),
    ("planetscale", "PLANETSCALE_TOKEN", lambda g: "pscale_tok_" + g.an(43)),
    ("terraform", "TF_TOKEN_app_terraform_io",
     lambda g: g.an(14) + ".atlasv1." + g.an(67)),
    ("flyio", "FLY_API_TOKEN", lambda g: "fo1_" + g.urlsafe(43)),
    ("figma", "FIGMA_TOKEN", lambda g: "figd_" + g.urlsafe(40)),
    ("airtable", "AIRTABLE_TOKEN", lambda g: "pat" + g.an(14) + "." + g.hex(64)),
    ("square", "SQUARE_ACCESS_TOKEN", lambda g: "EAAA" + g.urlsafe(60)),
    ("shippo", "SHIPPO_API_TOKEN", lambda g: "shippo_live_" + g.hex(40)),
    ("duffel", "DUFFEL_ACCESS_TOKEN", lambda g: "duffel_live_" + g.urlsafe(43)),
    ("easypost", "EASYPOST_API_KEY", lambda g: "EZAK" + g.an(54)),
    ("readme", "README_API_KEY", lambda g: "rdme_" + g.s(LOWER + DIGITS, 70)),
    ("sonarqube", "SONAR_TOKEN", lambda g: "squ_" + g.hex(40)),
    ("mapbox_secret", "MAPBOX_SECRET_TOKEN",
     lambda g: "sk.eyJ1IjoiYWNtZSIsImEiOiJ" + g.an(20) + "J9." + g.urlsafe(22)),
    ("azure_ad_secret", "AZURE_CLIENT_SECRET", lambda g: g.an(3) + "8Q~" + g.urlsafe(34)),
    ("firecrawl", "FIRECRAWL_API_KEY", lambda g: "fc-" + g.hex(32)),
    ("deepseek", "DEEPSEEK_API_KEY", lambda g: "sk-" + g.hex(32)),
    # a key file pasted as a JSON string: the PEM block's newlines are escaped
    ("gcp_service_account", "GOOGLE_APPLICATION_CREDENTIALS_JSON",
     lambda g: g.pem("PRIVATE KEY").replace("\n", "\\n")),
    ("heroku_new", "HEROKU_API_KEY", lambda g: "HRKU-AA" + g.urlsafe(58)),
]  # fmt: skip

# Keys with no prefix of their own: only the name they are assigned to says what they are.
CONTEXT_ONLY: list[Provider] = [
    ("mistral", "MISTRAL_API_KEY", lambda g: g.an(32)),
    ("cohere", "COHERE_API_KEY", lambda g: g.an(40)),
    ("datadog_api", "DD_API_KEY", lambda g: g.hex(32)),
    ("datadog_app", "DD_APP_KEY", lambda g: g.hex(40)),
    ("twilio_auth", "TWILIO_AUTH_TOKEN", lambda g: g.hex(32)),
    ("heroku_legacy", "HEROKU_API_KEY", lambda g: g.uuid()),
    ("cloudflare", "CLOUDFLARE_API_TOKEN", lambda g: g.urlsafe(40)),
    ("okta", "OKTA_API_TOKEN", lambda g: "00" + g.urlsafe(40)),
    ("azure_openai", "AZURE_OPENAI_API_KEY", lambda g: g.hex(32)),
    ("algolia_admin", "ALGOLIA_ADMIN_KEY", lambda g: g.hex(32)),
    ("jwt_secret", "JWT_SECRET", lambda g: g.an(48)),
    ("session_secret", "SESSION_SECRET", lambda g: g.b64(32)),
    ("encryption_key", "ENCRYPTION_KEY", lambda g: g.b64(32)),
    ("webhook_secret", "GITHUB_WEBHOOK_SECRET", lambda g: g.hex(40)),
    ("db_password", "DB_PASSWORD", lambda g: g.password()),
    ("redis_pass", "REDIS_PASS", lambda g: g.an(24)),
    ("smtp_password", "SMTP_PASSWORD", lambda g: g.password()),
    ("client_secret", "OAUTH_CLIENT_SECRET", lambda g: g.urlsafe(40)),
    ("signing_key", "SIGNING_KEY", lambda g: g.hex(64)),
    ("aws_secret", "AWS_SECRET_ACCESS_KEY", lambda g: g.s(B64, 40)),
    ("mongo_password", "MONGO_INITDB_ROOT_PASSWORD", lambda g: g.password()),
    ("rabbitmq_pass", "RABBITMQ_DEFAULT_PASS", lambda g: g.an(20)),
    ("minio_secret", "MINIO_SECRET_KEY", lambda g: g.an(40)),
    ("auth_secret", "NEXTAUTH_SECRET", lambda g: g.b64(32)),
]  # fmt: skip

# ------------------------------------------------------------------ sentence frames
# {v} is the secret, {name} an environment variable name, {prov} a provider name.
# Frames that place a bare value with no name around it.
BARE_FRAMES: dict[str, list[str]] = {
    "en": ["here's my key {v} can you check why it fails?", "I pasted {v} into the config",
           "try with this one: {v}", "it still says unauthorized with {v}",
           "the new token is {v}, the old one is revoked"],
    "zh": ["我的 key 是 {v}，帮我看看为什么报错", "这个 token 不行：{v}", "用这个试试 {v} 谢谢"],
    "de": ["hier ist mein Schlüssel: {v}", "mit {v} bekomme ich immer 401", "Der neue Token: {v}"],
    "fr": ["voici ma clé {v}, ça ne marche pas", "j'ai essayé avec {v} sans succès"],
    "es": ["mi clave es {v} y no funciona", "probé con {v} pero da error 403"],
    "pt": ["minha chave é {v}, pode verificar?", "tentei com {v} e deu erro"],
    "ja": ["このキー {v} でエラーになります", "トークンは {v} です"],
    "ru": ["вот мой ключ {v}, не работает", "пробовал с {v}"],
    "it": ["ecco la mia chiave {v}", "con {v} ricevo sempre 401"],
}  # fmt: skip

# Frames that name the value (assignments, headers, code).
NAMED_FRAMES: list[str] = [
    "export {name}={v}",
    "{name}={v}",
    '{name}="{v}"',
    "in my .env: {name}={v}",
    "  {lname}: {v}",
    '"{lname}": "{v}",',
    "{lname} = '{v}'",
    'os.environ["{name}"] = "{v}"',
    "docker run -e {name}={v} myapp:latest",
    "set {name}={v} and restart",
    '$env:{name} = "{v}"',
    "heroku config:set {name}={v}",
    "ENV {name}={v}",
    "- name: {name}\n  value: {v}",
    "{name}: '{v}'",
    "kubectl create secret generic app --from-literal={lname}={v}",
]

HEADER_FRAMES: list[str] = [
    "curl -H 'Authorization: Bearer {v}' https://api.example.com/v1/me",
    "Authorization: Bearer {v}",
    'headers = {{"Authorization": "Bearer {v}"}}',
    'curl -H "X-Api-Key: {v}" https://api.example.com/items',
    "x-api-key: {v}",
    "api-key: {v}",
    "curl -H 'Authorization: Token {v}' https://example.com/api/",
    "requests.get(url, headers={{'X-Auth-Token': '{v}'}})",
    "DD-API-KEY: {v}",
    "fetch(url, {{ headers: {{ authorization: `Bearer {v}` }} }})",
    "Ocp-Apim-Subscription-Key: {v}",
    "https://api.example.com/v2/search?q=shoes&api_key={v}",
    "wss://stream.example.com/socket?access_token={v}",
]

PASSWORD_FRAMES: dict[str, list[str]] = {
    "en": ["my password is {v}", "the admin login is admin / {v}", "wifi password: {v}",
           "I changed the password to {v} yesterday", "login root, password {v}",
           "the password for the staging db is {v}", "use {v} as the password",
           "pw for the router is {v}", "mysql -u root -p{v} shop",
           "curl -u admin:{v} https://jenkins.internal/api/json",
           "sshpass -p '{v}' ssh deploy@10.0.0.5", "docker login -u ci -p {v} registry.example.com",
           "user: alice\npassword: {v}", "passphrase for the key is {v}"],
    "zh": ["我的密码是{v}", "密码：{v}", "wifi密码是 {v}", "服务器登录密码 {v}",
           "数据库密码改成了{v}", "用户名 admin 密码 {v}"],
    "de": ["mein Passwort ist {v}", "das Kennwort lautet {v}", "Passwort: {v}",
           "das WLAN-Passwort ist {v}", "ich habe mein Passwort auf {v} geändert"],
    "fr": ["mon mot de passe est {v}", "le mot de passe du wifi : {v}", "mdp : {v}",
           "identifiant admin, mot de passe {v}"],
    "es": ["mi contraseña es {v}", "la contraseña del wifi es {v}", "contraseña: {v}",
           "usuario admin y clave {v}"],
    "pt": ["minha senha é {v}", "a senha do wifi é {v}", "senha: {v}", "usuário root, senha {v}"],
    "ja": ["パスワードは{v}です", "パスワード：{v}", "私のパスワードは {v} です",
           "管理者のパスワードは{v}"],
    "it": ["la mia password è {v}", "la password del wifi è {v}"],
    "nl": ["mijn wachtwoord is {v}", "wachtwoord: {v}"],
    "ru": ["мой пароль {v}", "пароль: {v}"],
    "ko": ["비밀번호는 {v}입니다", "비밀번호: {v}"],
    "pl": ["moje hasło to {v}", "hasło: {v}"],
    "tr": ["şifrem {v}", "wifi şifresi: {v}"],
}  # fmt: skip

URL_SCHEMES = ["postgres", "postgresql", "mysql", "mongodb+srv", "redis", "rediss", "amqp",
               "ftp", "sftp", "smtp", "https", "ldap", "mssql", "clickhouse", "nats"]  # fmt: skip

CARD_FRAMES = ["my card number is {v}", "card: {v} exp 09/27", "Kartennummer {v}",
               "卡号 {v}", "numéro de carte {v}", "pay with {v} please",
               "número de tarjeta {v}", "カード番号は{v}です"]  # fmt: skip
IBAN_FRAMES = ["my IBAN is {v}", "IBAN: {v}", "Überweisung bitte auf {v}",
               "mon IBAN : {v}", "transfer it to {v} (Santander)", "IBAN {v}, BIC DEUTDEFF"]  # fmt: skip  # noqa: E501
PEM_LABELS = ["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY",
              "ENCRYPTED PRIVATE KEY", "DSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK"]  # fmt: skip
PEM_FRAMES = ["here is the deploy key:\n{v}", "{v}", "key.pem contains\n{v}\nis that right?",
              "私钥如下：\n{v}"]  # fmt: skip
JWT_FRAMES = ["my session token is {v}", "Cookie: session={v}; Path=/",
              "the jwt {v} expires too early", "token={v}", "JWTを貼ります: {v}"]  # fmt: skip


def _split(rng: random.Random, items: list[str]) -> set[str]:
    """The held-out third of ``items`` (at least one when there are three or more)."""
    shuffled = sorted(items)
    rng.shuffle(shuffled)
    return set(shuffled[: len(shuffled) // 3])


class Builder:
    def __init__(self, seed: int) -> None:
        self.split_rng = random.Random(f"{seed}-split")
        self.g = Gen(random.Random(f"{seed}-values"))
        self.rows: list[dict[str, object]] = []
        self.held_frames = _split(
            self.split_rng,
            [f"bare:{lang}:{i}" for lang, fs in BARE_FRAMES.items() for i in range(len(fs))]
            + [f"named:{i}" for i in range(len(NAMED_FRAMES))]
            + [f"header:{i}" for i in range(len(HEADER_FRAMES))]
            + [f"pw:{lang}:{i}" for lang, fs in PASSWORD_FRAMES.items() for i in range(len(fs))]
            + [f"card:{i}" for i in range(len(CARD_FRAMES))]
            + [f"iban:{i}" for i in range(len(IBAN_FRAMES))]
            + [f"pem:{i}" for i in range(len(PEM_FRAMES))]
            + [f"jwt:{i}" for i in range(len(JWT_FRAMES))],
        )
        self.held_providers = _split(self.split_rng, [p[0] for p in PROVIDERS + CONTEXT_ONLY])
        self.held_schemes = _split(self.split_rng, URL_SCHEMES)
        self.held_pem = _split(self.split_rng, PEM_LABELS)

    def frame(self, prefix: str, frames: list[str], held: bool) -> tuple[str, str]:
        ids = [f"{prefix}:{i}" for i in range(len(frames))]
        pool = [(i, f) for i, f in zip(ids, frames, strict=True) if (i in self.held_frames) == held]
        if not pool:  # a family too small to split: every frame serves both parts
            pool = list(zip(ids, frames, strict=True))
        return self.g.rng.choice(pool)

    def add(self, kind: str, source: str, text: str, secret: str, held: bool) -> None:
        assert secret in text, (text, secret)
        self.rows.append(
            {"kind": kind, "source": source, "text": text, "secret": secret, "heldout": held}
        )

    def build(self) -> list[dict[str, object]]:
        g = self.g
        for name, env, make in PROVIDERS:
            held = name in self.held_providers
            for _ in range(2):
                value = make(g)
                if g.rng.random() < 0.5:
                    lang = g.pick(sorted(BARE_FRAMES))
                    fid, frame = self.frame(f"bare:{lang}", BARE_FRAMES[lang], held)
                    self.add(name, fid, frame.format(v=value), value, held)
                else:
                    fid, frame = self.frame("named", NAMED_FRAMES, held)
                    text = frame.format(name=env, lname=env.lower(), v=value)
                    self.add(name, fid, text, value, held)
        for name, env, make in CONTEXT_ONLY:
            held = name in self.held_providers
            for _ in range(3):
                value = make(g)
                fid, frame = self.frame("named", NAMED_FRAMES, held)
                self.add(name, fid, frame.format(name=env, lname=env.lower(), v=value), value, held)
        for index in range(36):
            held = index % 3 == 0
            value = g.pick([g.urlsafe(40), g.hex(40), g.an(32), g.jwt(), g.b64url(32)])
            fid, frame = self.frame("header", HEADER_FRAMES, held)
            self.add("header_token", fid, frame.format(v=value), value, held)
        for index in range(10):
            held = index % 3 == 0
            user = g.pick(["admin", "alice", "deploy", "ci-bot", "root"])
            value = base64.b64encode(f"{user}:{g.password()}".encode()).decode()
            text = g.pick([f"curl -H 'Authorization: Basic {value}' https://x.example.com",
                           f"Authorization: Basic {value}",
                           f'"authorization": "Basic {value}"'])  # fmt: skip
            self.add("basic_auth", "basic", text, value, held)
        for scheme in URL_SCHEMES:
            held = scheme in self.held_schemes
            for _ in range(2):
                password = g.password().replace("@", "%40").replace("/", "%2F").replace("#", "%23")
                password = password.replace("?", "%3F").replace(":", "%3A")
                user = g.pick(["app", "admin", "svc_orders", "postgres", "u"])
                host = g.pick(["db.internal", "10.0.3.7", "cluster0.ab1cd.mongodb.net",
                               "cache.prod.example.com", "localhost"])  # fmt: skip
                url = f"{scheme}://{user}:{password}@{host}:5432/app"
                text = g.pick([f"DATABASE_URL={url}", f"connect to {url} please",
                               f"连接串是 {url}", f'url: "{url}"'])  # fmt: skip
                self.add("url_credentials", f"url:{scheme}", text, password, held)
        for index in range(6):
            held = index % 3 == 0
            key = g.hex(32)
            text = g.pick([
                f"SENTRY_DSN=https://{key}@o{g.digits(6)}.ingest.sentry.io/{g.digits(7)}",
                f"dsn: https://{key}@o{g.digits(6)}.ingest.us.sentry.io/{g.digits(7)}",
            ])  # fmt: skip
            self.add("sentry_dsn", "sentry", text, key, held)
        for index in range(4):
            held = index % 3 == 0
            token = g.pick(["ghp_" + g.an(36), "glpat-" + g.urlsafe(20), g.hex(40)])
            text = g.pick([f"git clone https://{token}@github.com/acme/api.git",
                           f"git remote set-url origin https://oauth2:{token}@gitlab.com/acme/web.git"])  # fmt: skip  # noqa: E501
            self.add("url_token", "git_url", text, token, held)
        for lang, frames in PASSWORD_FRAMES.items():
            for _ in range(len(frames) + 1):
                held_pick = g.rng.random() < 1 / 3
                fid, frame = self.frame(f"pw:{lang}", frames, held_pick)
                value = g.password()
                self.add("password", fid, frame.format(v=value), value, fid in self.held_frames)
        for index in range(8):
            held = index % 3 == 0
            value = "django-insecure-" + g.s(LOWER + DIGITS + "!@#%^&*(-_=+)", 50)
            text = g.pick([f"SECRET_KEY = '{value}'", f"SECRET_KEY='{value}'",
                           f'DJANGO_SECRET_KEY="{value}"'])  # fmt: skip
            self.add("django_secret", "django", text, value, held)
        for index in range(4):
            held = index % 3 == 0
            value = g.an(40)
            text = f"Server=tcp:db.example.net,1433;Database=shop;User Id=sa;Password={value};"
            if index % 2:
                value = g.b64(32)
                text = (f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName="
                        f"RootManageSharedAccessKey;SharedAccessKey={value}")  # fmt: skip
            self.add("connection_string", "conn", text, value, held)
        for index in range(9):
            held = index % 3 == 0
            label = g.pick(
                sorted(label for label in PEM_LABELS if (label in self.held_pem) == held)
            )
            value = g.pem(label)
            fid, frame = self.frame("pem", PEM_FRAMES, held)
            self.add("private_key", f"pem:{label}", frame.format(v=value), value, held)
        for index in range(9):
            held = index % 3 == 0
            value = g.jwt()
            fid, frame = self.frame("jwt", JWT_FRAMES, held)
            self.add("jwt", fid, frame.format(v=value), value, held)
        for index in range(12):
            held = index % 3 == 0
            value = g.card()
            fid, frame = self.frame("card", CARD_FRAMES, held)
            self.add("card_number", fid, frame.format(v=value), value, held)
        for index in range(12):
            held = index % 3 == 0
            value = g.iban()
            fid, frame = self.frame("iban", IBAN_FRAMES, held)
            self.add("iban", fid, frame.format(v=value), value, held)
        return self.rows


# ------------------------------------------------------------------ ordinary lines
def ordinary(seed: int) -> list[dict[str, object]]:
    """Lines with no secret, built from look-alikes. Each family is split by template."""
    g = Gen(random.Random(f"{seed}-ordinary"))
    split = random.Random(f"{seed}-ordinary-split")
    sha = lambda: hashlib.sha1(g.rng.randbytes(8)).hexdigest()  # noqa: E731
    families: dict[str, list[Callable[[], str]]] = {
        "git": [
            lambda: f"commit {sha()}",
            lambda: f"fixed in {sha()[:7]}, see the PR",
            lambda: f"git cherry-pick {sha()[:12]}",
            lambda: f"{sha()[:7]} feat: add retry to the uploader",
            lambda: f"Merge pull request #{g.digits(4)} from acme/fix-{g.s(LOWER, 6)}",
            lambda: f"git revert {sha()} broke the build on main",
            lambda: f"这个 bug 在 {sha()[:10]} 修好了",
            lambda: f"der Fehler kam mit Commit {sha()[:8]}",
            lambda: f"HEAD is now at {sha()[:7]} Bump version to {g.digits(1)}.{g.digits(2)}.0",
        ],
        "uuid": [
            lambda: f"request id {g.uuid()} failed with 502",
            lambda: f"trace_id={g.uuid()} span_id={g.hex(16)}",
            lambda: f'{{"id": "{g.uuid()}", "status": "active"}}',
            lambda: f"user {g.uuid()} not found in tenant {g.uuid()}",
            lambda: f"ユーザーID {g.uuid()} が見つかりません",
            lambda: f"idempotency_key: {g.uuid()}",
            lambda: f"session_id={g.uuid()}; the cookie looks fine",
            lambda: f"correlation-id: {g.uuid()}",
        ],
        "hash": [
            lambda: f"sha256:{g.hex(64)}",
            lambda: f"{g.hex(64)}  memfold-0.1.{g.digits(1)}.tar.gz",
            lambda: f"md5sum says {g.hex(32)} for both files",
            lambda: f'ETag: "{g.hex(32)}"',
            lambda: f"integrity sha512-{g.b64(64)}",
            lambda: f'<script src="app.js" integrity="sha384-{g.b64(48)}"></script>',
            lambda: f"docker pull ghcr.io/acme/api@sha256:{g.hex(64)}",
            lambda: f"checksum: {g.hex(40)}",
            lambda: f"The key fingerprint is SHA256:{g.b64(32).rstrip('=')} alice@laptop",
            lambda: f"cache key {g.hex(40)} missed, rebuilding",
            lambda: f"Prüfsumme {g.hex(64)} stimmt",
            lambda: f"CONTAINER ID {g.hex(12)}   IMAGE nginx:1.27",
            lambda: f"blob {g.hex(40)} is {g.digits(5)} bytes",
            lambda: f"hash = hashlib.sha256(data).hexdigest()  # e.g. {g.hex(64)}",
        ],
        "base64": [
            lambda: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA" + g.b64(180),
            lambda: f"background: url(data:image/svg+xml;base64,PHN2ZyB4bWxucz0i{g.b64(90)});",
            lambda: f'<img src="data:image/jpeg;base64,/9j/4AAQSkZJRgABAQ{g.b64(150)}">',
            lambda: (
                f"the payload is base64: {base64.b64encode(g.pick(['hello world', 'order shipped', '你好']).encode()).decode()}"  # noqa: E501
            ),
            lambda: f'"thumbnail": "data:image/webp;base64,UklGR{g.b64(120)}"',
            lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{g.b64(32).rstrip('=')} alice@laptop",
            lambda: f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{g.b64(200)} deploy@ci",
        ],
        "version": [
            lambda: f"upgraded requests to 2.{g.digits(2)}.{g.digits(1)}",
            lambda: f"Python 3.{g.digits(2)}.{g.digits(1)} and Node v{g.digits(2)}.{g.digits(2)}.1",
            lambda: f"pip install numpy=={g.digits(1)}.{g.digits(2)}.4 pandas>=2.{g.digits(1)}",
            lambda: (
                f"release v{g.digits(1)}.{g.digits(1)}.{g.digits(1)}-rc.{g.digits(1)}+build.{g.digits(3)}"  # noqa: E501
            ),
            lambda: f"build 2024.{g.digits(2)}.{g.digits(2)}.{g.digits(4)} is on staging",
            lambda: f"kernel 6.{g.digits(1)}.0-{g.digits(2)}-generic #{g.digits(2)}-Ubuntu",
            lambda: f"Chrome/{g.digits(3)}.0.{g.digits(4)}.{g.digits(3)} Safari/537.36",
            lambda: f"版本号 {g.digits(1)}.{g.digits(2)}.{g.digits(1)} 已发布",
        ],
        "order": [
            lambda: f"order #{g.s(UPPER, 2)}-{g.digits(6)} has not arrived",
            lambda: f"Bestellnummer {g.digits(3)}-{g.digits(7)}-{g.digits(7)}",
            lambda: f"tracking number 1Z{g.s(UPPER + DIGITS, 16)}",
            lambda: f"invoice INV-2024-{g.digits(5)} is overdue",
            lambda: f"ticket JIRA-{g.digits(4)} is blocked by OPS-{g.digits(3)}",
            lambda: f"订单号 {g.digits(18)} 还没发货",
            lambda: f"numéro de commande {g.digits(9)}",
            lambda: f"case {g.digits(8)} with support",
            lambda: f"ISBN 978-{g.digits(1)}-{g.digits(2)}-{g.digits(6)}-{g.digits(1)}",
            lambda: f"PO number {g.digits(10)}, cost center {g.digits(4)}",
            lambda: f"arn:aws:iam::{g.digits(12)}:role/deploy-{g.s(LOWER, 5)}",
            lambda: f"Stripe customer cus_{g.an(14)} paid invoice in_{g.an(24)}",
            lambda: f"payment intent pi_{g.an(24)} succeeded",
            lambda: f"the completion id was chatcmpl-{g.an(29)}",
            lambda: f"Anthropic returned msg_01{g.an(22)} with stop_reason end_turn",
            lambda: f"thread_{g.an(24)} has 12 messages, run run_{g.an(24)} is queued",
            lambda: (
                f"pod api-{g.s(LOWER + DIGITS, 9)}-{g.s(LOWER + DIGITS, 5)} is CrashLoopBackOff"
            ),
        ],
        "phone": [
            lambda: f"call me at +49 30 {g.digits(7)}",
            lambda: f"my number is ({g.digits(3)}) {g.digits(3)}-{g.digits(4)}",
            lambda: f"我的手机号 13{g.digits(9)[:9]}",
            lambda: f"+33 6 {g.digits(2)} {g.digits(2)} {g.digits(2)} {g.digits(2)} is my mobile",
            lambda: f"ruf mich unter 0171 {g.digits(7)} an",
            lambda: f"fax: +1-{g.digits(3)}-{g.digits(3)}-{g.digits(4)}",
            lambda: f"電話番号は 090-{g.digits(4)}-{g.digits(4)} です",
        ],
        "placeholder": [
            lambda: "OPENAI_API_KEY=${OPENAI_API_KEY}",
            lambda: "API_KEY=<your-api-key>",
            lambda: "export GITHUB_TOKEN=xxx",
            lambda: "password: changeme",
            lambda: "SECRET_KEY=your-secret-key-here",
            lambda: 'token: "{{ .Values.token }}"',
            lambda: 'password = os.environ["DB_PASSWORD"]',
            lambda: "api_key=settings.API_KEY",
            lambda: "Authorization: Bearer $TOKEN",
            lambda: "Authorization: Bearer <token>",
            lambda: 'password=""',
            lambda: f"TOKEN_EXPIRY={g.digits(4)}",
            lambda: f"MAX_TOKENS={g.pick(['1024', '4096', '8192'])}",
            lambda: "KEY_SIZE=2048",
            lambda: "SECRET_KEY_FALLBACKS = []",
            lambda: f"PASSWORD_MIN_LENGTH={g.pick(['8', '12', '16'])}",
            lambda: "api_key: ${{ secrets.OPENAI_API_KEY }}",
            lambda: "AUTH_TYPE=oauth2",
            lambda: "token_type=bearer",
            lambda: "id = Column(Integer, primary_key=True)",
            lambda: "DB_PASSWORD=****",
            lambda: "STRIPE_SECRET_KEY=sk_live_...",
            lambda: "X-Api-Key: YOUR_API_KEY",
            lambda: "const apiKey = process.env.API_KEY;",
            lambda: "client = OpenAI(api_key=os.getenv('OPENAI_API_KEY'))",
            lambda: "REDIS_PASSWORD=${REDIS_PASSWORD:-}",
            lambda: "token = request.headers.get('Authorization')",
            lambda: "ENCRYPTION_KEY=  # set me",
            lambda: "export AWS_SECRET_ACCESS_KEY=$(vault kv get -field=key aws/ci)",
            lambda: "SESSION_COOKIE_SECURE = True",
            lambda: "JWT_ALGORITHM=HS256",
            lambda: f"CACHE_KEY_PREFIX=app_{g.s(LOWER, 4)}",
        ],
        "talk": [
            lambda: "I forgot my password again, how do I reset it?",
            lambda: "das Passwort muss mindestens 12 Zeichen haben",
            lambda: "le mot de passe est trop court",
            lambda: "la contraseña es incorrecta, dice el login",
            lambda: "a senha expirou ontem",
            lambda: "パスワードを忘れました",
            lambda: "密码太短了，至少要 8 位",
            lambda: "password is required",
            lambda: "my password is too short for the new policy",
            lambda: "the password is the same as before",
            lambda: "where do I put the API key in the settings page?",
            lambda: "the token expired after 3600 seconds",
            lambda: "we rotate secrets every 90 days",
            lambda: "mein Passwort ist abgelaufen",
            lambda: "mon mot de passe ne marche plus",
            lambda: "mi contraseña no funciona desde ayer",
            lambda: "minha senha é muito fraca, segundo o site",
            lambda: "パスワードは8文字以上です",
            lambda: "我的密码是什么来着？",
            lambda: "Secret Santa at the office is on Friday",
            lambda: "the key insight is that the cache is per-thread",
            lambda: "Token-based auth is easier than sessions here",
            lambda: "the pin is pulled high by a 10k resistor",
            lambda: "use a password manager, not a sticky note",
            lambda: "wachtwoord vergeten, wat nu?",
            lambda: "пароль не подходит",
            lambda: "비밀번호를 잊어버렸어요",
            lambda: "la password deve avere almeno 10 caratteri",
        ],
        "url": [
            lambda: f"https://github.com/acme/api/pull/{g.digits(4)}",
            lambda: "postgres://localhost:5432/app",
            lambda: "redis://cache:6379/0",
            lambda: "git@github.com:acme/api.git",
            lambda: "ssh://git@gitlab.example.com:2222/acme/web.git",
            lambda: f"https://example.com/search?q=token&page={g.digits(1)}",
            lambda: "http://[::1]:8080/healthz",
            lambda: "https://docs.example.com/api#authentication",
            lambda: f"https://www.youtube.com/watch?v={g.urlsafe(11)}",
            lambda: f"https://drive.google.com/file/d/{g.urlsafe(33)}/view",
            lambda: f"https://s3.amazonaws.com/acme-assets/{g.uuid()}.png",
            lambda: "mongodb://mongo-0.mongo:27017,mongo-1.mongo:27017/?replicaSet=rs0",
            lambda: "https://user@example.com/profile",
            lambda: f"https://shop.example.com/orders/{g.digits(8)}?ref=email",
            lambda: "amqp://rabbitmq:5672/%2F",
            lambda: f"https://hooks.example.com/build/{g.digits(6)}",
        ],
        "numbers": [
            lambda: f"the card ending in {g.digits(4)} was declined",
            lambda: f"4111 1111 1111 111{g.pick(['2', '3', '4'])} is not a valid test card",
            lambda: f"IMEI {g.digits(15)} is blacklisted?",
            lambda: (
                f"MAC address {g.s('0123456789abcdef', 2)}:{g.hex(2)}:{g.hex(2)}:{g.hex(2)}:{g.hex(2)}:{g.hex(2)}"  # noqa: E501
            ),
            lambda: (
                f"IP 10.{g.rng.randrange(256)}.{g.rng.randrange(256)}.{g.rng.randrange(256)} is blocked"  # noqa: E501
            ),
            lambda: f"timestamp {g.digits(13)} in ms",
            lambda: f"account number ends with {g.digits(4)}",
            lambda: f"the total was {g.digits(3)},{g.digits(2)} EUR",
            lambda: f"2024-{g.digits(2)[:1]}1-{g.digits(2)[:1]}4T09:{g.digits(2)[:1]}0:00Z",
            lambda: f"port {g.digits(4)} is already in use",
            lambda: f"Kontonummer {g.digits(10)}",
            lambda: f"DE{g.digits(2)} is the prefix of German IBANs",
        ],
        "code": [
            lambda: "token = secrets.token_hex(32)",
            lambda: "key = os.urandom(16)",
            lambda: 'jwt.decode(token, key, algorithms=["HS256"])',
            lambda: "def get_token(self) -> str:",
            lambda: "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
            lambda: "if not api_key: raise ValueError('missing api key')",
            lambda: "-----BEGIN CERTIFICATE-----",
            lambda: "-----BEGIN PUBLIC KEY-----",
            lambda: "for key, value in secrets.items():",
            lambda: "self.assertEqual(resp.status_code, 401)",
            lambda: f"const id = '{g.hex(24)}'; // mongo ObjectId",
            lambda: f"kid: {g.hex(16)}",
            lambda: "SELECT password_hash FROM users WHERE id = $1",
            lambda: "raise AuthError('invalid token')",
            lambda: "@app.get('/api/keys/{key_id}')",
            lambda: f"nonce={g.hex(16)}",
        ],
        "chat": [
            lambda: "Can you refactor this so it returns early when the list is empty?",
            lambda: "请帮我把这段代码改成异步的，顺便加上超时。",
            lambda: "Kannst du mir erklären, wie man einen Index in PostgreSQL anlegt?",
            lambda: "Peux-tu résumer cet article en trois phrases ?",
            lambda: "¿Cómo configuro el proxy en Docker?",
            lambda: "Como faço para ordenar uma lista em Python?",
            lambda: "このエラーの原因を教えてください",
            lambda: f"I live in Berlin and work at a startup with {g.digits(2)} people",
            lambda: "My daughter's birthday is on the 14th, remind me",
            lambda: f"the meeting is in room {g.digits(3)} at 3pm",
            lambda: "I prefer tabs over spaces, but the team uses 4 spaces",
            lambda: "我喜欢喝咖啡，不加糖",
        ],
    }
    rows: list[dict[str, object]] = []
    for family, makers in families.items():
        ids = list(range(len(makers)))
        split.shuffle(ids)
        held = set(ids[: len(ids) // 3])
        for index, make in enumerate(makers):
            for _ in range(4 if family in {"hash", "uuid", "git", "base64"} else 3):
                text = make()
                rows.append({"family": family, "text": text, "heldout": index in held})
    return rows


def _dump(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def files(seed: int) -> dict[str, str]:
    secrets = Builder(seed).build()
    lines = ordinary(seed)
    out = {}
    for part, held in (("tuned", False), ("heldout", True)):
        out[f"secrets_{part}.jsonl"] = _dump(
            [
                {k: v for k, v in r.items() if k != "heldout"}
                for r in secrets
                if r["heldout"] == held
            ]
        )
        out[f"ordinary_{part}.jsonl"] = _dump(
            [{k: v for k, v in r.items() if k != "heldout"} for r in lines if r["heldout"] == held]
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    differ = []
    for name, text in files(args.seed).items():
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text("utf-8") != text:
                differ.append(name)
        else:
            path.write_text(text, "utf-8")
    for name in differ:
        print(f"{name} differs from the generator's output", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
