"""Benchmark: refusalkit's decision point vs Cedar (cedarpy) vs the Agent Governance Toolkit.

One 50-rule policy, written natively for each engine, and a mixed stream of tool calls
(sensitive writes, benign writes, other tools, unknown tools). First every engine decides every
request and the verdicts must agree; then each runs the stream, timing every call.
refusalkit runs with full why-trails and keyed redaction; Cedar's policies are parsed once
(``PolicySet``); AGT's ``PolicyEvaluator`` records no trail and redacts nothing.

    python bench/decide.py            # 100k requests
    python bench/decide.py --quick    # 10k requests

A fourth column, ``refusalkit+kinds``, runs the same pack with ``kind: path`` on its path class
(every path is parsed into its POSIX normal form before the rules see it, docs/policy.md). A
fifth, ``refusalkit+approval``, adds four ``require-approval`` rules on the stream's tools that
no request matches, so it measures what such rules cost a decision when no approval is pending
(docs/approvals.md); a sixth, ``refusalkit+deny4``, adds the same four rules as ``deny`` rules:
the difference between those two is the cost of the effect itself, the rest is four more rules.
A seventh, ``refusalkit+args**``, adds the bundled pack's credential rule
(examples/agent-tools.yaml, ``sensitive_path``: its named sets over every string of every tool's
arguments, ``args.**``) in front of the kinds pack; it refuses nothing the 50 rules allow on this
stream, so the verdicts still agree.

Two more, ``rk:agent-tools`` and ``rk:agent-tools-narrowed``, measure ``args.**`` like for
like: the bundled pack as shipped (attestation, scopes, schemas, filters and all) beside the same
pack with its credential rules (``sensitive_path``, ``credential_ancestor``) narrowed to the
``fs.*`` tools' ``path`` argument, the form before ``args.**``, each on the same mixed stream of
that pack's tools (``BundledStream``), taken in turn with the others in every round. Both
verdict sets are checked: they may differ only where a credential rule refuses a credential
named outside an ``fs.*`` tool's ``path`` (a move's destination, a diff's path, a URL, a
command), and those are counted by tool, field and rule (``agreement.bundled``).

An eighth, ``cedar-batch``, is Cedar at its best: ``cedarpy.is_authorized_batch`` over each
chunk of 500 requests, its policies and entities parsed once (checked to decide as the single
call does); its per-decision figures are the chunk's time over its size.

The engines take turns on chunks of the stream within each round; ``--rounds`` (3) rounds are
run, and every ratio is reported as the median over the rounds with every round beside it, and
the load average after each. The figures are ratios beside the peer, never verdicts.

    python bench/decide.py --quick --rounds 5

Prints a table and writes ``bench/results/decide.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import platform
import random
import re
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cedarpy
from rich.console import Console
from rich.table import Table

with warnings.catch_warnings():  # agent_os warns about its own package name on import
    warnings.simplefilter("ignore")
    from agent_os.policies.evaluator import PolicyEvaluator
    from agent_os.policies.schema import PolicyDocument

from refusalkit.decide import DecisionPoint, Pack, load_pack
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring

RESULTS = Path(__file__).resolve().parent / "results" / "decide.json"
console = Console()

# -- the policy, as data ------------------------------------------------------------------------
# Each rule: (id, effect, tool, field, kind, pattern). kind: "suffix" (a file name anywhere),
# "under" (a directory tree), "contains" (a substring), "equals", "net8"/"net16" (IPv4 networks).

SECRET_NAMES = [
    ".env", ".env.local", ".env.production", "id_rsa", "id_ed25519", "id_ecdsa", ".netrc",
    ".pgpass", "credentials.json", "service-account.json", ".npmrc", ".pypirc", "secrets.yaml",
    "kubeconfig",
]  # fmt: skip
SECRET_DIRS = ["/etc", "/root", "/var/lib/secrets", "/home/dev/.ssh", "/home/dev/.aws", "/proc"]
PROJECTS = ["api", "web", "cli", "docs", "infra", "ml", "billing", "search", "auth", "mobile"]
SHELL_DENY = ["rm -rf", "mkfs", "dd if=", "chmod 777", "curl 169.254.", "wget 169.254."]
SHELL_ALLOW = ["git status", "ls", "pytest", "make test", "git diff", "npm test"]
NETS = ["10.0.0.0/8", "192.168.0.0/16", "127.0.0.0/8", "169.254.0.0/16"]


def policy_rules() -> list[tuple[str, str, str, str, str, str]]:
    rules = []
    for i, name in enumerate(SECRET_NAMES):
        rules.append((f"secret_name_{i}", "deny", "fs.write", "path", "suffix", name))
    for i, folder in enumerate(SECRET_DIRS):
        rules.append((f"secret_dir_{i}", "deny", "fs.write", "path", "under", folder))
    for i, project in enumerate(PROJECTS):
        rules.append(
            (f"project_{i}", "allow", "fs.write", "path", "under", f"/workspace/{project}")
        )
    rules.append(("block_rm_rf", "block", "shell.run", "command", "contains", "rm -rf /"))
    for i, text in enumerate(SHELL_DENY):
        rules.append((f"shell_deny_{i}", "deny", "shell.run", "command", "contains", text))
    for i, text in enumerate(SHELL_ALLOW):
        rules.append((f"shell_allow_{i}", "allow", "shell.run", "command", "equals", text))
    for i, net in enumerate(NETS):
        kind = "net8" if net.endswith("/8") else "net16"
        rules.append((f"internal_net_{i}", "deny", "net.fetch", "host", kind, net))
    rules.append(("fetch_public", "allow", "net.fetch", "host", "contains", "."))
    rules.append(("read_workspace", "allow", "fs.read", "path", "under", "/workspace"))
    rules.append(("web_search", "allow", "web.search", "query", "contains", ""))
    assert len(rules) == 50, len(rules)
    return rules


# -- refusalkit -----------------------------------------------------------------------------------


_PATH, _SHELL, _HOST = ({"class": c} for c in ("file-path", "shell-command", "ip-address"))
APPROVAL_RULES: list[dict[str, Any]] = [
    {"id": "approve_deploy", "effect": "require-approval", "ttl": "15m",
     "when": {"tool": "fs.write", "args.path": {"glob": "/workspace/*/deploy/**", **_PATH}}},
    {"id": "approve_push", "effect": "require-approval",
     "when": {"tool": "shell.run", "args.command": {"prefix": "git push", **_SHELL}}},
    {"id": "approve_apply", "effect": "require-approval", "message": "Applying needs approval.",
     "when": {"tool": "shell.run", "args.command": {"regex": "^terraform apply", **_SHELL}}},
    {"id": "approve_partner", "effect": "require-approval",
     "when": {"tool": "net.fetch", "args.host": {"cidr": "203.0.113.0/24", **_HOST}}},
]  # fmt: skip


def _as(effect: str, rule: dict[str, Any]) -> dict[str, Any]:
    """``rule`` with another effect (``ttl`` belongs to require-approval only)."""
    if effect == "require-approval":
        return rule
    return {**{k: v for k, v in rule.items() if k != "ttl"}, "effect": effect}


def refusalkit_pack(
    *, kinds: bool = False, approvals: bool = False, held: str = "require-approval"
) -> dict[str, Any]:
    classes = {
        "path": "file-path",
        "command": "shell-command",
        "host": "ip-address",
        "query": "query",
    }
    rules = []
    for rid, effect, tool, field, kind, pattern in policy_rules():
        cond: dict[str, Any] = {"class": classes[field]}
        if kind == "suffix":
            cond["glob"] = f"**/{pattern}"
        elif kind == "under":
            cond["glob"] = f"{pattern}/**"
        elif kind == "contains":
            cond["regex"] = re.escape(pattern) if pattern else ""
        elif kind == "equals":
            cond["in"] = [pattern]
        else:
            cond["cidr"] = pattern
        rules.append({"id": rid, "effect": effect, "when": {"tool": tool, f"args.{field}": cond}})
    return {
        "policy": "bench-50",
        "version": "v1",
        "default": "deny",
        "field_classes": {
            "file-path": {"sensitive": True, **({"kind": "path"} if kinds else {})},
            "shell-command": {"sensitive": True},
            "query": {"sensitive": True},
            "ip-address": {"reveal": True},
        },
        "rules": [*(_as(held, rule) for rule in APPROVAL_RULES), *rules] if approvals else rules,
    }


def with_bundled_walk(pack: dict[str, Any]) -> dict[str, Any]:
    """``pack`` with the bundled pack's ``args.**`` credential rule, its sets and its class."""
    bundled = load_pack(example_path("agent-tools.yaml")).data
    rule = next(r for r in bundled["rules"] if r["id"] == "sensitive_path")
    classes = {
        **pack["field_classes"],
        "credential-file": bundled["field_classes"]["credential-file"],
    }
    return {
        **pack,
        "field_classes": classes,
        "sets": bundled["sets"],
        "rules": [rule, *pack["rules"]],
    }


