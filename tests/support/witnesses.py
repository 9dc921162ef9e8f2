"""A real ``refusalkit witness serve`` process on 127.0.0.1 (port chosen by the OS)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from refusalkit.witness import WitnessDir

__all__ = ["WitnessProcess"]

_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


@dataclass
class WitnessProcess:
    """One witness server process over ``directory``."""

    directory: Path
    proc: subprocess.Popen[bytes] | None = None
    url: str = ""
    log: list[str] = field(default_factory=list)

    @property
    def vkey(self) -> str:
        return WitnessDir(self.directory).cosigner_key().vkey

    def start(self, timeout: float = 20.0, *options: str) -> WitnessProcess:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from refusalkit.cli import main; main()",
                *("witness", "serve", str(self.directory), "--port", "0", *options),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline().decode()
            self.log.append(line)
            found = _LISTENING.search(line)
            if found:
                self.url = found.group(1)
                return self
            if not line and self.proc.poll() is not None:
                break
        self.kill()
        raise RuntimeError(f"witness did not start: {''.join(self.log)}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(timeout=10)
