"""Writes the evasion split of the detection corpus, ``bench/data/detect-evasion.jsonl``.

Written after the normalised view, the context passwords and the digit-run rules, and committed
before its first run (``bench/results/detect-evasion-first-run.txt``): what a model can type
around a detector (invisible characters anywhere, Markdown marks, HTML entities, fullwidth and
look-alike letters, table cells, wrapped base64, separators in digit runs, passwords in prose
and on command lines) and benign text that looks like it (Markdown-heavy prose, tables of
numbers, data URIs, identifiers, password words without a password). Values come from the
corpus generators of ``bench/detect_corpus.py`` with a seed of their own.

    python bench/detect_evasion.py
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import detect_corpus as corpus

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "data" / "detect-evasion.jsonl"
R = random.Random(20261202)
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff", "\u202a", "\u2063"]
TOKENS = [k for k in corpus.SECRET_VALUES if k not in corpus.ASSIGNED and k != "private_key"]
PII = ["email", "payment_card", "iban", "uk_nino", "es_dni", "it_codice_fiscale", "br_cpf"]


def _sprinkle(value: str) -> str:
    out = list(value)
    for _ in range(R.randint(1, 3)):
        out.insert(R.randint(1, len(out) - 1), R.choice(INVISIBLE))
    return "".join(out)


def _bold(value: str) -> str:
    cut = R.randint(3, len(value) - 3)
    return f"**{value[:cut]}**{value[cut:]}"


def _entity(value: str) -> str:
    i = R.randint(1, len(value) - 2)
    return value[:i] + f"&#{ord(value[i])};" + value[i + 1 :]


def _wide(value: str) -> str:
    return "".join(
        chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and R.random() < 0.6 else c for c in value
    )


EVASIONS: dict[str, Callable[[str], str]] = {
    "invisible": _sprinkle,
    "bold": _bold,
    "entity": _entity,
    "fullwidth": _wide,
    "backticks": lambda v: f"`{v[:4]}`{v[4:]}",
}
SENTENCES = [
    "Here you go: {v} (keep it private).",
    "The value you asked for is {v}, as discussed.",
    "- **value**: {v}\n- owner: ops",
]


def _value(kind: str) -> str:
    return (corpus.SECRET_VALUES.get(kind) or corpus.PII_VALUES[kind])()


def _row(kind: str | None, variant: str, text: str, secret: str | None) -> dict[str, Any]:
    return {"split": "evasion", "kind": kind, "variant": variant, "text": text, "secret": secret}


def evasions() -> Iterator[dict[str, Any]]:
    for kind in TOKENS + PII:
        for name, evade in EVASIONS.items():
            value = _value(kind)
            if kind == "payment_card":
                value = value.replace(" ", "")
            yield _row(kind, name, R.choice(SENTENCES).format(v=evade(value)), value)


def structural() -> Iterator[dict[str, Any]]:
    for kind in TOKENS[:12]:
        value = _value(kind)
        cut = len(value) // 2
        table = f"| part | value |\n|---|---|\n| key | {value[:cut]} | {value[cut:]} |"
        yield _row(kind, "table-cells", table, value)
        encoded = base64.b64encode(f"export TOKEN={value}\n".encode()).decode()
        wrapped = "\n".join(encoded[i : i + 20] for i in range(0, len(encoded), 20))
        yield _row(kind, "wrapped-base64", f"Decode this:\n{wrapped}\nthen source it.", value)
    for sep in (".", "_", "/", "\u00a0", "\u2009"):
        digits = corpus.card().replace(" ", "")
        grouped = sep.join(digits[i : i + 4] for i in range(0, len(digits), 4))
        yield _row("payment_card", f"card-sep-{ord(sep):x}", f"Card on file: {grouped}.", grouped)
    for template in ("SSN {a} {b} {c}", "her SSN is {a}{b}{c}", "SSN: {a}.{b}.{c}"):
        value = corpus.ssn().replace("-", "")
        text = template.format(a=value[:3], b=value[3:5], c=value[5:])
        yield _row("us_ssn", "ssn-context", text, text.split()[-1] if " " in text else text)


def passwords() -> Iterator[dict[str, Any]]:
    templates = [
        "Password for the staging admin: {p}",
        "Use {p} as the password for now.",
        "the root password's {p} until Friday",
        "mysql -h db.internal -u report -p{p} analytics",
        "sshpass -p '{p}' ssh deploy@build-03",
        "The password for backup is {p}",
    ]
    for template in templates:
        for _ in range(3):
            value = corpus.password()
            yield _row("password_prose", "password", template.format(p=value), value)


BENIGN = [
    "Fill in the **password** field, then press `Enter`.",
    "Use a strong value as the password, and store it in your manager.",
    "| year | q1 | q2 | q3 |\n|---|---|---|---|\n| 2025 | 1234 | 5678 | 9012 |",
    "Run `mkdir -p build/out && docker run -p 8080:80 nginx` to start.",
    "The *tokenizer* splits ~~words~~ __sub-words__ into ids &amp; offsets.",
    "Version 4.12.1088.2 shipped on 2026/11/30; see ticket 4539-1488-03.",
    "Näytä asiakirjamallikansio ja tallenna tiedosto.",
    '<img src="https://indieweb.org/images/xoxo-hugs-2018.jpg">',
    "The password for the account is required and must be rotated.",
    "GITHUB_API_KEY=\nDATABASE_URL=\n",
    "Call me when the build is green; the order id is 536228119.",
]


def benign() -> Iterator[dict[str, Any]]:
    for text in BENIGN:
        yield _row(None, "lookalike", text, None)
    for _ in range(20):
        png = b"\x89PNG\r\n\x1a\n" + R.randbytes(R.randint(40, 400))
        data = base64.b64encode(png).decode()
        yield _row(None, "data-uri", f"![chart](data:image/png;base64,{data})", None)
    for _ in range(20):
        ident = uuid.UUID(bytes=R.randbytes(16))
        sha = R.randbytes(20).hex()
        yield _row(None, "ids", f"**commit** `{sha}` for request `{ident}`", None)


def main() -> None:
    rows = [*evasions(), *structural(), *passwords(), *benign()]
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    print(f"wrote {len(rows)} rows to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