def refusalkit_engine(
    *,
    kinds: bool = False,
    approvals: bool = False,
    effect: str = "require-approval",
    walk: bool = False,
) -> tuple[Callable[[dict[str, Any]], Any], Callable[[Any], tuple[bool, str]]]:
    pack = refusalkit_pack(kinds=kinds, approvals=approvals, held=effect)
    dp = DecisionPoint(
        Pack.from_mapping(with_bundled_walk(pack) if walk else pack), Keyring.generate()
    )

    def verdict(decision: Any) -> tuple[bool, str]:
        return decision.action.refuses, decision.matched_rule

    return dp.decide, verdict


# -- the bundled pack as shipped, beside its credential rules narrowed ----------------------------

CREDENTIAL_RULES = ("sensitive_path", "credential_ancestor")  # the bundled pack's, over args.**


def narrowed_bundled() -> dict[str, Any]:
    """The bundled agent-tools pack with its credential rules in the form before ``args.**``:
    each ``**`` condition on the ``fs.*`` tools' ``path`` argument only. Everything else is
    the pack as shipped (``code_paths`` keeps its ``args.**``: it had no other form)."""
    data = load_pack(example_path("agent-tools.yaml")).data
    rules = [_narrowed(r) if r["id"] in CREDENTIAL_RULES else r for r in data["rules"]]
    return {**data, "rules": rules}


