"""Property: a text that a policy or engine built from the request never shows its values."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from refusalkit.engines import EngineMapping
from refusalkit.engines._record import Recorder
from refusalkit.keyring import Keyring
from refusalkit.model import EngineRef, PolicyRef

RING = Keyring.generate()
RECORDER = Recorder(
    RING, EngineRef("test", "0"), PolicyRef("p", "1", "sha256:" + "0" * 64), EngineMapping()
)
# letters that no redaction token contains, so a value's absence is a clean test
secrets = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ/._ ", min_size=4, max_size=12)
requests = st.fixed_dictionaries(
    {"tool": st.just("t"), "args": st.dictionaries(st.sampled_from(["a", "b", "c"]), secrets,
                                                   min_size=1)},
    optional={"caller": st.fixed_dictionaries({"agent": secrets})},
)  # fmt: skip


def _values(request: dict[str, Any]) -> list[str]:
    return [*request["args"].values(), *request.get("caller", {}).values()]


@given(request=requests, data=st.data())
def test_no_request_value_survives_scrubbing(request: dict[str, Any], data: Any) -> None:
    values = _values(request)
    picked = data.draw(st.lists(st.sampled_from(values), min_size=1, max_size=3))
    text = "refused: " + " and ".join(picked) + " (policy words)"
    scrubbed = RECORDER.scrub(text, request)
    for value in values:
        assert value not in scrubbed
    assert scrubbed.startswith("refused: ")
    assert scrubbed.endswith(" (policy words)")


def test_short_values_and_revealed_paths_stay() -> None:
    revealing = Recorder(RING, RECORDER.engine, RECORDER.policy,
                         EngineMapping(reveal=frozenset({"tool", "args.host"})))  # fmt: skip
    request = {"tool": "t", "args": {"host": "example.org", "n": "abc"}}
    assert revealing.scrub("to example.org, abc", request) == "to example.org, abc"
