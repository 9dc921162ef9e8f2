"""A real ``refusalkit serve`` on loopback with a tool-call pack, for the client and integration
tests (the servers are the service tests' ``ServerProcess``)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from svc_helpers import Deployment, ServerProcess, make_keys

from refusalkit.enforce import Enforcer
from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring

__all__ = ["TOOLS_PACK", "Deployment", "ServerProcess", "Setup", "tools_deployment"]

# One outcome per tool: read_file allowed, send_email allowed and audited, delete_file denied,
# wipe_disk blocked; anything else is refused by the default.
TOOLS_PACK = """\
policy: agent-tools-test
version: v1
default: deny
rules:
  - id: no_etc
    effect: deny
    message: "Files under /etc are off limits."
    when: {tool: read_file, args.path: {glob: "/etc/**"}}
  - id: reads_ok
    effect: allow
    when: {tool: read_file}
  - id: mail_ok
    effect: allow
    when: {tool: send_email}
  - id: mail_is_watched
    effect: audit
    message: "Outgoing mail is recorded."
    when: {tool: send_email}
  - id: no_deletes
    effect: deny
    message: "Deleting files is not allowed."
    when: {tool: delete_file}
  - id: no_wipes
    effect: block
    message: "Wiping a disk ends the run."
    when: {tool: wipe_disk}
"""


def tools_deployment(root: Path) -> Deployment:
    """Pack, keyring, API keys and a journal path under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    pack = root / "pack.yaml"
    pack.write_text(TOOLS_PACK, encoding="utf-8")
    ring = Keyring.generate()
    ring_path = ring.save(root / "keyring.json")
    keys = make_keys(root / "keys.json")
    return Deployment(root, pack, ring_path, ring, keys, str(root / "journal.db"))


@dataclass
class Setup:
    """An enforcer, the journal it writes, and a fresh session id for the test's caller."""

    kind: str
    enforcer: Enforcer
    deployment: Deployment
    journal: str
    session: str

    def caller(self) -> dict[str, str]:
        return {"agent": "coder", "session": self.session}

    def journaled(self) -> list[dict[str, Any]]:
        """This test's decisions in the journal, oldest first."""
        with open_journal(self.journal, self.deployment.keyring, create=False) as journal:
            return [record for _, record in journal.query(session=self.session)]

    def verify(self) -> None:
        """``refusalkit journal verify`` on the journal passes."""
        cli = [sys.executable, "-c", "from refusalkit.cli import main; main()", "journal"]
        ring = ["--keyring", str(self.deployment.keyring_path)]
        done = subprocess.run(
            [*cli, "verify", self.journal, *ring], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