def _narrowed(rule: dict[str, Any]) -> dict[str, Any]:
    branches = rule["when"] if isinstance(rule["when"], list) else [rule["when"]]
    narrowed = []
    for branch in branches:
        tool = branch.get("tool", {"glob": "fs.*"})
        assert tool == {"glob": "fs.*"} or all(t.startswith("fs.") for t in tool["in"]), rule
        rest = {("args.path" if k == "args.**" else k): v for k, v in branch.items() if k != "tool"}
        narrowed.append({"tool": tool, **rest})
    return {**rule, "when": narrowed}


def bundled_engines() -> dict[str, tuple[Callable[[dict[str, Any]], Any], Any]]:
    """The bundled pack as shipped and narrowed (``narrowed_bundled``), each with a keyring."""
    packs = {
        "rk:agent-tools": load_pack(example_path("agent-tools.yaml")),
        "rk:agent-tools-narrowed": Pack.from_mapping(narrowed_bundled(), "narrowed"),
    }
    return {
        name: (DecisionPoint(pack, Keyring.generate()).decide, _bundled_verdict)
        for name, pack in packs.items()
    }


def _bundled_verdict(decision: Any) -> tuple[bool, str, str | None]:
    """Refused or not, the decisive rule, and the field its decisive step names."""
    step = next((s for s in decision.why_trail if s.decisive), None)
    return decision.action.refuses, decision.matched_rule, None if step is None else step.field


def _settled(decide: Callable[[dict[str, Any]], Any], verdict: Any, request: dict[str, Any]) -> Any:
    """``verdict(decide(request))``, asked again once when it is ``@unavailable``: a decision
    past its deadline on a busy machine is retryable."""
    answer = verdict(decide(request))
    return verdict(decide(request)) if answer[1] == "@unavailable" else answer


def check_bundled(requests: list[dict[str, Any]], engines: dict[str, Any]) -> dict[str, Any]:
    """Both verdict sets: they may differ only where a credential rule over ``args.**`` refuses
    a credential named outside an ``fs.*`` tool's ``path`` argument. Returns the counts of
    each set and of those differences, by tool, rule and field."""
    (ship, ship_verdict), (narrow, narrow_verdict) = engines.values()
    counts = {"shipped_refused": 0, "narrowed_refused": 0, "differ": 0}
    differ: dict[str, int] = {}
    for index, request in enumerate(requests):
        ours, theirs = (
            _settled(ship, ship_verdict, request),
            _settled(narrow, narrow_verdict, request),
        )
        counts["shipped_refused"] += ours[0]
        counts["narrowed_refused"] += theirs[0]
        if ours[:2] == theirs[:2]:
            continue
        fs_path = request["tool"].startswith("fs.") and ours[2] == "args.path"
        if not ours[0] or ours[1] not in CREDENTIAL_RULES or ours[2] is None or fs_path:
            raise SystemExit(
                f"bundled verdicts differ on request {index} ({request}): {ours} {theirs}"
            )
        counts["differ"] += 1
        key = f"{request['tool']} {ours[2]}: {ours[1]} (narrowed: {theirs[1]})"
        differ[key] = differ.get(key, 0) + 1
    return {**counts, "differences": dict(sorted(differ.items()))}


# -- Cedar ---------------------------------------------------------------------------------------


