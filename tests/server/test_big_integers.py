"""Integers beyond ±(2**53 - 1) are refused alike by the library, the CLI and the service, as a
malformed request: deny + input-rejected by ``@request`` (docs/decision.md, Large integers).
RFC 8785 cannot write them, so no digest could name them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from svc_helpers import Deployment, make_deployment
from typer.testing import CliRunner

import refusalkit.cli
from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.server import ServiceConfig, create_app
from refusalkit.server._routes_decide import _long_number

SAME = ("action", "reason_code", "matched_rule", "request_digest")


def body(number: int) -> bytes:
    return b'{"tool": "fs.read", "args": {"path": "/w/a", "n": %d}, "caller": {"agent": "a"}}' % (
        number
    )


@pytest.fixture(scope="module")
def dep(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    return make_deployment(tmp_path_factory.mktemp("bigint"))


def essentials(decision: dict[str, Any]) -> tuple[object, ...]:
    """The decision's verdict, digest and problem (the CLI prefixes a line number)."""
    detail = re.sub(r"^line \d+: ", "", decision["why_trail"][-1]["detail"])
    return (*(decision[k] for k in SAME), detail)


@pytest.mark.parametrize("number", [2**53, -(2**53), 2**64 + 1, 10**400])
def test_library_cli_and_service_refuse_alike(dep: Deployment, number: int, tmp_path: Path) -> None:
    point = DecisionPoint(load_pack(dep.pack), dep.keyring)
    library = point.decide_line(body(number)).to_dict()
    assert (library["action"], library["reason_code"]) == ("deny", "input-rejected")
    assert library["matched_rule"] == "@request"
    assert "cannot be recorded exactly (RFC 7493 §2.2)" in library["why_trail"][-1]["detail"]
    assert essentials(point.decide(json.loads(body(number))).to_dict()) == essentials(library)

    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(body(number) + b"\n")
    args = ["decide", "--policy", str(dep.pack), "--keyring", str(dep.keyring_path)]
    result = CliRunner().invoke(refusalkit.cli.app, [*args, str(requests)])
    assert essentials(json.loads(result.stdout)) == essentials(library)

    config = ServiceConfig(
        policy=dep.pack, journal=dep.journal, keys_file=dep.keys.path, keyring=dep.keyring_path
    )
    with TestClient(create_app(config)) as client:
        answer = client.post("/v1/decide", content=body(number), headers=dep.keys.header("all"))
    assert essentials(answer.json()) == essentials(library)


def test_the_largest_exact_integer_is_decided(dep: Deployment) -> None:
    point = DecisionPoint(load_pack(dep.pack), dep.keyring)
    decision = point.decide_line(body(2**53 - 1))
    assert decision.matched_rule not in {"@unavailable", "@request"}


def test_a_batch_refuses_a_big_integer_as_a_single_request_does(dep: Deployment) -> None:
    config = ServiceConfig(
        policy=dep.pack, journal=dep.journal, keys_file=dep.keys.path, keyring=dep.keyring_path
    )
    batch = b'{"requests": [' + body(2**64 + 1) + b", " + body(1) + b"]}"
    with TestClient(create_app(config)) as client:
        answer = client.post("/v1/decide/batch", content=batch, headers=dep.keys.header("all"))
        single = client.post("/v1/decide", content=body(2**64 + 1), headers=dep.keys.header("all"))
    decisions = answer.json()["decisions"]
    assert essentials(decisions[0]) == essentials(single.json())
    assert decisions[1]["matched_rule"] not in {"@unavailable", "@request"}


_DIGIT_RUN = re.compile(rb"[0-9]{16}")


@settings(max_examples=400)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=40),
            st.text(alphabet="0123456789", min_size=12, max_size=20).map(str.encode),
            st.sampled_from([b"/", b":", b"\xd9", b"\xb0", b"\x00", b"\xff"]),
        ),
        max_size=12,
    ).map(b"".join)
)
def test_the_long_number_check_is_the_digit_run_regex(data: bytes) -> None:
    """The service's fast check for a long number (a speed twin, CONTRIBUTING.md) answers as
    its reference, the regex ``[0-9]{16}``, for any bytes: runs of digits near 16 long, cut by
    the bytes on either side of ``0``-``9`` and by non-ASCII bytes."""
    assert _long_number(data) == bool(_DIGIT_RUN.search(data))
