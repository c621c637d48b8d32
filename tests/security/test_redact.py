"""``memfold.redact``: what each detector replaces, and what it leaves alone."""

from __future__ import annotations

import pytest

from memfold.config import MemoryConfig
from memfold.model import Message
from memfold.redact import Finding, Redactor, is_only_redaction, redact_messages, redactor_for

FAKE_GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
FAKE_AWS_ID = "AKIA" + "ABCDEFGHIJ234567"


def test_findings_give_kind_and_exact_span() -> None:
    text = f"token {FAKE_GITHUB} ok"
    (finding,) = Redactor().findings(text)
    assert finding == Finding("github_token", 6, 6 + len(FAKE_GITHUB))


def test_secret_is_replaced_by_a_marker_naming_its_kind() -> None:
    assert Redactor().redact(f"key {FAKE_AWS_ID}.") == "key [REDACTED:aws_access_key]."


def test_url_password_is_redacted_and_the_rest_of_the_url_kept() -> None:
    out = Redactor().redact("use postgres://app:s3cr3t-pass@db.internal:5432/app now")
    assert out == "use postgres://app:[REDACTED:url_password]@db.internal:5432/app now"


def test_private_key_block_is_redacted_whole() -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\nxyz==\n-----END RSA PRIVATE KEY-----"
    assert Redactor().redact(f"see:\n{block}\nthanks") == "see:\n[REDACTED:private_key]\nthanks"


def test_unterminated_private_key_block_is_redacted_to_the_end() -> None:
    out = Redactor().redact("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt")
    assert out == "[REDACTED:private_key]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my password is hunter22", "my password is [REDACTED:password]"),
        ("My password is swordfish.", "My password is [REDACTED:password]."),
        ("我的密码是abc123456，记住", "我的密码是[REDACTED:password]，记住"),
        ("口令：Zx9!kq77", "口令：[REDACTED:password]"),
        ('password="p@ss w0rd" host=db', "password=[REDACTED:password] host=db"),
    ],
)
def test_password_statements_are_redacted(text: str, expected: str) -> None:
    assert Redactor().redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the password is required",
        "my password is incorrect",
        "密码是什么？",
        "密码是必填项",
        "password: str",
        "password = get_password()",
    ],
)
def test_talk_about_passwords_is_not_redacted(text: str) -> None:
    assert Redactor().findings(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MYSQL_ROOT_PASSWORD=rootpw123", "MYSQL_ROOT_PASSWORD=[REDACTED:password]"),
        ("export PGPASSWORD=s3cretpw", "export PGPASSWORD=[REDACTED:password]"),
        ("DB_PASS=supersecret1 DB_HOST=db", "DB_PASS=[REDACTED:password] DB_HOST=db"),
        ('POSTGRES_PASSWORD: "hunter22"', "POSTGRES_PASSWORD: [REDACTED:password]"),
        ("redis.password=hunter22", "redis.password=[REDACTED:password]"),
        ("password=pa$$w0rd", "password=[REDACTED:password]"),
        ("password=<secret123>x", "password=[REDACTED:password]"),
    ],
)
def test_passwords_assigned_to_env_style_names_or_holding_symbols_are_redacted(
    text: str, expected: str
) -> None:
    assert Redactor().redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "bypass=12345678",
        "max_password_length=12",
        "password_hash=abcdef123",
        "password=os.environ['DB_PASSWORD']",
        "DB_PASSWORD=${DB_PASSWORD}",
        'password: "${DB_PASSWORD}"',
        "password: {{ vault_db_password }}",
        "PASSWORD=<your password>",
    ],
)
def test_names_and_placeholders_near_password_keys_are_not_redacted(text: str) -> None:
    assert Redactor().findings(text) == []


def test_luhn_valid_card_numbers_are_redacted_in_any_usual_grouping() -> None:
    redactor = Redactor()
    for card in ("4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111"):
        assert redactor.redact(f"card {card} exp 09/28") == "card [REDACTED:card_number] exp 09/28"


def test_card_like_numbers_failing_luhn_or_issuer_are_kept() -> None:
    redactor = Redactor()
    assert redactor.findings("card 4111 1111 1111 1112") == []  # Luhn fails
    assert redactor.findings("id 1000000000000008") == []  # Luhn-valid, no card issuer


def test_openai_and_anthropic_keys_get_their_own_kinds() -> None:
    redactor = Redactor()
    ant = "sk-ant-api03-" + "x7Y" * 30
    oai = "sk-proj-" + "Ab3" * 20
    kinds = [f.kind for f in redactor.findings(f"{ant} and {oai}")]
    assert kinds == ["anthropic_key", "openai_key"]


def test_aws_secret_key_needs_aws_context_and_mixed_case() -> None:
    redactor = Redactor()
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE12"
    assert redactor.findings(f"aws secret key {secret}")[0].kind == "aws_secret_key"
    assert redactor.findings(f"aws commit {'a1b2c3d4e5' * 4}") == []  # a git SHA
    assert redactor.findings(f"just a string {secret}") == []


