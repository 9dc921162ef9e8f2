"""Helpers of the service tests: a pack, a keys file, and real ``refusalkit serve`` processes.

Servers are real uvicorn processes on 127.0.0.1 at a free port, started with the CLI as a user
would; ``ServerProcess`` waits for ``/healthz`` and stops the process (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from refusalkit.keyring import Keyring
from refusalkit.server import KeyStore, Scope

PACK = """\
policy: service-test
version: v1
default: deny
field_classes:
  credential-file: {sensitive: true}
capabilities:
  coder: ["fs.*", "shell.run"]
  researcher: ["web.search", "fs.read"]
input_filters:
  - id: prompt_injection_markers
    field: input
    regex: ["(?i)ignore (all )?previous instructions"]
rules:
  - id: approved_workspace
    effect: allow
    when: {tool: fs.write, args.path: {glob: "/workspace/src/**"}}
  - id: reads_ok
    effect: allow
    when: {tool: fs.read}
  - id: sensitive_path
    effect: deny
    message: "Writes to credential files are not allowed."
    when:
      tool: {glob: "fs.*"}
      args.path: {glob: ["**/.env", "**/id_rsa*", "/etc/**"], class: credential-file}
"""

BAD_PACK = "policy: broken\nversion: v1\ndefault: maybe\nrules: 7\n"


def allowed_request(i: int = 0) -> dict[str, Any]:
    """A request the test pack allows (rule approved_workspace)."""
    return {
        "tool": "fs.write",
        "args": {"path": f"/workspace/src/f{i}.py", "content": "x"},
        "caller": {"agent": "coder", "session": "s-1"},
    }


def denied_request(i: int = 0) -> dict[str, Any]:
    """A request the test pack denies (rule sensitive_path, policy-denied)."""
    return {
        "tool": "fs.write",
        "args": {"path": f"/workspace/p{i}/.env", "content": "SECRET=1"},
        "caller": {"agent": "coder", "session": "s-1"},
    }


def out_of_scope_request() -> dict[str, Any]:
    """A request outside the caller's capabilities (out-of-scope)."""
    return {"tool": "shell.run", "args": {"cmd": "ls"}, "caller": {"agent": "researcher"}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Keys:
    """A keys file with one key per role."""

    path: Path
    decide: str
    read: str
    admin: str
    all: str

    def header(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {getattr(self, role)}"}


def make_keys(path: Path) -> Keys:
    store = KeyStore(path)
    secrets = {}
    for name, scopes in (
        ("decide", {Scope.DECIDE}),
        ("read", {Scope.READ}),
        ("admin", {Scope.ADMIN}),
        ("all", {Scope.DECIDE, Scope.READ}),
    ):
        _, secrets[name] = store.add(name, scopes)
    return Keys(path, **secrets)


@dataclass
class ServerProcess:
    """A ``refusalkit serve`` subprocess on 127.0.0.1."""

    args: list[str]
    port: int
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ServerProcess:
        log = self.log_path.open("ab")
        env = {**os.environ, **self.env}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from refusalkit.cli import main; main()",
                *self.args,
                "--port",
                str(self.port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not start:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)


@dataclass
class Deployment:
    """Files of one service deployment: pack, keyring, keys, journal."""

    root: Path
    pack: Path
    keyring_path: Path
    keyring: Keyring
    keys: Keys
    journal: str

    def server(self, *extra: str, workers: int = 1, journal: str | None = None) -> ServerProcess:
        args = [
            "serve",
            "--policy",
            str(self.pack),
            "--journal",
            journal or self.journal,
            "--keys-file",
            str(self.keys.path),
            "--keyring",
            str(self.keyring_path),
            "--workers",
            str(workers),
            *extra,
        ]
        log = self.root / f"server-{free_port()}.log"
        return ServerProcess(args, free_port(), log)


def make_deployment(root: Path) -> Deployment:
    root.mkdir(parents=True, exist_ok=True)
    pack = root / "pack.yaml"
    pack.write_text(PACK, encoding="utf-8")
    ring = Keyring.generate()
    ring_path = ring.save(root / "keyring.json")
    keys = make_keys(root / "keys.json")
    return Deployment(root, pack, ring_path, ring, keys, str(root / "journal.db"))


def wait_for(check: Callable[[], bool], seconds: float = 20.0) -> bool:
    """Poll ``check`` every 0.1 s until it holds (True) or ``seconds`` pass (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False
