"""The pages run as printed, in order, one after another, in one copy and one HOME.

A reader keeps going: README.md, then docs/quickstart.md, then every other page of docs/ with a
```console block, in one folder and one home directory, so each page must run after the pages
before it (a keyring, a keys file, a journal they left) as well as on its own terms.

Each ```console block is a script: ``$ `` starts a command (a line ending in ``\\`` continues it);
the lines after a command, up to the next ``$ ``, are output the command must print (in that
order, each somewhere in its stdout or stderr; ``...`` inside a line matches anything). In a block
with no ``$ `` at all, as README's first, every line is a command. A command exits 0 unless its
trailing comment says ``exits N``. A command ending in ``&`` runs in the background until its
page is done; then it is stopped with SIGTERM, as a reader stops it before the next page. A block
fenced ```console no-run is shown, not run (the test command itself, a placeholder host, a
session that needs a person).

The pages run in a copy of the repository, so ``pip install .`` and ``examples/`` mean what they
mean to a reader who has just cloned it; ``HOME`` is a new empty folder, so no keyring, cache or
configuration of the developer's leaks in. Everything the pages write there is ignored by git
(``.gitignore``), so the repository's own test command still finds a clean folder afterwards.

Cost: one virtual environment and one install for every page; about three minutes on a loaded
two-core machine, most of it ``pip install``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIRST = ("README.md", "docs/quickstart.md")
FENCE = re.compile(r"^```console([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
EXITS = re.compile(r"#.*\bexits (\d+)\b")


@dataclass(frozen=True, slots=True)
class Step:
    """One command of a page, where it stands, and what it must do."""

    line: int
    command: str
    expected: tuple[str, ...]
    exit_code: int

    @property
    def background(self) -> bool:
        return _strip_comment(self.command).rstrip().endswith("&")


def _strip_comment(command: str) -> str:
    """The command without a trailing shell comment (a ``#`` after a blank, outside quotes)."""
    quote = ""
    for i, char in enumerate(command):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].rstrip()
    return command


def parse_steps(text: str) -> list[Step]:
    """The runnable commands of a page, in order."""
    steps: list[Step] = []
    for match in FENCE.finditer(text):
        if "no-run" in match.group(1):
            continue
        first = text.count("\n", 0, match.start()) + 2
        steps.extend(_block_steps(match.group(2).splitlines(), first))
    return steps