def test_overlapping_matches_keep_the_longest() -> None:
    jwt = (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    )
    assert Redactor().redact(f"Bearer {jwt}") == "Bearer [REDACTED:jwt]"


def test_emails_and_phones_are_kept_unless_switched_on() -> None:
    text = "write to ann.lee@example.org or call +1 415 555 0132"
    assert Redactor().redact(text) == text
    assert Redactor(emails=True).redact(text) == (
        "write to [REDACTED:email] or call +1 415 555 0132"
    )
    assert Redactor(phones=True).redact(text) == (
        "write to ann.lee@example.org or call [REDACTED:phone]"
    )


@pytest.mark.parametrize("text", ["13800138000", "(212) 555-0187", "+44 20 7946 0958"])
def test_phone_formats_are_redacted_when_switched_on(text: str) -> None:
    assert Redactor(phones=True).redact(f"tel {text}.") == "tel [REDACTED:phone]."


@pytest.mark.parametrize("text", ["2024-05-14", "v1.2.3", "10.0.0.255", "at 09:30"])
def test_dates_versions_and_addresses_are_not_phones(text: str) -> None:
    assert Redactor(phones=True).findings(text) == []


def test_secrets_switch_off_leaves_keys_alone() -> None:
    text = f"key {FAKE_AWS_ID} mail a@b.io"
    assert (
        Redactor(secrets=False, emails=True).redact(text)
        == f"key {FAKE_AWS_ID} mail [REDACTED:email]"
    )


def test_redactor_for_follows_the_config_switches() -> None:
    assert redactor_for(MemoryConfig(redact_secrets=False)) is None
    scrub = redactor_for(MemoryConfig())
    assert scrub is not None
    assert scrub(f"key {FAKE_AWS_ID}") == "key [REDACTED:aws_access_key]"
    email_scrub = redactor_for(MemoryConfig(redact_secrets=False, redact_emails=True))
    assert email_scrub is not None
    assert email_scrub(f"{FAKE_AWS_ID} a@b.io") == f"{FAKE_AWS_ID} [REDACTED:email]"


def test_redact_messages_scrubs_content_and_keeps_role_and_id() -> None:
    clean = Message("assistant", "hello")
    dirty = Message("user", f"my key {FAKE_GITHUB}", id="m2")
    out = redact_messages([clean, dirty], Redactor())
    assert out[0] is clean
    assert out[1] == Message("user", "my key [REDACTED:github_token]", id="m2")
    assert redact_messages([dirty], None) == (dirty,)


def test_redaction_is_idempotent() -> None:
    redactor = Redactor(emails=True, phones=True)
    once = redactor.redact(f"{FAKE_GITHUB} password: hunter22 a@b.io +1 415 555 0132")
    assert redactor.redact(once) == once


