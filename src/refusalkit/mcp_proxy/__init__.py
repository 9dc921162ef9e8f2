"""MCP enforcement: refusalkit between any MCP client and any MCP server (docs/mcp.md).

``refusalkit mcp wrap`` (stdio) and ``refusalkit mcp proxy`` (Streamable HTTP) decide every
``tools/call``, ``resources/read`` and ``prompts/get`` with the pack's ``DecisionPoint``, journal
the decision before the request is forwarded or refused, answer a refused call with an
``isError`` ``CallToolResult`` whose text is the refusal line, pin tool definitions (``--pin``),
pass results through the chat guard's scanner and the pack's result filters, and pass everything
else through unchanged. The contract (request mapping,
refusal line, ``_meta`` key) is docs/design/mcp.md.

The package is named ``mcp_proxy``, not ``mcp``, so that ``import mcp`` always means the SDK
(PyPI ``mcp``, the ``refusalkit[mcp]`` extra), for readers and type checkers alike.
"""

from __future__ import annotations

from refusalkit._deprecated import moved as _moved
from refusalkit.mcp_proxy._bridge import Bridge
from refusalkit.mcp_proxy._gate import Caller, Gate, GateOutcome
from refusalkit.mcp_proxy._http import ProxyApp, serve_http
from refusalkit.mcp_proxy._pins import MEMBERS as PIN_MEMBERS
from refusalkit.mcp_proxy._pins import Pin, PinFile, PinSet, pending_path, pin_problem, tool_digest
from refusalkit.mcp_proxy._result import META_KEY, REFUSAL_CODE, refusal_error, refusal_result
from refusalkit.mcp_proxy._results import ResultMode, check_result
from refusalkit.mcp_proxy._stdio import open_gate, serve_stdio

__all__ = [
    "META_KEY",
    "PIN_MEMBERS",
    "REFUSAL_CODE",
    "Bridge",
    "Caller",
    "Gate",
    "GateOutcome",
    "Pin",
    "PinFile",
    "PinSet",
    "ProxyApp",
    "ResultMode",
    "check_result",
    "open_gate",
    "pending_path",
    "pin_problem",
    "refusal_error",
    "refusal_result",
    "serve_http",
    "serve_stdio",
    "tool_digest",
]

# Renamed so that each public name has one meaning (docs/design/architecture.md, Names);
# importable, with a DeprecationWarning, until 0.3 (CHANGELOG.md).
__getattr__ = _moved(
    __name__,
    {
        "Verdict": ("refusalkit.mcp_proxy", "GateOutcome"),
    },
)
