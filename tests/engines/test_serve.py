"""The HTTP service with an external engine (``refusalkit serve --engine``), in-process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import refusalkit.cli
from refusalkit.engines import EngineKind, EngineSpec
from refusalkit.errors import ServiceError
from refusalkit.server import ServiceConfig, create_app
from support.records import valid_record

Write = Callable[[str, str], Path]

CEDAR = """\
@id("no-etc")
forbid(principal, action, resource) when { context.path like "/etc/*" };
@id("permit-all")
permit(principal, action, resource);
"""


def _config(tmp_path: Path, keyring_path: Path, spec: EngineSpec) -> ServiceConfig:
    return ServiceConfig(
        policy=None,
        journal=str(tmp_path / "journal.db"),
        keyring=keyring_path,
        insecure_no_auth=True,
        deadline_ms=5_000,
        engine=spec.to_dict(),
    )


def test_serve_decides_journals_and_reloads_with_cedar(
    write: Write, tmp_path: Path, keyring_path: Path
) -> None:
    policy = write("p.cedar", CEDAR)
    config = _config(tmp_path, keyring_path, EngineSpec(EngineKind.CEDAR, str(policy)))
    assert ServiceConfig.from_json(config.to_json()) == config  # as worker processes get it
    request = {"tool": "fs.write", "args": {"content": "x"}, "caller": {"agent": "coder"}}
    with TestClient(create_app(config)) as client:
        answer = client.post("/v1/decide", json=request)
        record = valid_record(answer.json())
        assert (record["action"], record["matched_rule"]) == ("deny", "no-etc")
        assert record["engine"]["name"] == "cedar"
        assert answer.headers["Refusalkit-Journal-Index"] == "0"
        ready = client.get("/readyz").json()
        assert ready["ready"] is True
        assert ready["pack"]["digest"] == record["policy"]["digest"]
        policy.write_text("permit(principal, action")  # broken: rejected, the old one serves
        rejected = client.post("/v1/admin/reload")
        assert rejected.status_code == 422
        assert "not valid Cedar" in rejected.text
        assert client.post("/v1/decide", json=request).json()["matched_rule"] == "no-etc"
        policy.write_text('@id("all")\npermit(principal, action, resource);\n')
        reload = client.post("/v1/admin/reload").json()
        assert reload["loaded"] is True
        assert client.post("/v1/decide", json=request).json()["action"] == "allow"
        assert client.get("/v1/stats").json()["total"] == 3


def test_a_pack_and_an_engine_together_are_refused(
    write: Write, tmp_path: Path, keyring_path: Path
) -> None:
    spec = EngineSpec(EngineKind.CEDAR, str(write("p.cedar", CEDAR)))
    config = _config(tmp_path, keyring_path, spec)
    both = ServiceConfig(**{**{f: getattr(config, f) for f in config.__slots__},
                            "policy": write("pack.yaml", "x")})  # fmt: skip
    with pytest.raises(ServiceError, match="either a policy pack or an engine"):
        create_app(both)


def test_serve_cli_refuses_neither_and_bad_engines(keyring_path: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["serve", "--journal", str(tmp_path / "j.db"), "--insecure-no-auth",
            "--keyring", str(keyring_path)]  # fmt: skip
    for extra, problem in [
        ([], "give either --policy PACK or --engine"),
        (["--engine", "rego:x"], "needs --query"),
    ]:
        result = runner.invoke(refusalkit.cli.app, base + extra)
        assert result.exit_code == 2
        assert problem in result.stderr


def test_serve_with_an_engine_rejects_a_malformed_request_as_with_a_pack(
    write: Write, tmp_path: Path, keyring_path: Path
) -> None:
    """The service's one decide path answers a malformed body from an engine as from a pack:
    HTTP 200 with deny + input-rejected by @request (docs/design/decision.md, Reason codes)."""
    spec = EngineSpec(EngineKind.CEDAR, str(write("p.cedar", CEDAR)))
    with TestClient(create_app(_config(tmp_path, keyring_path, spec))) as client:
        for body in (b'{"tool": 3}', b"[1, 2]", b'{"tool": "a", "args": []}', b"not json"):
            answer = client.post("/v1/decide", content=body)
            assert answer.status_code == 200, body
            record = valid_record(answer.json())
            assert (record["action"], record["reason_code"], record["matched_rule"]) == (
                "deny", "input-rejected", "@request",
            ), body  # fmt: skip
            assert record["engine"]["name"] == "cedar"
