"""The service never signs on a read; it signs on its schedule, on the admin call, and has each
new checkpoint cosigned by the witnesses it was started with. Real servers on 127.0.0.1."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from svc_helpers import Deployment, ServerProcess, denied_request, wait_for

from refusalkit.journal import NoteVerifier, open_journal, parse_note
from refusalkit.witness import CosignerKey, WitnessDir, verify_cosignatures
from support.witnesses import WitnessProcess

Start = Callable[[ServerProcess], ServerProcess]


def _decide(server: ServerProcess, deployment: Deployment, n: int) -> None:
    answer = httpx.post(
        f"{server.base_url}/v1/decide/batch",
        json={"requests": [denied_request(i) for i in range(n)]},
        headers=deployment.keys.header("decide"),
    )
    assert answer.status_code == 200


def _stored_checkpoints(deployment: Deployment) -> list[str]:
    with open_journal(deployment.journal, deployment.keyring) as journal:
        return journal.checkpoints()


def test_reads_never_sign_and_the_admin_call_does(
    deployment: Deployment, start_server: Start
) -> None:
    server = start_server(deployment.server("--checkpoint-every", "3600"))
    read, admin = deployment.keys.header("read"), deployment.keys.header("admin")
    url = server.base_url
    first = httpx.get(f"{url}/v1/journal/checkpoint", headers=read).json()
    assert first["tree_size"] == 0  # signed once at start-up
    _decide(server, deployment, 3)
    for _ in range(3):
        again = httpx.get(f"{url}/v1/journal/checkpoint", headers=read)
        assert again.json()["checkpoint"] == first["checkpoint"]
    receipt = httpx.get(f"{url}/v1/journal/receipt", params={"index": 0}, headers=read)
    assert receipt.status_code == 400
    assert "not yet in a signed checkpoint" in receipt.json()["error"]["message"]
    assert len(_stored_checkpoints(deployment)) == 1  # no read signed anything
    assert httpx.post(f"{url}/v1/admin/journal/checkpoint", headers=read).status_code == 403
    signed = httpx.post(f"{url}/v1/admin/journal/checkpoint", headers=admin)
    assert signed.status_code == 200
    assert signed.json()["tree_size"] == 3
    assert (
        httpx.get(f"{url}/v1/journal/receipt", params={"index": 2}, headers=read).status_code == 200
    )
    assert len(_stored_checkpoints(deployment)) == 2


def test_the_service_signs_on_its_schedule(deployment: Deployment, start_server: Start) -> None:
    server = start_server(deployment.server("--checkpoint-every", "0.2"))
    read = deployment.keys.header("read")
    _decide(server, deployment, 4)

    def signed_four() -> bool:
        answer = httpx.get(f"{server.base_url}/v1/journal/checkpoint", headers=read).json()
        return bool(answer["tree_size"] == 4)

    assert wait_for(signed_four)
    time.sleep(0.6)  # several more ticks: the tree did not grow, so nothing more is signed
    assert [parse_note(n)[0].split("\n")[1] for n in _stored_checkpoints(deployment)] == ["0", "4"]


def test_the_service_has_its_checkpoints_witnessed(
    deployment: Deployment, start_server: Start, tmp_path: Path
) -> None:
    directory = WitnessDir.init(tmp_path / "w1", "witness.example/w1")
    with open_journal(deployment.journal, deployment.keyring, origin="example.com/svc") as journal:
        vkey = NoteVerifier.for_key(journal.origin, deployment.keyring.public_key_bytes()).vkey
    directory.add_log("example.com/svc", vkey)
    witness = WitnessProcess(directory.root).start()
    try:
        server = start_server(
            deployment.server("--checkpoint-every", "0.2", "--witness", witness.url)
        )
        _decide(server, deployment, 5)
        trusted = [CosignerKey.parse(witness.vkey)]

        def cosigned_five() -> bool:
            note = httpx.get(
                f"{server.base_url}/v1/journal/checkpoint", headers=deployment.keys.header("read")
            ).json()["checkpoint"]
            return "\n5\n" in note and len(verify_cosignatures(note, trusted)) == 1

        assert wait_for(cosigned_five)
        assert directory.latest("example.com/svc") is not None
    finally:
        witness.kill()


def test_the_service_refuses_to_sign_a_rolled_back_store(
    deployment: Deployment, start_server: Start, tmp_path: Path
) -> None:
    """A store holder restores an old copy between runs: the admin call answers 409 and the
    schedule signs nothing, because the signer state beside the keyring remembers more."""
    store, backup = Path(deployment.journal), tmp_path / "backup.db"
    admin = deployment.keys.header("admin")
    for step in ("backup", "grow"):
        server = start_server(deployment.server("--checkpoint-every", "3600"))
        _decide(server, deployment, 2)
        signed = httpx.post(f"{server.base_url}/v1/admin/journal/checkpoint", headers=admin)
        assert signed.status_code == 200
        server.stop()
        if step == "backup":
            backup.write_bytes(store.read_bytes())
    store.write_bytes(backup.read_bytes())
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    server = start_server(deployment.server("--checkpoint-every", "3600"))
    _decide(server, deployment, 3)
    refused = httpx.post(f"{server.base_url}/v1/admin/journal/checkpoint", headers=admin)
    assert refused.status_code == 409
    assert "does not extend the last checkpoint signed" in refused.json()["error"]["message"]
    server.stop()
    sizes = [parse_note(n)[0].split("\n")[1] for n in _stored_checkpoints(deployment)]
    assert sizes == ["0", "2"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_service_after_a_final_checkpoint(
    deployment: Deployment, start_server: Start, sig: signal.Signals
) -> None:
    server = start_server(deployment.server("--checkpoint-every", "3600"))
    _decide(server, deployment, 4)  # signed at start-up at size 0; the schedule never comes back
    server.signal(sig)
    assert server.proc is not None
    server.proc.wait(timeout=30)
    with open_journal(deployment.journal, deployment.keyring) as journal:
        size, latest = journal.size(), journal.latest_checkpoint()
    assert size == 4
    assert latest is not None
    assert parse_note(latest)[0].splitlines()[1] == "4", server.log()