def _cedar_string(text: str) -> str:
    return json.dumps(text)


def cedar_text() -> str:
    out = []
    for rid, effect, tool, field, kind, pattern in policy_rules():
        head = "permit" if effect == "allow" else "forbid"
        if kind == "suffix":
            test = f"(context.{field} like {_cedar_string('*/' + pattern)} || context.{field} == {_cedar_string(pattern)})"  # noqa: E501
        elif kind == "under":
            test = f"context.{field} like {_cedar_string(pattern + '/*')}"
        elif kind == "contains":
            test = (
                f"context.{field} like {_cedar_string('*' + pattern + '*')}" if pattern else "true"
            )
        elif kind == "equals":
            test = f"context.{field} == {_cedar_string(pattern)}"
        else:
            test = f'(context.is_ip && ip(context.{field}).isInRange(ip("{pattern}")))'
        scope = f'principal, action == Action::"{tool}", resource'
        out.append(f'@id("{rid}")\n{head}({scope}) when {{ {test} }};')
    return "\n".join(out)


IP_LIKE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def cedar_context(request: dict[str, Any]) -> dict[str, Any]:
    """The context the Cedar policy reads: every field present (Cedar errors on a missing one)."""
    args = request.get("args", {})
    host = args.get("host", "")
    return {
        "path": args.get("path", ""),
        "command": args.get("command", ""),
        "host": host,
        "query": args.get("query", ""),
        "is_ip": bool(IP_LIKE.match(host)),
    }


def cedar_engine() -> tuple[Callable[[dict[str, Any]], Any], Callable[[Any], tuple[bool, str]]]:
    policies = cedarpy.PolicySet.from_str(cedar_text())
    entities = cedarpy.Entities.from_json_str("[]")

    def decide(request: dict[str, Any]) -> Any:
        return cedarpy.is_authorized(cedar_request(request), policies, entities)

    names = {f"policy{i}": rule[0] for i, rule in enumerate(policy_rules())}

    def verdict(result: Any) -> tuple[bool, str]:
        reasons = sorted(names.get(r, r) for r in result.diagnostics.reasons)
        return not result.allowed, ",".join(reasons)

    return decide, verdict


def cedar_request(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "principal": f'Agent::"{request["caller"]["agent"]}"',
        "action": f'Action::"{request["tool"]}"',
        "resource": f'Tool::"{request["tool"]}"',
        "context": cedar_context(request),
    }


def cedar_batch() -> Callable[[list[dict[str, Any]]], list[Any]]:
    """Cedar at its best: ``is_authorized_batch`` over a chunk, the policies and entities
    parsed once (the handles cedarpy's documentation recommends reusing)."""
    policies = cedarpy.PolicySet.from_str(cedar_text())
    entities = cedarpy.Entities.from_json_str("[]")

    def decide_all(requests: list[dict[str, Any]]) -> list[Any]:
        return cedarpy.is_authorized_batch([cedar_request(r) for r in requests], policies, entities)

    return decide_all


# -- Agent Governance Toolkit ----------------------------------------------------------------------


def agt_document() -> dict[str, Any]:
    """The 50 rules as an AGT policy document (one condition per rule, on ``tool|value``)."""
    priority = {"block": 300, "deny": 200, "allow": 100}
    rules = []
    for rid, effect, tool, _field, kind, pattern in policy_rules():
        head = "^" + re.escape(tool) + r"\|"
        if kind == "suffix":
            regex = head + r"(.*/)?" + re.escape(pattern) + "$"
        elif kind == "under":
            regex = head + re.escape(pattern + "/")
        elif kind == "contains":
            regex = head + ".*" + re.escape(pattern)
        elif kind == "equals":
            regex = head + re.escape(pattern) + "$"
        else:
            octets = pattern.split("/")[0].split(".")[: 1 if kind == "net8" else 2]
            regex = head + re.escape(".".join(octets) + ".") + r"\d+(\.\d+)*$"
        rules.append(
            {
                "name": rid,
                "condition": {"field": "call", "operator": "matches", "value": regex},
                "action": effect,
                "priority": priority[effect],
            }
        )
    return {"name": "bench-50", "version": "1.0", "rules": rules, "defaults": {"action": "deny"}}


AGT_FIELDS = ("path", "command", "host", "query")


def agt_call(request: dict[str, Any]) -> str:
    """The one string AGT's single-condition rules test: ``tool|value``."""
    args = request.get("args", {})
    value = next((args[f] for f in AGT_FIELDS if f in args), "")
    return f"{request['tool']}|{value}"


