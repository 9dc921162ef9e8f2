"""The collector settings of a serving process (``tune_gc``), and that building an app in
someone else's process leaves their collector alone."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

from refusalkit._internal.serving import GC_THRESHOLDS
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring
from refusalkit.server import ServiceConfig, create_app

_PROBE = """
import gc, json
from refusalkit._internal.serving import tune_gc
before = gc.get_freeze_count()
tune_gc()
print(json.dumps({"threshold": gc.get_threshold(), "frozen": gc.get_freeze_count() - before,
                  "enabled": gc.isenabled()}))
"""


def test_tune_gc_freezes_start_up_objects_and_raises_thresholds() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert tuple(seen["threshold"]) == GC_THRESHOLDS
    assert seen["frozen"] > 0
    assert seen["enabled"] is True


def test_create_app_leaves_the_host_process_collector_alone(
    tmp_path: Path, keyring: Keyring
) -> None:
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    config = ServiceConfig(
        policy=example_path("agent-tools.yaml"),
        journal=str(tmp_path / "j.db"),
        insecure_no_auth=True,
    )
    create_app(config, keyring=keyring)
    assert gc.get_threshold() == threshold
    assert gc.get_freeze_count() == frozen


_WRAP_PROBE = """
import atexit, gc, json, sys
from refusalkit.cli import main
atexit.register(lambda: print(json.dumps({"threshold": gc.get_threshold()}), file=sys.stderr))
sys.argv = ["refusalkit", "mcp", *sys.argv[1:]]
main()
"""


def test_the_mcp_proxies_tune_their_collector(tmp_path: Path) -> None:
    """``mcp wrap`` serves only the proxy in its process: a full collection there lasted long
    enough (170 ms seen under load) to pass a decision's deadline and refuse a call
    ``unavailable``; its collector is tuned as the service's is. The client and the server here
    both end at once."""
    done = subprocess.run(
        [sys.executable, "-c", _WRAP_PROBE, "wrap", "--policy",
         str(example_path("mcp-filesystem.yaml")), "--journal", str(tmp_path / "j.db"),
         "--", sys.executable, "-c", "pass"],
        capture_output=True, text=True, input="", check=False, timeout=120,
    )  # fmt: skip
    seen = json.loads(done.stderr.strip().splitlines()[-1])
    assert tuple(seen["threshold"]) == GC_THRESHOLDS, done.stderr
