"""Side doors around the bundled packs' credential protection, tried as an attacker would.

Each attack below was allowed by the packs as they shipped before named sets and ``args.**``:
names the old lists forgot, tools that are not ``fs.*``, whole directories moved or listed, code
planted where it runs, a read-only shell that wrote and searched recursively, and upper case.
Both bundled packs are tried wherever they have the tool. The controls must stay allowed: a
document named ``credentials-guide.md``, a source file ``keys.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring
from refusalkit.model import Action, Decision

# The EXAMPLE-ONLY token of agent "coder" (examples/agent-tools.cases.yaml), valid until 2100.
CODER = {
    "agent": "coder",
    "session": "s-side",
    "token": "eyJhbGciOiJFZERTQSIsImtpZCI6ImV4YW1wbGUta2V5LTEifQ.eyJzdWIiOiJjb2RlciIsImV4cCI6"
    "NDEwMjQ0NDgwMH0.KvtscJ3Tp4eBOXxczhgYXOLBPFwPH-aMP5sxoYMmcYL9yohcaVMChPufhQUpj2kHLlOf77pt"
    "ldzD6GQIJHwSDA",
}
EDITOR = {"agent": "editor", "session": "s-side"}

# Files that hold credentials and that the old lists did not name (or named in lower case only).
CREDENTIAL_FILES = [
    "/workspace/infra/terraform.tfstate",
    "/workspace/infra/prod.tfstate.backup",
    "/workspace/config/credentials.json",
    "/workspace/deploy/id_ecdsa",
    "/workspace/deploy/id_dsa",
    "/workspace/certs/server.key",
    "/workspace/certs/tls.pem",
    "/workspace/certs/client.p12",
    "/workspace/.pgpass",
    "/workspace/.git/config",
    "/workspace/.env.local",
    "/workspace/.ENV",
    "/workspace/src/.Env.Production",
    "/workspace/home/.bash_history",
    "/workspace/.my.cnf",
    "/workspace/.htpasswd",
]
CREDENTIAL_DIRS = ["/workspace/.aws", "/workspace/.ssh", "/workspace/.AWS", "/workspace/.gnupg"]


@pytest.fixture(scope="module")
def agent_tools() -> DecisionPoint:
    return DecisionPoint(load_pack(example_path("agent-tools.yaml")), Keyring.generate(), 10_000)


@pytest.fixture(scope="module")
def mcp() -> DecisionPoint:
    return DecisionPoint(load_pack(example_path("mcp-filesystem.yaml")), Keyring.generate(), 10_000)


def coder(dp: DecisionPoint, tool: str, **args: Any) -> Decision:
    return dp.decide({"tool": tool, "args": args, "caller": CODER})


def editor(dp: DecisionPoint, tool: str, **args: Any) -> Decision:
    """A call as ``mcp wrap`` sends it: with the session's taint (clean here)."""
    context = {"session": {"tainted": False}}
    return dp.decide({"tool": "fs." + tool, "args": args, "caller": EDITOR, "context": context})


def refused(decision: Decision, rule: str | None = None) -> bool:
    """Refused, and (when ``rule`` is given) with that rule's step matched in the trail (an
    earlier rule of the same severity may be the decisive one)."""
    if decision.action not in (Action.DENY, Action.BLOCK):
        return False
    return rule is None or any(s.rule == rule and s.matched for s in decision.why_trail)


# -- names the packs forgot, and case -----------------------------------------------------------


@pytest.mark.parametrize("path", CREDENTIAL_FILES)
def test_agent_tools_refuses_reading_every_credential_file(
    agent_tools: DecisionPoint, path: str
) -> None:
    assert refused(coder(agent_tools, "fs.read", path=path), "sensitive_path")


@pytest.mark.parametrize("path", CREDENTIAL_FILES)
@pytest.mark.parametrize("tool", ["read_text_file", "read_file", "get_file_info", "edit_file"])
def test_mcp_refuses_every_credential_file(mcp: DecisionPoint, tool: str, path: str) -> None:
    assert refused(editor(mcp, tool, path=path), "sensitive_path")


@pytest.mark.parametrize("path", CREDENTIAL_FILES)
def test_mcp_refuses_credential_files_in_lists(mcp: DecisionPoint, path: str) -> None:
    decision = editor(mcp, "read_multiple_files", paths=["/workspace/README.md", path])
    assert refused(decision, "sensitive_path")


