"""How the bundled packs' ``credential-files`` set is derived from two public signature lists.

The sources are vendored under tests/vectors/credential-files (see its ATTRIBUTION.md): gitrob's
sensitive-file signatures and gitleaks' path-only rules. ``derive()`` turns each signature into a
regex over a path in POSIX normal form, mechanically, so a test can check the packs against it:

- ``extension`` (gitrob's ``filepath.Ext``, with its dot): a simple ``.pem`` is ``\\.pem$``; a
  pattern ``^kdbx?$`` is matched after the dot, ``\\.kdbx?$``;
- ``filename``: a simple ``knife.rb`` is ``(?:^|/)knife\\.rb$``; a pattern has its ``^``
  replaced by the segment start ``(?:^|/)`` (unanchored: any text before it, within the name);
- ``path``: the pattern, starting at a segment boundary ``(?:^|/)``;
- gitleaks' path rules are regexes over the path already, taken as written.

Every regex is case-insensitive (``(?i)``): the packs fold case on top. Signatures that name data
rather than a credential, or a project's own source file, are left out, each with its reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "credential-files"

# gitrob signatures left out (by their match text), and why.
EXCLUDED: dict[str, str] = {
    ".log": "logs are data an agent reads; secrets in them are the content scanner's job",
    ".mdf": "a database, not a credential",
    ".sdf": "a database, not a credential",
    ".sqlite": "a database, not a credential",
    "^sql(dump)?$": "a database dump, not a credential",
    ".pcap": "a traffic capture, not a credential",
    ".gnucash": "a ledger, not a credential",
    ".dayone": "a journal, not a credential",
    "journal.txt": "a journal, not a credential",
    "configuration.user.xpl": "firewall rules, not a credential",
    "settings.py": "a project's own source, which agents edit",
    "database.yml": "a project's own configuration, which agents edit",
    "config(\\.inc)?\\.php$": "a project's own configuration, which agents edit",
    "LocalSettings.php": "a project's own configuration, which agents edit",
    "carrierwave.rb": "a project's own source, which agents edit",
    "omniauth.rb": "a project's own source, which agents edit",
    "knife.rb": "a project's own configuration, which agents edit",
    "credential": "a word, not a file: credentials-guide.md is a document",
    "password": "a word, not a file: password-policy.md is a document",
}

# Not in either list, and the packs' own additions (each a credential store or key file).
ADDITIONS: tuple[str, ...] = (
    r"(?i)(?:^|/)\.env(?:\.[^/]*)?$",  # .env variants: .env.local, .env.production
    r"(?i)(?:^|/)\.envrc$",  # direnv
    r"(?i)(?:^|/)id_(?:rsa|dsa|ecdsa|ed25519)[^/]*$",  # SSH keys, with their .pub and _sk forms
    r"(?i)\.key$",  # TLS and other private keys
    r"(?i)\.tfstate(?:\.backup)?$",  # Terraform state holds every secret it provisioned
    r"(?i)\.tfvars$",
    r"(?i)(?:^|/)\.git/config$",  # remote URLs carry tokens
    r"(?i)(?:^|/)credentials\.json$",  # cloud service-account and OAuth client keys
    r"(?i)(?:^|/)\.boto$",
    r"(?i)(?:^|/)\.pypirc$",
    r"(?i)(?:^|/)\.docker/config\.json$",
    r"(?i)(?:^|/)\.kube/config$",
    r"(?i)(?:^|/)kubeconfig$",
    r"(?i)(?:^|/)\.my\.cnf$",  # MySQL client passwords
    r"(?i)(?:^|/)\.vault-token$",
    r"(?i)(?:^|/)\.terraformrc$",
    r"(?i)(?:^|/)\.cargo/credentials(?:\.toml)?$",
)


def _gitrob_regex(signature: dict[str, str]) -> str:
    kind, part, match = signature["type"], signature["part"], signature["match"]
    if kind == "simple":
        body = re.escape(match) + "$"
        return "(?i)" + body if part == "extension" else "(?i)(?:^|/)" + body
    if part == "extension":
        return "(?i)\\." + match.removeprefix("^")
    if part == "filename":
        head = match[1:] if match.startswith("^") else "[^/]*" + match
        return "(?i)(?:^|/)" + head
    return "(?i)(?:^|/)" + match


def gitrob() -> list[dict[str, str]]:
    """The vendored gitrob signatures."""
    data = json.loads((VECTORS / "gitrob-signatures.json").read_text(encoding="utf-8"))
    signatures: list[dict[str, str]] = data["signatures"]
    return signatures


def gitleaks() -> list[dict[str, str]]:
    """The vendored gitleaks path-only rules."""
    data = json.loads((VECTORS / "gitleaks-path-rules.json").read_text(encoding="utf-8"))
    rules: list[dict[str, str]] = data["rules"]
    return rules


def derive() -> list[str]:
    """The ``credential-files`` set, in order: gitrob's, gitleaks', then the additions."""
    out = [_gitrob_regex(s) for s in gitrob() if s["match"] not in EXCLUDED]
    out += [rule["path"] for rule in gitleaks()]
    out += list(ADDITIONS)
    return list(dict.fromkeys(out))
