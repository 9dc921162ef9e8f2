"""Writes the detection corpus ``bench/data/detect-corpus.jsonl`` (and the test sample).

Every value is synthetic: random bodies in each provider's published format, personal data that
passes its checksum but belongs to nobody. Each positive names its kind and the exact ``secret``
as it appears in the text (the leak test checks every 8-character run of it); benign look-alikes
(UUIDs, git SHAs, hashes, documentation example keys, version strings, prose about passwords,
test card numbers) have ``kind: null``.

Two splits: ``dev`` (the templates the detectors were developed against) and ``heldout``
(different templates and value shapes, written separately and not tuned on). The generator is
seeded: the same file comes out every time.

    python bench/detect_corpus.py
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import phonenumbers
from stdnum import iban, luhn
from stdnum.br import cpf
from stdnum.es import ccc, dni
from stdnum.fr import nir
from stdnum.it import codicefiscale

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "data" / "detect-corpus.jsonl"
SAMPLE = ROOT / "tests" / "vectors" / "detect-sample.jsonl"

R = random.Random(20261201)
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def rand(alphabet: str, n: int) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# -- secret values ---------------------------------------------------------------------------


def aws_key() -> str:
    return R.choice(["AKIA", "ASIA"]) + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)


def jwt() -> str:
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": rand(string.digits, 8), "name": rand(string.ascii_lowercase, 6), "iat": 1733}
    return f"{head}.{b64url(json.dumps(claims).encode())}.{b64url(R.randbytes(32))}"


def pem_body(lines: int = 6) -> list[str]:
    first = "MIIEowIBAAKCAQEA" + rand(B64, 48)
    return [first] + [rand(B64, 64) for _ in range(lines - 2)] + [rand(B64, 40) + "=="]


def pem(kind: str = "RSA ") -> str:
    body = "\n".join(pem_body())
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"


def putty() -> str:
    pub = "\n".join("AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + rand(B64, 34) for _ in range(2))
    priv = "\n".join(rand(B64, 64) for _ in range(4))
    return (
        "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\n"
        f"Comment: rsa-key-2026\nPublic-Lines: 2\n{pub}\nPrivate-Lines: 4\n{priv}\n"
        f"Private-MAC: {rand(HEX, 64)}"
    )


def jwk() -> str:
    return json.dumps(
        {"kty": "EC", "crv": "P-256", "x": b64url(R.randbytes(32)), "y": b64url(R.randbytes(32)),
         "d": b64url(R.randbytes(32))}
    )  # fmt: skip


def password() -> str:
    words = ["Tr0ub4dor", "Blue", "Falcon", "Quartz", "m0nkey", "Harbor", "Cobalt", "Zebra"]
    return R.choice(words) + R.choice("!#%&*-_.") + rand(ALNUM, R.randint(5, 9))


SECRET_VALUES: dict[str, Callable[[], str]] = {
    "aws_access_key_id": aws_key,
    "aws_secret_access_key": lambda: rand(B64, 40),
    "github_token": lambda: R.choice(["ghp_", "gho_", "ghs_"]) + rand(ALNUM, 36),
    "github_fine_grained_token": lambda: "github_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59),
    "gitlab_token": lambda: "glpat-" + rand(URLSAFE, 20),
    "slack_token": lambda: (
        R.choice(["xoxb-", "xoxp-"])
        + f"{rand(string.digits, 12)}-{rand(string.digits, 12)}-{rand(ALNUM, 24)}"
    ),
    "slack_app_token": lambda: (
        f"xapp-1-A{rand(UPPER, 10)}-{rand(string.digits, 13)}-{rand(HEX, 64)}"
    ),
    "slack_webhook": lambda: (
        "https://hooks.slack.com/services/T"
        + rand(UPPER, 10)
        + "/B"
        + rand(UPPER, 10)
        + "/"
        + rand(ALNUM, 24)
    ),
    "stripe_key": lambda: R.choice(["sk_live_", "rk_live_", "pk_live_"]) + rand(ALNUM, 34),
    "stripe_webhook_secret": lambda: "whsec_" + rand(ALNUM, 32),
    "openai_key": lambda: "sk-proj-" + rand(URLSAFE, 48) + "T3BlbkFJ" + rand(URLSAFE, 48),
    "anthropic_key": lambda: "sk-ant-api03-" + rand(URLSAFE, 93) + "AA",
    "google_api_key": lambda: "AIza" + rand(URLSAFE, 35),
    "sendgrid_key": lambda: "SG." + rand(URLSAFE, 22) + "." + rand(URLSAFE, 43),
    "npm_token": lambda: "npm_" + rand(ALNUM, 36),
    "pypi_token": lambda: "pypi-AgEIcHlwaS5vcmc" + rand(URLSAFE, 60),
    "vault_token": lambda: "hvs." + rand(URLSAFE, 24),
    "shopify_token": lambda: "shpat_" + rand(HEX, 32),
    "digitalocean_token": lambda: "dop_v1_" + rand(HEX, 64),
    "telegram_bot_token": lambda: f"{R.randint(100000000, 9999999999)}:AA{rand(URLSAFE, 33)}",
    "azure_storage_key": lambda: rand(B64, 86) + "==",
    "azure_sas_signature": lambda: rand(ALNUM, 30) + "%2B" + rand(ALNUM, 10) + "%3D",
    "jwt": jwt,
    "private_key": pem,
    "putty_private_key": putty,
    "jwk_private_key": jwk,
    "connection_string_password": password,
    "password_assignment": password,
}


# -- personal data values --------------------------------------------------------------------


def card() -> str:
    prefix = R.choice(["4", "51", "52", "55", "2221", "37", "34", "6011"])
    length = 15 if prefix.startswith("3") else 16
    body = prefix + rand(string.digits, length - len(prefix) - 1)
    number = body + luhn.calc_check_digit(body)
    if length == 15:
        return f"{number[:4]} {number[4:10]} {number[10:]}"
    return " ".join(number[i : i + 4] for i in range(0, 16, 4))


def _spanish_bban() -> str:
    """Bank, branch, two national check digits, account (the CCC that Spanish IBANs carry)."""
    draft = rand(string.digits, 8) + "00" + rand(string.digits, 10)
    return draft[:8] + ccc.calc_check_digits(draft) + draft[10:]


def an_iban() -> str:
    country, bban = R.choice(
        [("DE", rand(string.digits, 18)), ("FR", rand(string.digits, 23)),
         ("NL", rand(string.ascii_uppercase, 4) + rand(string.digits, 10)),
         ("ES", _spanish_bban()), ("GB", rand(string.ascii_uppercase, 4) + rand(string.digits, 14))]
    )  # fmt: skip
    check = iban.calc_check_digits(country + "00" + bban)
    compact = country + check + bban
    return " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))


def ssn() -> str:
    while True:
        area = R.randint(1, 899)
        if area != 666:
            return f"{area:03d}-{R.randint(1, 99):02d}-{R.randint(1, 9999):04d}"


def nino() -> str:
    prefix = "KN"
    while prefix in ("BG", "GB", "NK", "KN", "TN", "NT", "ZZ"):  # never issued (HMRC)
        prefix = R.choice("ACEHJKLMPRSTWXY") + R.choice("ABCEHJKLMNPRSTWXY")
    return prefix + " " + " ".join(
        rand(string.digits, 2) for _ in range(3)
    ) + " " + R.choice("ABCD")  # fmt: skip


def a_dni() -> str:
    body = rand(string.digits, 8)
    return body + dni.calc_check_digit(body)


def a_nir() -> str:
    body = f"{R.choice('12')}{R.randint(40, 99)}{R.randint(1, 12):02d}{R.randint(1, 95):02d}"
    body += rand(string.digits, 6)
    return f"{body} {nir.calc_check_digits(body)}"


def a_cf() -> str:
    letters = string.ascii_uppercase
    body = rand(letters, 6) + rand(string.digits, 2) + R.choice("ABCDEHLMPRST")
    body += f"{R.randint(1, 28):02d}" + R.choice(letters) + rand(string.digits, 3)
    return body + codicefiscale.calc_check_digit(body)


def a_cpf() -> str:
    number = rand(string.digits, 9)
    for weight in (10, 11):  # the two mod-11 check digits (Receita Federal)
        total = sum((weight - i) * int(d) for i, d in enumerate(number))
        number += str(total * 10 % 11 % 10)
    assert cpf.is_valid(number)
    return f"{number[:3]}.{number[3:6]}.{number[6:9]}-{number[9:]}"


def phone_intl() -> str:
    while True:  # an allocated number (libphonenumber's metadata), as a real one would be
        number = _phone_intl_draft()
        if phonenumbers.is_valid_number(phonenumbers.parse(number, None)):
            return number


def _phone_intl_draft() -> str:
    return R.choice(
        [f"+44 20 7{rand(string.digits, 3)} {rand(string.digits, 4)}",
         f"+1 415 {R.randint(200, 999)} {rand(string.digits, 4)}",
         f"+49 30 {rand(string.digits, 8)}", f"+33 6 {' '.join(rand(string.digits, 2) for _ in range(4))}",  # noqa: E501
         f"+34 6{rand(string.digits, 2)} {rand(string.digits, 3)} {rand(string.digits, 3)}",
         f"+61 4{rand(string.digits, 2)} {rand(string.digits, 3)} {rand(string.digits, 3)}"]
    )  # fmt: skip


def phone_national() -> str:
    area = R.choice(["415", "212", "312", "617", "206", "303", "404", "512"])
    exchange = R.randint(201, 999)
    while exchange == 555:
        exchange = R.randint(201, 999)
    line = rand(string.digits, 4)
    return R.choice(
        [f"({area}) {exchange}-{line}", f"{area}-{exchange}-{line}", f"{area}.{exchange}.{line}"]
    )


def email() -> str:
    user = R.choice(["maria.garcia", "j.smith", "wei.chen", "olu.adeyemi", "anna_k", "p.novak"])
    domain = R.choice(
        ["gmail.com", "contoso-corp.com", "fastmail.fm", "uni-heidelberg.de", "acme.co.uk"]
    )
    return f"{user}{R.randint(1, 99)}@{domain}"


PII_VALUES: dict[str, Callable[[], str]] = {
    "email": email,
    "phone_international": phone_intl,
    "phone_national": phone_national,
    "payment_card": card,
    "iban": an_iban,
    "us_ssn": ssn,
    "uk_nino": nino,
    "es_dni": a_dni,
    "fr_nir": a_nir,
    "it_codice_fiscale": a_cf,
    "br_cpf": a_cpf,
}

# -- templates -------------------------------------------------------------------------------

NAME = {  # the variable a secret is assigned to, per kind (for code, .env, YAML and JSON)
    "aws_secret_access_key": "aws_secret_access_key",
    "azure_storage_key": "AccountKey",
    "password_assignment": "password",
}
DEV_SECRET_TEMPLATES = [
    ("code", 'client = Client(api_key="{v}")'),
    ("json", '{{"service": "billing", "{n}": "{v}", "region": "eu-west-1"}}'),
    ("yaml", "deploy:\n  env: prod\n  {n}: {v}\n  replicas: 3"),
    ("env", "APP_ENV=production\n{N}={v}\nLOG_LEVEL=info"),
    ("log", "2026-11-30T12:01:07Z DEBUG auth: using credential {v} for upstream"),
    ("prose", "Sure! Here is the key you asked for: {v} - keep it somewhere safe."),
    ("markdown", "Use this in your config:\n\n```\n{v}\n```\n"),
    ("quoted", "> the old note said:\n> {v}\n> rotate it soon"),
]
HELDOUT_SECRET_TEMPLATES = [
    ("split-concat", 'token = (\n    "{h1}"\n    "{h2}"\n)'),
    ("split-plus", "const key = '{h1}' +\n  '{h2}';"),
    ("spaced", "the token is {h1} {h2} (a space crept in)"),
    ("shell", "curl -H 'X-Api-Key: {v}' https://api.internal.example/v2/jobs"),
    ("js", "const cfg = {{ token: '{v}', retries: 3 }};"),
    ("toml", '[credentials]\n{n} = "{v}"'),
    ("prose", "I found it in the deploy notes, the value is {v} and it still works."),
    ("upper", "CONFIG DUMP: {N}={V}"),
    ("base64", "config blob (base64): {b64}"),
]
ASSIGNED = {  # kinds whose value only means something in an assignment
    "aws_secret_access_key": [
        ("code", 'aws_secret_access_key = "{v}"'),
        ("env", "AWS_SECRET_ACCESS_KEY={v}"),
        ("yaml", "aws:\n  secret_access_key: {v}"),
        ("json", '{{"AWS_SECRET_ACCESS_KEY": "{v}"}}'),
        ("prose", "Your AWS secret access key: {v}"),
        ("ini", "[default]\naws_secret_access_key = {v}"),
        ("log", "boto: aws_secret_access_key={v} region=us-east-1"),
        ("quoted", '> aws_secret_access_key: "{v}"'),
    ],
    "azure_storage_key": [
        (
            "conn",
            (
                "DefaultEndpointsProtocol=https;AccountName=prodlogs;AccountKey={v};"
                "EndpointSuffix=core.windows.net"
            ),
        ),
        (
            "env",
            (
                "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=x;"
                "AccountKey={v}"
            ),
        ),
        ("json", '{{"connectionString": "AccountName=media;AccountKey={v};"}}'),
        ("prose", "The storage connection string ends with AccountKey={v}"),
        ("code", 'conn = "AccountName=app;AccountKey={v}"'),
        ("yaml", "storage:\n  connection: AccountName=a;AccountKey={v}"),
        (
            "sb",
            (
                "Endpoint=sb://bus.servicebus.windows.net/;SharedAccessKeyName=Root;"
                "SharedAccessKey={v}"
            ),
        ),
        ("log", "INFO storage init AccountKey={v} ok"),
    ],
    "azure_sas_signature": [
        (
            "url",
            "https://acct.blob.core.windows.net/c/f.pdf?sv=2022-11-02&se=2026-12-01&sp=r&sig={v}",
        ),
        (
            "prose",
            "Download it from https://files.blob.core.windows.net/x?sp=r&sig={v} before Friday",
        ),
        ("json", '{{"sasUrl": "https://a.blob.core.windows.net/b?sv=2021&sig={v}"}}'),
        ("env", "BACKUP_URL=https://b.blob.core.windows.net/c?sv=2020&ss=b&sig={v}"),
        ("log", "GET /c/blob?sv=2022&sr=b&sig={v} 200"),
        ("code", 'url = f"{{base}}?sv=2023&sig={v}"'),
        ("yaml", 'sas: "?sv=2022-11-02&sig={v}"'),
        ("markdown", "`https://q.queue.core.windows.net/q?sig={v}`"),
    ],
    "connection_string_password": [
        ("url", "postgres://admin:{v}@db.prod.internal:5432/billing"),
        ("redis", "redis://:{v}@cache-01.internal:6379/0"),
        ("env", "DATABASE_URL=mysql://app:{v}@10.0.3.7/app"),
        ("json", '{{"mongo": "mongodb+srv://svc:{v}@cluster0.ab1cd.mongodb.net/db"}}'),
        ("yaml", "broker: amqp://guest2:{v}@rabbit.internal:5672/"),
        ("prose", "Connect with postgresql://report:{v}@analytics.internal/warehouse and run it."),
        ("log", "connecting to redis://default:{v}@redis:6379 ... ok"),
        ("code", 'engine = create_engine("postgresql+psycopg://u:{v}@h/db")'),
    ],
    "password_assignment": [
        ("code", 'db_password = "{v}"'),
        ("env", "DB_PASSWORD={v}"),
        ("yaml", "database:\n  user: app\n  password: {v}"),
        ("json", '{{"username": "svc", "password": "{v}"}}'),
        ("prose", "The password is {v} (case-sensitive)."),
        ("cli", "mysql --user=root --password={v} prod"),
        ("xml", "<datasource><user>app</user><password>{v}</password></datasource>"),
        ("short", "pass = {v}"),
        ("placeholder-hiding", "password=${{DB_PASS:-{v}}}"),
        ("braces", "password={{{v}}}"),
        ("angle", "password=<{v}>"),
    ],
}
HELDOUT_ASSIGNED = {
    "aws_secret_access_key": [("terraform", 'secret_key = "{v}"  # aws provider')],
    "password_assignment": [
        ("prose2", "Login: admin / pw: {v}"),
        ("cli2", "psql -U app --password {v}"),
        ("docker", "docker run -e POSTGRES_PASSWORD={v} postgres:16"),
    ],
    "connection_string_password": [("jdbc", "jdbc:postgresql://db:5432/app?user=app&password={v}")],
}
BLOCK_VARIANTS = {  # multi-line secrets: their own shapes
    "private_key": [
        ("plain", pem),
        ("ec", lambda: pem("EC ")),
        ("openssh", lambda: pem("OPENSSH ")),
        ("no-end", lambda: "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(pem_body())),
        ("quoted", lambda: "\n".join("> " + x for x in pem().splitlines())),
        ("indented", lambda: "\n".join("    " + x for x in pem().splitlines())),
        (
            "proc-type",
            lambda: (
                "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
                f"DEK-Info: AES-128-CBC,{rand(HEX, 32).upper()}\n\n"
                + "\n".join(pem_body())
                + "\n-----END RSA PRIVATE KEY-----"
            ),
        ),
        ("lower", lambda: pem().lower()),
        (
            "spaced",
            lambda: pem().replace(
                "-----BEGIN RSA PRIVATE KEY-----", "----- BEGIN RSA PRIVATE KEY -----"
            ),
        ),
        ("json-escaped", lambda: json.dumps({"private_key": pem()})),
        ("bare-body", lambda: "\n".join(pem_body())),
        ("pkcs8", lambda: pem("")),
    ],
    "putty_private_key": [("plain", putty)] * 8,
    "jwk_private_key": [("plain", jwk)] * 8,
}
PII_TEMPLATES = [
    ("prose", "Sure, you can reach them at {v}."),
    ("json", '{{"customer": {{"name": "M. Garcia", "contact": "{v}"}}}}'),
    ("csv", "id,name,value\n1042,Garcia,{v}\n"),
    ("log", "2026-11-30 12:00:01 INFO lookup ok value={v}"),
    ("yaml", "record:\n  owner: J. Smith\n  field: {v}"),
    ("markdown", "| field | value |\n|---|---|\n| x | {v} |"),
    ("quoted", '> "{v}" was in the ticket'),
    ("code", 'customer = {{"id": 17, "v": "{v}"}}'),
]
PII_LABELS = {
    "email": "email",
    "phone_international": "phone",
    "phone_national": "phone",
    "payment_card": "card",
    "iban": "IBAN",
    "us_ssn": "SSN",
    "uk_nino": "NI number",
    "es_dni": "DNI",
    "fr_nir": "numéro de sécurité sociale",
    "it_codice_fiscale": "codice fiscale",
    "br_cpf": "CPF",
}
HELDOUT_PII_TEMPLATES = [
    ("labelled", "{label}: {v}"),
    ("upper", "CUSTOMER RECORD {label_up}: {V}"),
    ("sentence", "Her {label} is {v}, as on the form."),
]


def _fill(template: str, kind: str, value: str) -> str:
    name = NAME.get(kind, "api_key")
    half = len(value) // 2
    return template.format(
        h1=value[:half],
        h2=value[half:],
        v=value,
        V=value.upper(),
        n=name,
        N=name.upper(),
        b64=base64.b64encode(f"{name}={value}".encode()).decode(),
    )


def _row(
    split: str, kind: str | None, variant: str, text: str, secret: str | None
) -> dict[str, Any]:
    if kind == "slack_webhook" and secret and "/services/" in secret.lower():
        secret = secret[secret.lower().index("/services/") + 10 :]  # the URL's prefix is public
    return {"split": split, "kind": kind, "variant": variant, "text": text, "secret": secret}


def _shown(template_variant: str, text: str, value: str) -> str:
    """The secret as it appears in the text (what a leak would show)."""
    if template_variant == "base64":
        return text.split(": ", 1)[1]
    if template_variant == "upper":
        return value.upper()
    return value


def positives() -> Iterator[dict[str, Any]]:
    for kind, make in SECRET_VALUES.items():
        if kind in BLOCK_VARIANTS:
            for variant, block in BLOCK_VARIANTS[kind]:
                value = block()
                text = f"Here it is:\n{value}\nLet me know if you need more."
                yield _row("dev", kind, variant, text, _block_secret(variant, value))
            continue
        templates = ASSIGNED.get(kind, DEV_SECRET_TEMPLATES)
        for variant, template in templates:
            value = make()
            yield _row("dev", kind, variant, _fill(template, kind, value), value)
        for variant, template in HELDOUT_ASSIGNED.get(kind, []) + (
            [] if kind in ASSIGNED else HELDOUT_SECRET_TEMPLATES
        ):
            value = make()
            text = _fill(template, kind, value)
            yield _row("heldout", kind, variant, text, _shown(variant, text, value))
    for kind, make in PII_VALUES.items():
        for variant, template in PII_TEMPLATES:
            value = make()
            yield _row("dev", kind, variant, template.format(v=value), value)
        label = PII_LABELS[kind]
        for variant, template in HELDOUT_PII_TEMPLATES:
            value = make()
            text = template.format(v=value, V=value.upper(), label=label, label_up=label.upper())
            yield _row(
                "heldout", kind, variant, text, value.upper() if variant == "upper" else value
            )


def _block_secret(variant: str, value: str) -> str:
    """The part of a block that must not leak: its body (armour lines are not secret)."""
    if variant == "json-escaped":
        return json.loads(value)["private_key"].splitlines()[2]
    lines = [x.strip().lstrip(">").strip() for x in value.splitlines()]
    body = [x for x in lines if x and "-----" not in x and ":" not in x]
    return max(body, key=len) if body else value


# -- benign look-alikes ----------------------------------------------------------------------

DOC_KEYS = [
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0"
        "IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    ),
    "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "xoxb-your-bot-token",
    "<YOUR_API_KEY>",
    "sk-...",
]
BENIGN_FIXED = [
    "Use a password manager and never reuse a password across sites.",
    "The password is stored in the vault; ask an admin for access.",
    "To reset your password, click 'Forgot password' on the login page.",
    "password = os.environ['DB_PASSWORD']",
    "password: ${DB_PASSWORD}",
    "api_key: <your-api-key>",
    'token = request.headers.get("Authorization")',
    "secret = secrets.token_hex(32)",
    "password = getpass.getpass()",
    "export API_KEY=${API_KEY}",
    "Set password = <your-password> in the config.",
    "Use the form postgresql://user:password@host:5432/dbname.",
    "The key insight is that the token bucket refills at a fixed rate.",
    "max_tokens: 4096",
    "token_count = 1500",
    "passenger_count = 12345678",
    "The API key must be sent in the X-Api-Key header.",
    "Rotate your secret keys every 90 days.",
    "The primary key of the users table is id.",
    "Your password must be at least 12 characters long.",
    "A Merkle tree commits to all leaves with one root hash.",
    "Tokenization splits text into tokens before the model sees it.",
    "The secret to good bread is patience.",
    "PASSWORD_MIN_LENGTH=12",
    "auth_method: password",
    "password_hash_algorithm = argon2id",
    "Call us at 555-0100 (a fictional number) for the demo.",
    "Use the test card 4242 4242 4242 4242 with any future date.",
    "Visa test number: 4111 1111 1111 1111.",
    "Example IBAN: GB82 WEST 1234 5698 7654 32",
    "Contact support@example.com or admin@example.org.",
    "Send mail to jane.doe@example.net.",
    "mail server: smtp.example.com:587",
    "The ISBN is 978-3-16-148410-0.",
    "It is 2025-11-30, version 1.2.3, pi is 3.14159.",
    "Meeting at 10:30, room 4.12, agenda item 3.",
    "Order #20261130-4471 shipped on 2026-11-30.",
    "Tracking: 1Z 999 AA1 01 2345 6784",
    "The server listens on 0.0.0.0:8080 and 127.0.0.1:5432.",
    "npm install lodash@4.17.21 react@18.3.1",
    "pip install 'requests>=2.31.0,<3'",
    "docker pull postgres:16.4-alpine3.20",
    "Build 2026.11.30.1842 passed all 1,284 tests.",
    "Coordinates: 52.5200, 13.4050",
    "The population was 8,336,817 in 2022.",
    "Invoice INV-2026-000417 total 1,234.56 EUR",
    "ssh-keygen -t ed25519 -C 'ci@build'",
    (
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n"  # noqa: E501
        "-----END CERTIFICATE-----"
    ),
    (
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n"  # noqa: E501
        "-----END PUBLIC KEY-----"
    ),
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 user@laptop",
    "Your OTP length is 6 digits.",
    "Phone numbers look like +1 (555) 010-0199 in our docs.",
    "The call lasted 12 minutes and 30 seconds.",
    "Employee count: 1,024; offices: 12; founded 1998.",
    "git commit -m 'fix: token refresh race'",
    "Set AWS_REGION=us-east-1 and AWS_PROFILE=dev.",
    "The bearer token goes in the Authorization header.",
    "Authorization: Bearer <token>",
    "Authorization: Basic <base64 of user:password>",
    "DSN format: mysql://USER:PASSWORD@HOST/DB",
    "redis://localhost:6379/0",
    "Connect to amqp://guest:guest@localhost:5672/ for local testing.",
]


def _uuid() -> str:
    h = rand(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{R.choice('89ab')}{h[17:20]}-{h[20:]}"


BENIGN_GENERATED: list[tuple[str, Callable[[], str]]] = [
    ("uuid", lambda: f"request_id={_uuid()} status=200"),
    ("uuid-json", lambda: json.dumps({"id": _uuid(), "type": "order"})),
    ("uuid-key", lambda: f'"idempotency_key": "{_uuid()}"'),
    ("git-sha", lambda: f"commit {rand(HEX, 40)}\nAuthor: CI <ci@example.com>"),
    ("git-short", lambda: f"Merged {rand(HEX, 7)} into main ({rand(HEX, 7)})"),
    ("sha256", lambda: f"sha256:{rand(HEX, 64)}  dist/app.tar.gz"),
    ("sha256-key", lambda: f"checksum_key: {rand(HEX, 64)}"),
    ("md5", lambda: f"MD5 ({rand(string.ascii_lowercase, 6)}.iso) = {rand(HEX, 32)}"),
    ("sri", lambda: f'"integrity": "sha512-{base64.b64encode(R.randbytes(64)).decode()}"'),
    ("etag", lambda: f'ETag: "{rand(HEX, 32)}"'),
    (
        "version",
        lambda: f"v{R.randint(0, 9)}.{R.randint(0, 30)}.{R.randint(0, 99)}-rc.{R.randint(1, 9)}",
    ),
    ("timestamp", lambda: f"ts={R.randint(1600000000, 1800000000)} seq={R.randint(1, 99999)}"),
    (
        "ip",
        lambda: (
            f"peer {R.randint(1, 223)}.{R.randint(0, 255)}.{R.randint(0, 255)}.{R.randint(1, 254)}:443"  # noqa: E501
        ),
    ),
    ("order", lambda: f"Order number {rand(string.digits, 10)} was refunded."),
    ("doc-key", lambda: f"For example: API_KEY={R.choice(DOC_KEYS)}"),
    ("base64-image", lambda: "data:image/png;base64," + base64.b64encode(R.randbytes(48)).decode()),
    ("hex-binary", lambda: f"nonce: {rand(HEX, 48)}"),
    ("prose", lambda: R.choice(BENIGN_FIXED)),
    ("key-id", lambda: f"key_id: kid-{rand(string.ascii_lowercase, 6)}-{R.randint(1, 9)}"),
    (
        "var",
        lambda: (
            f"{R.choice(['token', 'secret', 'password', 'api_key'])} = {R.choice(['None', 'token', 'config.secret', 'get_secret()', 'args.password'])}"  # noqa: E501
        ),
    ),
]


def benign() -> Iterator[dict[str, Any]]:
    for text in BENIGN_FIXED + [f"For example: API_KEY={k}" for k in DOC_KEYS]:
        yield _row("dev", None, "fixed", text, None)
    for _ in range(14):
        for variant, make in BENIGN_GENERATED:
            yield _row("dev" if R.random() < 0.6 else "heldout", None, variant, make(), None)


# -- the "fresh" split: written after the detectors were final, run once, not tuned on --------

FRESH_SECRET_TEMPLATES = [
    ("traceback", 'Traceback (most recent call last):\n  File "app.py", line 3\n    KEY = "{v}"'),
    ("query", "https://api.internal.io/v1/items?api_key={v}&page=2"),
    ("header-log", "> GET /v2/repos HTTP/1.1\n> Authorization: token {v}"),
    ("k8s", "apiVersion: v1\nkind: Secret\ndata:\n  token: {b64v}"),
    ("table", "| env | credential |\n|---|---|\n| prod | {v} |"),
    ("lower", "found this in the logs: {lv}"),
    ("parens", "(the one for prod is {v})"),
    ("html", '<meta name="api-key" content="{v}">'),
    ("terraform", 'variable "token" {{\n  default = "{v}"\n}}'),
    ("arrow", "Here you go → {v}"),
]
FRESH_PII_TEMPLATES = [
    ("tel", "Tel.: {v}"),
    ("nospace", "ref {c}"),
    ("trailing", "{v} (verified)"),
    ("lower", "details: {lv}"),
    ("obfuscated", "{obf}"),
]
FRESH_BENIGN = [
    "ISBN 0-306-40615-2",
    "Deployed at 2026-11-30T12:00:00Z by the pipeline.",
    "Tracking number 9400111899223817364890",
    "Invoice 4000 1234 5678 9010 is overdue.",
    "Windows version 10.0.19045.3693",
    "Revenue grew +1.5% year on year.",
    "Call 1-800-FLOWERS for a bouquet.",
    "ZIP code 94103-1234",
    "Our live keys start with sk_live_ followed by 24 characters.",
    "Never paste your token into a chat window.",
    "The private key is generated by ssh-keygen and never leaves the laptop.",
    "-----BEGIN PGP SIGNATURE-----\niQEzBAEBCAAdFiEE\n-----END PGP SIGNATURE-----",
    'resourceVersion: "4815162342"',
    "image: nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    "The meeting ID is 845 2231 9087, passcode on the invite.",
    "Password rules: 12+ characters, one digit, one symbol.",
    "export TOKEN_TTL=3600",
    "secret_santa_budget = 25",
    'The API returns {"token_type": "bearer", "expires_in": 3600}',
    "Use `gh auth login` to store your token in the keychain.",
]


def _fresh_fill(template: str, value: str) -> str:
    return template.format(
        v=value, lv=value.lower(), b64v=base64.b64encode(value.encode()).decode()
    )


def fresh() -> Iterator[dict[str, Any]]:
    for kind, make in SECRET_VALUES.items():
        if kind in BLOCK_VARIANTS or kind in ASSIGNED:
            continue
        for variant, template in FRESH_SECRET_TEMPLATES:
            value = make()
            text = _fresh_fill(template, value)
            shown = {"lower": value.lower(), "k8s": base64.b64encode(value.encode()).decode()}
            yield _row("fresh", kind, variant, text, shown.get(variant, value))
    for kind, make in PII_VALUES.items():
        for variant, template in FRESH_PII_TEMPLATES:
            value = make()
            compact = "".join(value.split())
            obf = (
                value.replace("@", " [at] ").replace(".", " [dot] ") if kind == "email" else compact
            )
            text = template.format(v=value, c=compact, lv=value.lower(), obf=obf)
            secret = {"nospace": compact, "lower": value.lower(), "obfuscated": obf}.get(
                variant, value
            )
            yield _row("fresh", kind, variant, text, secret)
    for text in FRESH_BENIGN:
        yield _row("fresh", None, "fixed", text, None)
    for _ in range(4):
        for variant, make in BENIGN_GENERATED:
            yield _row("fresh", None, variant, make(), None)


# -- the "blind" split: written last, committed before its one run, never tuned on -------------

BLIND_SECRET_TEMPLATES = [
    ("k8s-env", '- name: SERVICE_TOKEN\n  value: "{v}"'),
    ("actions", "env:\n  DEPLOY_TOKEN: {v}"),
    ("compose", "environment:\n  - API_TOKEN={v}"),
    ("sql", "INSERT INTO creds (svc, token) VALUES ('billing', '{v}');"),
    ("go", 'cfg := Config{{\n\tToken: "{v}",\n}}'),
    ("json-log", '{{"level":"info","msg":"auth ok","token":"{v}"}}'),
    ("sentence", "Your new key: {v}."),
    ("cookie", "Cookie: theme=dark; token={v}"),
    ("backticks", "Paste `{v}` into the settings page."),
    ("windows", "set API_KEY={v}"),
]
BLIND_PII_TEMPLATES = [
    ("vcard", "BEGIN:VCARD\nFN:J. Doe\nNOTE:{v}\nEND:VCARD"),
    ("record", "Name: J. Doe, {label} {v}, DOB 1990-01-01"),
    ("json-label", '{{"{label}": "{v}"}}'),
    ("csv-row", "1042,Doe,J.,{v},active"),
]
BLIND_BENIGN = [
    "/subscriptions/3f1c9a2e-8b7d-4c6e-9f0a-1b2c3d4e5f60/resourceGroups/rg-prod/providers/x",
    "arn:aws:iam::123456789012:role/deploy-role",
    "pod web-7d9c8b5f4-x2k9p restarted 3 times",
    "resolved: https://registry.example/lodash/-/lodash-4.17.21.tgz",
    "config (base64): eyJ0aGVtZSI6ImRhcmsiLCJsYW5nIjoiZW4ifQ==",
    "color: #ff00aa; border: 1px solid #00ccff;",
    "MAC address 00:1A:2B:3C:4D:5E",
    "EAN 4006381333931 on the label",
    "ISBN 978-0-306-40615-7",
    "ABA routing number 021000021 is public.",
    "Order 4111-2222-3333-4444 is on hold.",
    'api_key_header = "X-API-Key"',
    'token_url = "https://oauth2.googleapis.com/token"',
    "secret_name: prod/db/password",
    "vault kv get secret/data/app",
    (
        "-----BEGIN RSA PUBLIC KEY-----\nMIIBCgKCAQEA+xGZ/wcz9ugFpP07Nspo6U17l0YhFiFpxxU4pTk3Lifz9R3zsIsu\n"  # noqa: E501
        "-----END RSA PUBLIC KEY-----"
    ),
    "Passwords must be rotated every 90 days; tokens expire after one hour.",
    "The secret ingredient is 2 tsp of smoked paprika.",
    "Use `openssl rand -hex 32` to generate a key.",
    "Invoice total: 1 234 567,89 EUR",
]


def blind() -> Iterator[dict[str, Any]]:
    for kind, make in SECRET_VALUES.items():
        if kind in BLOCK_VARIANTS or kind in ASSIGNED:
            continue
        for variant, template in R.sample(BLIND_SECRET_TEMPLATES, 4):
            value = make()
            yield _row("blind", kind, variant, template.format(v=value), value)
    for kind, make in PII_VALUES.items():
        for variant, template in BLIND_PII_TEMPLATES:
            value = make()
            text = template.format(v=value, label=PII_LABELS[kind])
            yield _row("blind", kind, variant, text, value)
    for text in BLIND_BENIGN:
        yield _row("blind", None, "fixed", text, None)
    for _ in range(4):
        for variant, make in BENIGN_GENERATED:
            yield _row("blind", None, variant, make(), None)


def main() -> None:
    rows = [*positives(), *benign()]
    R.seed(20261202)
    rows += list(fresh())
    R.seed(20261203)
    rows += list(blind())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    seen: set[str] = set()
    sample = [r for r in rows if r["kind"] and not (r["kind"] in seen or seen.add(r["kind"]))]
    tricky = {"spaced", "split-concat", "base64", "upper", "lower", "quoted", "json-escaped"}
    sample += [
        r
        for r in rows
        if r["kind"] and r not in sample and (r["kind"] == "private_key" or r["variant"] in tricky)
    ][:80]
    SAMPLE.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in sample), "utf-8")
    kinds = {r["kind"] for r in rows if r["kind"]}
    pos = sum(1 for r in rows if r["kind"])
    print(f"{pos} positives over {len(kinds)} kinds, {len(rows) - pos} benign -> {OUT}")


if __name__ == "__main__":
    main()