# -- tools that are not fs.* ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/workspace/.env", "/workspace/infra/terraform.tfstate"])
def test_agent_tools_refuses_credential_paths_in_any_tool(
    agent_tools: DecisionPoint, path: str
) -> None:
    assert refused(coder(agent_tools, "git.diff", path=path), "sensitive_path")
    assert refused(coder(agent_tools, "git.log", options={"paths": [path]}), "sensitive_path")
    reviewer = {"agent": "reviewer", "session": "s", "token": CODER["token"]}
    decision = agent_tools.decide({"tool": "git.diff", "args": {"path": path}, "caller": reviewer})
    assert refused(decision)


def test_the_trail_names_the_field_that_matched(agent_tools: DecisionPoint) -> None:
    decision = coder(agent_tools, "git.log", options={"paths": ["src", "/workspace/.env"]})
    step = next(s for s in decision.why_trail if s.decisive)
    assert (step.rule, step.field) == ("sensitive_path", "args.options.paths[1]")
    assert step.value is not None
    assert "/workspace/.env" not in step.value


def test_mcp_refuses_searching_inside_a_credential_directory(mcp: DecisionPoint) -> None:
    assert refused(editor(mcp, "search_files", path="/workspace/.aws", pattern="*"))
    assert refused(editor(mcp, "directory_tree", path="/workspace/.ssh"))


# -- directories as wholes ------------------------------------------------------------------------


@pytest.mark.parametrize("directory", CREDENTIAL_DIRS)
def test_mcp_refuses_moving_or_listing_a_credential_directory(
    mcp: DecisionPoint, directory: str
) -> None:
    moved = editor(mcp, "move_file", source=directory, destination="/workspace/cloud")
    assert refused(moved, "sensitive_path")
    assert refused(editor(mcp, "list_directory", path=directory), "sensitive_path")
    assert refused(editor(mcp, "get_file_info", path=directory), "sensitive_path")
    into = editor(mcp, "move_file", source="/workspace/cloud", destination=directory)
    assert refused(into, "sensitive_path")


@pytest.mark.parametrize("directory", CREDENTIAL_DIRS)
def test_agent_tools_refuses_a_credential_directory(
    agent_tools: DecisionPoint, directory: str
) -> None:
    assert refused(coder(agent_tools, "fs.read", path=directory), "sensitive_path")
    decision = coder(agent_tools, "fs.move", source=directory, destination="/workspace/cloud")
    assert refused(decision)  # (an fs.* call without args.path is refused by path_traversal too)


# A directory above a credential directory takes it along when it is moved, renamed, copied or
# deleted: the globs name the directory and what is inside it, not what holds it.
ANCESTORS = ["/home/dev", "/home/dev/", "/HOME/Dev", "/home", "/workspace", "/root", "/"]
NOT_ANCESTORS = ["/home/dev/project", "/workspace/src", "/tmp/x", "/home/dev/notes.md"]


@pytest.mark.parametrize("source", ANCESTORS)
def test_mcp_refuses_moving_a_directory_above_a_credential_directory(
    mcp: DecisionPoint, source: str
) -> None:
    moved = editor(mcp, "move_file", source=source, destination="/tmp/x")
    assert refused(moved, "credential_ancestor")


@pytest.mark.parametrize("tool", ["fs.move", "fs.rename", "fs.copy", "fs.delete"])
@pytest.mark.parametrize("source", ANCESTORS)
def test_agent_tools_refuses_moving_a_directory_above_a_credential_directory(
    agent_tools: DecisionPoint, tool: str, source: str
) -> None:
    decision = coder(agent_tools, tool, source=source, destination="/tmp/x")
    assert refused(decision, "credential_ancestor")


@pytest.mark.parametrize("source", NOT_ANCESTORS)
def test_moving_what_holds_no_credential_directory_stays_allowed(
    mcp: DecisionPoint, agent_tools: DecisionPoint, source: str
) -> None:
    moved = editor(mcp, "move_file", source=source, destination="/workspace/moved")
    assert moved.action is Action.AUDIT, moved.why_trail
    decision = coder(agent_tools, "fs.move", source=source, destination="/workspace/moved")
    assert not refused(decision, "credential_ancestor")
    assert editor(mcp, "read_file", path="/home/dev/notes.md").action is Action.ALLOW


# -- code planted where it runs -------------------------------------------------------------------