def _block_steps(lines: list[str], first: int) -> list[Step]:
    if not any(line.startswith("$ ") for line in lines):  # a bare block: each line a command
        return [Step(first + i, line, (), 0) for i, line in enumerate(lines) if line.strip()]
    steps: list[Step] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        start, command = first + i, lines[i][2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            if lines[i].strip():
                expected.append(lines[i].rstrip())
            i += 1
        found = EXITS.search(command)
        steps.append(Step(start, command, tuple(expected), int(found.group(1)) if found else 0))
    return steps


def pages() -> list[str]:
    """The pages in the order a reader takes them: README, the quickstart, then the rest of
    docs/ (alphabetical) that have a runnable console block."""
    rest = sorted(
        f"docs/{page.name}"
        for page in (ROOT / "docs").glob("*.md")
        if f"docs/{page.name}" not in FIRST and parse_steps(page.read_text(encoding="utf-8"))
    )
    return [*FIRST, *rest]


_SIMPLE = re.compile(r"[^;&|()<>`]*")


def _script(tour: list[tuple[str, list[Step]]], out: Path) -> str:
    """One bash script: every step's output and status land in ``out`` (``N.out``, ``N.rc``,
    numbered across pages); each page's background commands get SIGTERM when it ends."""
    body = ["set +e"]
    n = 0
    for _, steps in tour:
        for step in steps:
            body.extend(_step_lines(step, out / str(n)))
            n += 1
        # the page is done: stop what it started, and wait for it to finish stopping
        body.append('for job in $(jobs -p); do kill -TERM "$job"; done; wait')
    return "\n".join(body) + "\n"


def _step_lines(step: Step, out: Path) -> list[str]:
    command = _strip_comment(step.command).rstrip()
    if not step.background:
        return [f"{{ {command} ; }} > {out}.out 2>&1 < /dev/null; echo $? > {out}.rc"]
    command = command.removesuffix("&").rstrip()
    # A simple command runs as the job itself, so SIGTERM reaches it and not a subshell.
    job = command if _SIMPLE.fullmatch(command) else f"{{ {command} ; }}"
    return [f"{job} > {out}.out 2>&1 < /dev/null &", f"echo 0 > {out}.rc"]


def _matches(expected: str, actual: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in re.split(r"\s*\.\.\.\s*", expected))
    return re.search(pattern, actual) is not None


def _check(tour: list[tuple[str, list[Step]]], out: Path) -> None:
    n = 0
    for page, steps in tour:
        for step in steps:
            _check_step(f"{page}:{step.line}: $ {step.command}", step, out / str(n))
            n += 1


def _check_step(where: str, step: Step, out: Path) -> None:
    rc_file = out.with_suffix(".rc")
    assert rc_file.exists(), f"{where}\nnever ran (an earlier step ended the script)"
    output = out.with_suffix(".out").read_text(errors="replace")
    status = int(rc_file.read_text())
    assert status == step.exit_code, f"{where}\nexited {status}, not {step.exit_code}:\n{output}"
    lines = [line.rstrip() for line in output.splitlines()]
    at = 0
    for want in step.expected:
        while at < len(lines) and not _matches(want, lines[at]):
            at += 1
        assert at < len(lines), f"{where}\ndid not print {want!r} (in order); it printed:\n{output}"
        at += 1


def _copy_repository(target: Path) -> None:
    """The files a fresh clone has (tracked and new, not ignored), with links kept as links."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        source = ROOT / raw.decode()
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the work tree, not yet committed
        dest = target / raw.decode()
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            dest.symlink_to(source.readlink())
        else:
            shutil.copy2(source, dest)


def _environment(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")
    env = {k: v for k, v in os.environ.items() if k in keep}
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:  # the page makes and activates its own venv; ours must not shadow it
        env["PATH"] = os.pathsep.join(
            p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(venv)
        )
    cache = Path(os.environ.get("PIP_CACHE_DIR", Path.home() / ".cache" / "pip"))
    env.update(HOME=str(home), PIP_CACHE_DIR=str(cache), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env["PIP_NO_INPUT"] = "1"
    return env


def test_pages_parse_into_steps() -> None:
    """The parser itself: continuation lines, expected output, exit codes, no-run blocks."""
    page = (
        "```console\n$ echo a \\\n    b   # exits 0\na b\n$ false  # exits 1\n```\n"
        "```console no-run\n$ rm -rf /\n```\n"
        "```console\nbare command\n```\n"
    )
    steps = parse_steps(page)
    assert [(s.command, s.expected, s.exit_code) for s in steps] == [
        ("echo a  b   # exits 0", ("a b",), 0),
        ("false  # exits 1", (), 1),
        ("bare command", (), 0),
    ]
    assert _matches("decided 5 requests ... allow", "decided 5 requests: 2 allow")
    assert not _matches("decided 6", "decided 5 requests")


def test_every_docs_page_with_console_blocks_is_on_the_tour() -> None:
    """A new page with a runnable console block joins the tour by itself; the first two lead."""
    tour = pages()
    assert tour[:2] == list(FIRST)
    for page in (ROOT / "docs").glob("*.md"):
        runnable = parse_steps(page.read_text(encoding="utf-8"))
        assert (f"docs/{page.name}" in tour) == bool(runnable), page.name


def test_background_commands_are_the_jobs_themselves(tmp_path: Path) -> None:
    """SIGTERM at a page's end must reach the server a page started, not a subshell around it."""
    [simple] = _step_lines(Step(1, "refusalkit serve --port 1 &  # note", (), 0), tmp_path / "0")[
        :1
    ]
    assert simple.startswith("refusalkit serve --port 1 > ")
    [compound] = _step_lines(Step(1, "a && b &", (), 0), tmp_path / "0")[:1]
    assert compound.startswith("{ a && b ; } > ")


PORT = re.compile(r"(?:127\.0\.0\.1:|--port )(\d+)")


def _ports_in_use(tour: list[tuple[str, list[Step]]]) -> list[int]:
    """The loopback ports the pages use that something already listens on."""
    ports = {int(p) for _, steps in tour for step in steps for p in PORT.findall(step.command)}
    busy = []
    for port in sorted(ports):
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                busy.append(port)
    return busy


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_pages_run_in_sequence(tmp_path: Path) -> None:
    tour = [(page, parse_steps((ROOT / page).read_text(encoding="utf-8"))) for page in pages()]
    for page, steps in tour:
        assert steps, f"{page} has no runnable console block"
    busy = _ports_in_use(tour)
    assert not busy, f"the pages serve on 127.0.0.1 ports {busy}, which something else holds now"
    repo, home, out = tmp_path / "repo", tmp_path / "home", tmp_path / "out"
    for folder in (repo, home, out):
        folder.mkdir()
    _copy_repository(repo)
    # Its own session, so that what a page left running in the background ends with it.
    shell = subprocess.Popen(
        ["bash", "-c", _script(tour, out)],
        cwd=repo,
        env=_environment(home),
        start_new_session=True,
    )
    try:
        shell.wait(timeout=1500)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGTERM)
        shell.wait()
    _check(tour, out)
    left = _untracked_unignored(repo)
    assert not left, f"the pages left files that git does not ignore: {left}"


def _untracked_unignored(repo: Path) -> list[str]:
    """Files the pages wrote that git neither tracks nor ignores (the copy has no .git: its
    files are compared with the source tree's listing and its ignore rules)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    known = set(listed)
    new = []
    for folder, _, files in os.walk(repo):  # links are not followed
        for file in files:
            name = (Path(folder) / file).relative_to(repo).as_posix()
            if name not in known:
                new.append(name)
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=ROOT,
        input="\n".join(new) + "\n",
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()
    return sorted(set(new) - set(ignored))