def agt_engine() -> tuple[Callable[[dict[str, Any]], Any], Callable[[Any], tuple[bool, str]]]:
    doc = PolicyDocument.model_validate(agt_document())
    evaluator = PolicyEvaluator([doc])

    def decide(request: dict[str, Any]) -> Any:
        return evaluator.evaluate({"tool_name": request["tool"], "call": agt_call(request)})

    def verdict(result: Any) -> tuple[bool, str]:
        return not result.allowed, result.matched_rule or "@default"

    return decide, verdict


# -- the request mix ----------------------------------------------------------------------------


def make_requests(count: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    agents = ["coder", "researcher", "ops", "reviewer"]
    words = ["main", "util", "model", "view", "api", "store", "test", "config", "index", "core"]

    def caller() -> dict[str, str]:
        return {"agent": rng.choice(agents), "session": f"s-{rng.randrange(10_000)}"}

    def sensitive() -> dict[str, Any]:
        if rng.random() < 0.6:
            path = f"/workspace/{rng.choice(PROJECTS)}/{rng.choice(words)}{rng.randrange(999)}/{rng.choice(SECRET_NAMES)}"  # noqa: E501
        else:
            path = f"{rng.choice(SECRET_DIRS)}/{rng.choice(words)}{rng.randrange(99_999)}.conf"
        return {"tool": "fs.write", "args": {"path": path, "content": "x" * rng.randrange(8, 64)}}

    def benign() -> dict[str, Any]:
        root = rng.choice([*PROJECTS, "scratch"])  # scratch: no rule allows it
        path = f"/workspace/{root}/src/{rng.choice(words)}_{rng.randrange(1_000_000)}.py"
        return {"tool": "fs.write", "args": {"path": path, "content": "print('hello')\n"}}

    def other() -> dict[str, Any]:
        pick = rng.random()
        if pick < 0.35:
            if rng.random() < 0.5:
                command = rng.choice(SHELL_ALLOW)
            else:
                command = f"{rng.choice([*SHELL_DENY, 'echo', 'cat notes.txt |', 'rm -rf /'])} /tmp/{rng.randrange(10**6)}"  # noqa: E501
            return {"tool": "shell.run", "args": {"command": command}}
        if pick < 0.6:
            if rng.random() < 0.5:
                host = f"{rng.choice(['10', '192.168', '127', '169.254'])}.{rng.randrange(256)}.{rng.randrange(256)}"  # noqa: E501
                host = ".".join([*host.split("."), "1", "1"][:4])
            else:
                host = f"{rng.choice(['93.184', '151.101', '8.8'])}.{rng.randrange(256)}.{rng.randrange(256)}"  # noqa: E501
            return {"tool": "net.fetch", "args": {"host": host}}
        if pick < 0.8:
            path = (
                rng.choice(["/workspace/", "/etc/", "/home/dev/"]) + f"f{rng.randrange(10**6)}.txt"
            )
            return {"tool": "fs.read", "args": {"path": path}}
        return {
            "tool": "web.search",
            "args": {"query": f"how to {rng.choice(words)} {rng.randrange(10**6)}"},
        }

    def unknown() -> dict[str, Any]:
        return {"tool": f"plugin.{rng.choice(words)}{rng.randrange(10_000)}", "args": {}}

    makers = [sensitive, benign, other, unknown]
    shares = [0.25, 0.35, 0.30, 0.10]
    out = []
    for _ in range(count):
        request = rng.choices(makers, shares)[0]()
        request["caller"] = caller()
        out.append(request)
    return out


# -- the bundled pack's stream ---------------------------------------------------------------------

CREDENTIALS = [
    ".env", ".env.local", ".envrc", ".ssh/id_rsa", ".ssh/id_ed25519", ".ssh/config",
    ".aws/credentials", ".aws/config", ".npmrc", ".pypirc", ".netrc", ".git-credentials",
    ".kube/config", ".docker/config.json", "terraform.tfstate", "deploy.pem", ".pgpass",
]  # fmt: skip
SOURCES = ["main.py", "app.py", "models.py", "views.py", "util.py", "README.md", "index.ts"]
COMMANDS = [
    "git status", "git diff --stat", "git log --oneline -n 20", "ls -la /workspace/src",
    "pytest -q tests", "cat /workspace/README.md", "grep -n TODO src/app.py",
    "python -m pytest -x tests/test_app.py", "make test", "npm test", "rm -rf /workspace/build",
    "curl http://169.254.169.254/latest/", "cat ~/.aws/credentials | head",
]  # fmt: skip
COMMAND_SHARES = [12, 8, 8, 10, 12, 8, 8, 8, 6, 6, 2, 1, 2]
SITES = [("docs.python.org", "151.101.0.223"), ("pypi.org", "151.101.64.223"),
         ("github.com", "140.82.112.3"), ("10.0.3.7", "10.0.3.7")]  # fmt: skip
TOKENS = {}  # agent: the example token of examples/requests.jsonl (the bundled example key)


def example_tokens() -> dict[str, str]:
    """Each agent's attestation token, as the bundled requests carry it."""
    if not TOKENS:
        for line in example_path("requests.jsonl").read_text(encoding="utf-8").splitlines():
            try:
                caller = json.loads(line).get("caller", {})
            except (json.JSONDecodeError, AttributeError):
                continue
            if isinstance(caller, dict) and caller.get("token"):
                TOKENS.setdefault(caller["agent"], caller["token"])
    return TOKENS


class BundledStream:
    """A day of a coding agent's calls on the bundled pack's tools (examples/requests.jsonl
    in proportion): mostly workspace reads, writes and read-only commands, a few credential
    paths (about 7%), some of them named outside ``path`` (a move's destination, a diff's
    path, a URL's path, a search's query)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.sessions = [f"s-{n}" for n in range(40)]

    def path(self, credential: float = 0.06) -> str:
        rng = self.rng
        if rng.random() < credential:
            return rng.choice(["/workspace/", "/home/dev/", "/workspace/infra/"]) + rng.choice(
                CREDENTIALS
            )
        folder = rng.choice(["src", "src", "tests", "docs", "config"])
        return (
            f"/workspace/{folder}/{rng.choice(PROJECTS)}/{rng.randrange(400)}_{rng.choice(SOURCES)}"
        )

    def fs_read(self) -> dict[str, Any]:
        return {"tool": "fs.read", "args": {"path": self.path()}}

    def fs_write(self) -> dict[str, Any]:
        rng = self.rng
        path = self.path(0.04)
        if rng.random() < 0.03:
            path = "/workspace/.github/workflows/ci.yml"
        lines = rng.randrange(1, 40)
        content = "".join(f"line {i} of {path.rsplit('/', 1)[-1]}\n" for i in range(lines))
        return {"tool": "fs.write", "args": {"path": path, "content": content}}

    def fs_move(self) -> dict[str, Any]:
        rng = self.rng
        tool = rng.choice(["fs.move", "fs.copy", "fs.delete"])
        args: dict[str, Any] = {"path": self.path()}
        if tool != "fs.delete":
            args["destination"] = self.path(0.15)
        return {"tool": tool, "args": args}

    def shell(self) -> dict[str, Any]:
        rng = self.rng
        args: dict[str, Any] = {"command": rng.choices(COMMANDS, COMMAND_SHARES)[0]}
        if rng.random() < 0.2:
            args["timeout_s"] = rng.choice([30, 60, 300])
        return {"tool": "shell.run", "args": args}

    def fetch(self) -> dict[str, Any]:
        rng = self.rng
        host, address = rng.choice(SITES)
        tail = (
            rng.choice([".env", "config/.npmrc"])
            if rng.random() < 0.05
            else f"page/{rng.randrange(999)}"
        )
        args = {"url": f"https://{host}/{tail}", "host": address, "max_bytes": 2_000_000}
        return {"tool": "net.fetch", "args": args}

    def git(self) -> dict[str, Any]:
        rng = self.rng
        pick = rng.random()
        if pick < 0.5:
            args: dict[str, Any] = {"base": "main"}
            if rng.random() < 0.5:
                args["path"] = self.path(0.1)
            return {"tool": "git.diff", "args": args}
        if pick < 0.75:
            return {"tool": "git.log", "args": {"limit": rng.choice([10, 20, 50])}}
        branch = rng.choice(["main", f"feature/{rng.randrange(99)}-login"])
        return {"tool": "git.push", "args": {"remote": "origin", "branch": branch}}

    def search(self) -> dict[str, Any]:
        topic = self.rng.choice(
            ["RFC 9162 proofs", "pytest fixtures", "where is .aws/credentials read"]
        )
        return {"tool": "web.search", "args": {"query": topic}}

    def request(self) -> dict[str, Any]:
        rng = self.rng
        makers = [
            self.fs_read,
            self.fs_write,
            self.fs_move,
            self.shell,
            self.fetch,
            self.git,
            self.search,
        ]
        request = rng.choices(makers, [0.27, 0.22, 0.04, 0.22, 0.12, 0.09, 0.04])[0]()
        agent = "coder"
        if request["tool"] == "web.search" or (
            request["tool"] in ("net.fetch", "fs.read") and rng.random() < 0.4
        ):
            agent = "researcher"
        elif request["tool"] in ("fs.read", "git.diff") and rng.random() < 0.3:
            agent = "reviewer"
        request["caller"] = {"agent": agent, "session": rng.choice(self.sessions),
                             "token": example_tokens()[agent]}  # fmt: skip
        if rng.random() < 0.4:
            request["input"] = (
                f"please {rng.choice(['fix', 'check', 'update'])} the {rng.choice(PROJECTS)} part"
            )
        return request


def make_bundled_requests(count: int, seed: int = 11) -> list[dict[str, Any]]:
    stream = BundledStream(seed)
    return [stream.request() for _ in range(count)]


# -- running -------------------------------------------------------------------------------------


def check_agreement(requests: list[dict[str, Any]], engines: dict[str, Any]) -> dict[str, Any]:
    """Every engine refuses exactly what the others refuse, for the same (decisive) rule."""
    counts = {"allow": 0, "refuse": 0}
    for index, request in enumerate(requests):
        verdicts = {
            name: _settled(decide, verdict, request) for name, (decide, verdict) in engines.items()
        }
        ours_refused, ours_rule = verdicts["refusalkit"]
        for name, (refused, rule) in verdicts.items():
            if refused != ours_refused:
                raise SystemExit(f"disagreement on request {index} ({request}): {verdicts}")
            if name == "agt" and rule != ours_rule:
                raise SystemExit(f"AGT decisive rule differs on request {index}: {verdicts}")
            if name == "cedar" and ours_rule != "@default" and ours_rule not in rule.split(","):
                raise SystemExit(f"Cedar reasons lack {ours_rule} on request {index}: {verdicts}")
        counts["refuse" if ours_refused else "allow"] += 1
    return counts


def measure(
    engines: dict[str, Callable[[dict[str, Any]], Any]],
    requests: list[dict[str, Any]],
    batches: dict[str, Callable[[list[dict[str, Any]]], Any]] | None = None,
    streams: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, dict[str, float]]:
    """Time every call; engines take turns on chunks of the stream, so that a busy machine
    slows all of them alike rather than whichever ran during the noise. A batch engine decides
    each chunk in one call: its per-decision figures are the chunk's time over its size. An
    engine named in ``streams`` decides that stream (as long as ``requests``) instead."""
    batches = batches or {}
    own = streams or {}
    for name, decide in engines.items():
        for request in own.get(name, requests)[:2000]:  # warm caches alike
            decide(request)
    for decide_all in batches.values():
        decide_all(requests[:2000])
    samples: dict[str, list[int]] = {name: [] for name in [*engines, *batches]}
    walls: dict[str, float] = dict.fromkeys(samples, 0.0)
    timer = time.perf_counter_ns
    chunk = 500
    gc.collect()
    gc.disable()
    try:
        for start in range(0, len(requests), chunk):
            part = requests[start : start + chunk]
            for name, decide in engines.items():
                mine = own[name][start : start + chunk] if name in own else part
                out = samples[name]
                began = timer()
                for request in mine:
                    t0 = timer()
                    decide(request)
                    out.append(timer() - t0)
                walls[name] += (timer() - began) / 1e9
            for name, decide_all in batches.items():
                began = timer()
                decide_all(part)
                spent = timer() - began
                samples[name].extend([spent // len(part)] * len(part))
                walls[name] += spent / 1e9
    finally:
        gc.enable()
    results = {}
    for name, values in samples.items():
        values.sort()
        results[name] = {
            "p50_us": values[len(values) // 2] / 1000,
            "p99_us": values[int(len(values) * 0.99)] / 1000,
            "mean_us": statistics.fmean(values) / 1000,
            "decisions_per_s": len(values) / walls[name],
        }
    return results


def median_rounds(rounds: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Each engine's figures: the median over the rounds."""
    return {
        name: {key: statistics.median(r[name][key] for r in rounds) for key in rounds[0][name]}
        for name in rounds[0]
    }


def ratio(rounds: list[dict[str, dict[str, float]]], a: str, b: str, key: str) -> dict[str, Any]:
    """``a[key] / b[key]`` in each round (the engines ran interleaved within it): the median,
    the lowest and highest, and every round."""
    values = [r[a][key] / r[b][key] for r in rounds]
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "rounds": values,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k requests instead of 100k")
    parser.add_argument("--count", type=int, default=None, help="number of requests")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (median and spread)")
    options = parser.parse_args()
    count = options.count or (10_000 if options.quick else 100_000)
    requests = make_requests(count)
    engines = {
        "refusalkit": refusalkit_engine(),
        "refusalkit+kinds": refusalkit_engine(kinds=True),
        "refusalkit+approval": refusalkit_engine(approvals=True),
        "refusalkit+deny4": refusalkit_engine(approvals=True, effect="deny"),
        "refusalkit+args**": refusalkit_engine(kinds=True, walk=True),
        "cedar": cedar_engine(),
        "agt": agt_engine(),
    }
    batches = {"cedar-batch": cedar_batch()}
    logging_off()
    agreement = check_agreement(requests, engines)
    check_batch(requests, engines["cedar"], batches["cedar-batch"])
    console.print(f"all engines agree on {count:,} requests (Cedar's batch too): {agreement}")
    bundled, stream = bundled_engines(), make_bundled_requests(count)
    agreement["bundled"] = check_bundled(stream, bundled)
    console.print(f"the bundled pack, shipped and narrowed: {agreement['bundled']}")
    deciders = {name: decide for name, (decide, _) in {**engines, **bundled}.items()}
    streams = dict.fromkeys(bundled, stream)
    loads: list[float | None] = []
    rounds = []
    for _ in range(options.rounds):
        rounds.append(measure(deciders, requests, batches, streams))
        loads.append(round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None)
    report_rounds(count, agreement, rounds, loads)


def check_batch(requests: list[dict[str, Any]], single: Any, batch: Any) -> None:
    """Cedar's batch API decides every request as its one-at-a-time call does."""
    decide, verdict = single
    for start in range(0, len(requests), 500):
        part = requests[start : start + 500]
        for index, (request, result) in enumerate(zip(part, batch(part), strict=True)):
            if verdict(result) != verdict(decide(request)):
                raise SystemExit(f"Cedar's batch differs on request {start + index}")


RATIOS = {  # name: (a, b, key): a's figure over b's, per round
    "throughput_vs_cedar": ("refusalkit", "cedar", "decisions_per_s"),
    "throughput_vs_cedar_batch": ("refusalkit", "cedar-batch", "decisions_per_s"),
    "throughput_vs_agt": ("refusalkit", "agt", "decisions_per_s"),
    "kinds_throughput_vs_plain": ("refusalkit+kinds", "refusalkit", "decisions_per_s"),
    "approval_p50_vs_plain": ("refusalkit+approval", "refusalkit", "p50_us"),
    "approval_p50_vs_same_rules_as_deny": ("refusalkit+approval", "refusalkit+deny4", "p50_us"),
    "walk_p50_vs_kinds": ("refusalkit+args**", "refusalkit+kinds", "p50_us"),
    "bundled_p50_vs_narrowed": ("rk:agent-tools", "rk:agent-tools-narrowed", "p50_us"),
}


def report_rounds(
    count: int,
    agreement: dict[str, Any],
    rounds: list[dict[str, dict[str, float]]],
    loads: list[float | None],
) -> None:
    results = median_rounds(rounds)
    ours = results["refusalkit"]
    table = Table(
        title=f"decide: {count:,} mixed requests, 50-rule policy, median of {len(rounds)}"
    )
    for column in ("engine", "p50 µs", "p99 µs", "decisions/s", "refusalkit speed-up"):
        table.add_column(column, justify="right" if column != "engine" else "left")
    for name, row in results.items():
        speed = ours["decisions_per_s"] / row["decisions_per_s"]
        table.add_row(
            name,
            f"{row['p50_us']:.1f}",
            f"{row['p99_us']:.1f}",
            f"{row['decisions_per_s']:,.0f}",
            "-" if name.startswith(("refusalkit", "rk:")) else f"{speed:.1f}x",
        )
    console.print(table)
    ratios = {name: ratio(rounds, *spec) for name, spec in RATIOS.items()}
    for name, value in ratios.items():
        shown = ", ".join(f"{v:.3f}" for v in value["rounds"])
        console.print(f"{name}: median {value['median']:.3f} (rounds: {shown})")
    console.print(f"load average (1 min) after each round: {loads}")
    report = {
        "benchmark": "decide",
        "requests": count,
        "rules": 50,
        "rounds": len(rounds),
        "agreement": agreement,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "load_average_1m": loads,  # other work on the machine slows every engine alike
        "engines": results,
        "every_round": rounds,
        "ratios": ratios,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {RESULTS}")


def logging_off() -> None:
    """AGT logs nothing on the happy path; keep stray warnings out of the timing."""
    logging.disable(logging.WARNING)


if __name__ == "__main__":
    main()