CODE_PATHS = [
    "/workspace/.git/hooks/pre-commit",
    "/workspace/src/.git/hooks/post-checkout",
    "/workspace/.github/workflows/ci.yml",
    "/workspace/src/.github/workflows/release.yml",
    "/workspace/.gitlab-ci.yml",
    "/workspace/src/.GitLab-CI.yml",
    "/workspace/.circleci/config.yml",
]


@pytest.mark.parametrize("path", CODE_PATHS)
def test_mcp_refuses_writing_or_moving_into_places_where_code_runs(
    mcp: DecisionPoint, path: str
) -> None:
    assert refused(editor(mcp, "write_file", path=path, content="echo pwned\n"))
    moved = editor(mcp, "move_file", source="/workspace/tmp/x.sh", destination=path)
    assert refused(moved, "code_paths")
    assert refused(editor(mcp, "edit_file", path=path, edits=[]))


@pytest.mark.parametrize("path", CODE_PATHS)
def test_agent_tools_refuses_writing_into_places_where_code_runs(
    agent_tools: DecisionPoint, path: str
) -> None:
    assert refused(coder(agent_tools, "fs.write", path=path, content="echo pwned\n"))
    moved = coder(agent_tools, "fs.move", source="/workspace/src/x.sh", destination=path)
    assert refused(moved)
    assert refused(
        coder(agent_tools, "fs.copy", path=path, source="/workspace/src/x"), "code_paths"
    )


def test_reading_ci_definitions_stays_allowed(mcp: DecisionPoint) -> None:
    decision = editor(mcp, "read_text_file", path="/workspace/.github/workflows/ci.yml")
    assert decision.action is Action.ALLOW


# -- read-only shell that is not read-only ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "grep -r -h . .",
        "grep -R password /workspace",
        "grep --recursive password /workspace",
        "grep -rn token src",
        "grep -d recurse password /workspace",
        "git diff --output /workspace/src/x.py",
        "git log -p --output .git/config",
        "git diff --ext-diff",
        "git diff --no-index /workspace/src/a /home/dev/.ssh/id_rsa",
        "git diff --textconv HEAD",
        "git diff HEAD:.env HEAD:README.md",
        "cat /workspace/infra/terraform.tfstate",
        "cat /workspace/.ENV",
        "cat /workspace/.git/config",
        "ls /workspace/.aws",
        "pytest -p evil_plugin",
    ],
)
def test_readonly_shell_refuses_recursive_search_and_writing_flags(
    agent_tools: DecisionPoint, command: str
) -> None:
    assert refused(coder(agent_tools, "shell.run", command=command))


@pytest.mark.parametrize(
    "command",
    [
        "ls -la /workspace/src",
        "cat /workspace/src/keys.py",
        "grep -n password /workspace/src/keys.py",
        "grep -in TODO src/app.py",
        "git status --short",
        "git diff --stat",
        "git log --oneline -n 5",
        "pytest -q tests",
        "python -m pytest -x tests",
    ],
)
def test_readonly_shell_keeps_its_everyday_commands(
    agent_tools: DecisionPoint, command: str
) -> None:
    assert coder(agent_tools, "shell.run", command=command).action is Action.ALLOW


# -- controls that must stay allowed ---------------------------------------------------------------

CONTROLS = ["/workspace/docs/credentials-guide.md", "/workspace/src/keys.py"]
GUIDE = "# Credentials\n\nKeep them in ~/.aws/credentials and .env, never in git.\n"


@pytest.mark.parametrize("path", CONTROLS)
def test_agent_tools_controls_stay_allowed(agent_tools: DecisionPoint, path: str) -> None:
    assert coder(agent_tools, "fs.read", path=path).action is Action.ALLOW
    assert coder(agent_tools, "fs.write", path=path, content=GUIDE).action is Action.ALLOW
    assert coder(agent_tools, "git.diff", path=path).action is Action.ALLOW


@pytest.mark.parametrize("path", CONTROLS)
def test_mcp_controls_stay_allowed(mcp: DecisionPoint, path: str) -> None:
    assert editor(mcp, "read_text_file", path=path).action is Action.ALLOW
    assert editor(mcp, "write_file", path=path, content=GUIDE).action is Action.AUDIT
    assert editor(mcp, "read_multiple_files", paths=CONTROLS).action is Action.ALLOW
    moved = editor(mcp, "move_file", source=path, destination=path + ".bak")
    assert moved.action is Action.AUDIT
