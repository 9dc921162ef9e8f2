"""``parse_request``: what a well-formed request is (docs/design/policy.md)."""

from __future__ import annotations

from typing import Any

import pytest

from refusalkit.errors import RequestError
from refusalkit.model import parse_request


def test_well_formed_request() -> None:
    req = parse_request(
        {"tool": "fs.write", "args": {"path": "/x"}, "caller": {"agent": "coder", "session": "s"}}
    )
    assert (req.tool, req.agent, req.session, req.input) == ("fs.write", "coder", "s", None)


def test_args_and_caller_default_to_empty() -> None:
    req = parse_request({"tool": "web.search"})
    assert req.args == {}
    assert req.caller == {}
    assert req.agent is None


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        ([1, 2], "must be a JSON object"),
        ({"args": {}}, "has no `tool`"),
        ({"tool": 3}, "`tool` must be a string"),
        ({"tool": "x", "args": []}, "`args` must be an object"),
        ({"tool": "x", "caller": "me"}, "`caller` must be an object"),
    ],
)
def test_malformed_requests_name_the_problem(obj: Any, problem: str) -> None:
    with pytest.raises(RequestError, match=problem):
        parse_request(obj)