def test_redact_all_matches_redact_on_each_text() -> None:
    redactor = Redactor(emails=True)
    texts = ["", "plain words", f"key {FAKE_GITHUB}", "mail a@b.io", "password: hunter22"]
    assert redactor.redact_all(texts) == [redactor.redact(t) for t in texts]
    assert redactor.redact_all(["a", "b"])[0] == "a"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "my password is 'correct horse battery staple'",
            "my password is '[REDACTED:password]'",
        ),
        (
            'My passphrase is "correct horse battery staple", ok?',
            'My passphrase is "[REDACTED:password]", ok?',
        ),
        (
            "the wifi password is “purple monkey dishwasher”.",
            "the wifi password is “[REDACTED:password]”.",
        ),
        ("pw: hunter22x", "pw: [REDACTED:password]"),
        ("pwd: hunter22x", "pwd: [REDACTED:password]"),
        ("my pw is Hunter22x", "my pw is [REDACTED:password]"),
        ("DB_PW=hunter22x", "DB_PW=[REDACTED:password]"),
    ],
)
def test_quoted_passphrases_and_short_password_words_are_redacted(text: str, expected: str) -> None:
    assert Redactor().redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("密码 abc12345", "密码 [REDACTED:password]"),
        ("我的密码 abc12345，别外传", "我的密码 [REDACTED:password]，别外传"),
        ("wifi密码abc12345", "wifi密码[REDACTED:password]"),
        ("密码是：１２３４５６", "密码是：[REDACTED:password]"),
        ("密码：Ａｂｃ１２３４５。", "密码：[REDACTED:password]。"),
        ("我的口令是 Zx9kq77w", "我的口令是 [REDACTED:password]"),
        ("密钥是 sk123abcdef456", "密钥是 [REDACTED:secret]"),
        ("API密钥：AbCd1234EfGh5678", "API密钥：[REDACTED:secret]"),
        ("秘钥为 Abc123456xyz", "秘钥为 [REDACTED:secret]"),
        ("token 是 abcdef123456789xyz", "token 是 [REDACTED:secret]"),
        ("我的token是abc123def456ghi，帮我看看", "我的token是[REDACTED:secret]，帮我看看"),
    ],
)
def test_chinese_secret_statements_with_or_without_a_verb_are_redacted(
    text: str, expected: str
) -> None:
    assert Redactor().redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ｐａｓｓｗｏｒｄ: hunter22", "ｐａｓｓｗｏｒｄ: [REDACTED:password]"),
        ("password：ｈｕｎｔｅｒ２２", "password：[REDACTED:password]"),
        (
            "token " + FAKE_GITHUB.translate({c: c + 0xFEE0 for c in range(0x21, 0x7F)}),
            "token [REDACTED:github_token]",
        ),
        ("卡号 ４１１１ １１１１ １１１１ １１１１", "卡号 [REDACTED:card_number]"),
    ],
)
def test_full_width_characters_are_detected_and_the_original_span_replaced(
    text: str, expected: str
) -> None:
    assert Redactor().redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "password: process.env.DB_PASSWORD",
        "password: config.db.password",
        "password: settings.DB_PASSWORD,",
        "pw: str",
        "密码 SHA256 哈希后存储",
        "密码 reset 流程在哪里？",
        "密码 ******",
        "密钥是 RSA2048",
        "token 是 JWT 格式",
        "the password is 'too short' according to the validator",
        'the error says "password is required"',
        "my password is 'not strong enough'",
    ],
)
def test_references_algorithms_and_quoted_messages_are_not_redacted(text: str) -> None:
    assert Redactor().findings(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I changed my password to hunter22 yesterday",
            "I changed my password to [REDACTED:password] yesterday",
        ),
        ('set the password to "Winter2024!"', 'set the password to "[REDACTED:password]"'),
        ("My PIN is 4321", "My PIN is [REDACTED:password]"),
    ],
)
def test_passwords_set_to_a_value_and_pins_are_redacted(text: str, expected: str) -> None:
    assert Redactor().redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "reset the password to default",
        "Set the password to at least 12 characters",
        "The pin is pulled high by default on GPIO 17.",
        "pin: 3.3V, GND, SDA, SCL",
        "密码是8-16位",
        "密码是 SHA256 加密的",
        "口令为 UTF-8",
        "密码为 null",
        "密码是 ${DB_PASSWORD}",
        "密码：xxxxxxxx",
        'password: "********"',
        "PW=$(cat /run/secrets/pw)",
        "password: !vault |",
    ],
)
def test_sizes_algorithms_masks_and_commands_after_password_words_are_not_redacted(
    text: str,
) -> None:
    assert Redactor().findings(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "My key is [REDACTED:openai_key]",
        "API token: [REDACTED:secret]",
        "User's OpenAI API key is [REDACTED:openai_key].",
        "The user's password for the staging db is [REDACTED:password]",
        "密码是[REDACTED:password]",
        "我的 GitHub token 是 [REDACTED:github_token]",
        "[REDACTED:aws_access_key] and [REDACTED:aws_secret_key]",
    ],
)
def test_text_saying_nothing_but_a_redacted_secret_is_only_redaction(text: str) -> None:
    assert is_only_redaction(text)


@pytest.mark.parametrize(
    "text",
    [
        "Deploys to staging with [REDACTED:aws_access_key]",
        "Prefers short answers",
        "Lives in Berlin; key [REDACTED:openai_key]",
        "Lives in Berlin and the key is [REDACTED:openai_key]",
        "Is rotating [REDACTED:github_token] after the leak in the CI logs",
        "",
        "My key is sk-nope",
    ],
)
def test_text_with_more_than_a_redacted_secret_is_not_only_redaction(text: str) -> None:
    assert not is_only_redaction(text)


def test_every_kind_of_marker_alone_with_filler_is_only_redaction() -> None:
    redactor = Redactor(emails=True, phones=True)
    kinds = {
        finding.kind
        for finding in redactor.findings(
            f"{FAKE_GITHUB} {FAKE_AWS_ID} a@b.io +1 415 555 0132 password: hunter22"
        )
    }
    assert kinds == {"github_token", "aws_access_key", "email", "phone", "password"}
    for kind in kinds:
        assert is_only_redaction(f"My {kind.replace('_', ' ')} is [REDACTED:{kind}]")


@pytest.mark.parametrize(
    "text",
    [
        "I changed my password to hunter22x yesterday",
        "password for the db: 'pa ss w0rd'",
        "密码 abc12345，密钥是 sk123abcdef456，token 是 abcdef123456789xyz",
        "ｐａｓｓｗｏｒｄ: hunter22 and pw: hunter33x",
        "My PIN is 4321; card 4111 1111 1111 1111",
    ],
)
def test_redacting_redacted_text_changes_nothing(text: str) -> None:
    redactor = Redactor(emails=True, phones=True)
    once = redactor.redact(text)
    assert once != text
    assert redactor.redact(once) == once
