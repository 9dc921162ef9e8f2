"""The service serves the journal as C2SP tlog-tiles under /v1/journal/tlog/: the same bytes as
`journal tiles` writes, the read scope, the spec's caching headers, gzip entry bundles, and
nothing beyond the signed tree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from svc_helpers import Deployment, make_deployment

from refusalkit.journal import export_tiles, open_journal, signer_state_dir
from refusalkit.server import ServiceConfig, create_app


@pytest.fixture
def dep(tmp_path: Path) -> Deployment:
    deployment = make_deployment(tmp_path / "dep")
    state = signer_state_dir(deployment.keyring_path)
    with open_journal(deployment.journal, deployment.keyring, signer_state=state) as journal:
        journal.append([{"schema": "t/v1", "n": i} for i in range(257)])
        journal.checkpoint()
        journal.append([{"schema": "t/v1", "n": i} for i in range(257, 300)])
        journal.checkpoint()
        export_tiles(journal, tmp_path / "static")
    return deployment


@pytest.fixture
def client(dep: Deployment) -> Iterator[TestClient]:
    config = ServiceConfig(
        policy=dep.pack,
        journal=dep.journal,
        keys_file=dep.keys.path,
        keyring=dep.keyring_path,
        checkpoint_every=3600,
    )
    with TestClient(create_app(config, keyring=dep.keyring)) as c:
        yield c


def test_the_service_serves_what_journal_tiles_writes(
    client: TestClient, dep: Deployment, tmp_path: Path
) -> None:
    read = dep.keys.header("read")
    static = tmp_path / "static"
    files = [p for p in static.rglob("*") if p.is_file() and p.name != "checkpoint"]
    assert len(files) > 4
    for path in files:
        relative = path.relative_to(static).as_posix()
        answer = client.get(f"/v1/journal/tlog/{relative}", headers=read)
        assert answer.status_code == 200, (relative, answer.text)
        assert answer.content == path.read_bytes()  # gzip is undone by the client
        assert answer.headers["cache-control"] == "private, max-age=31536000, immutable"
        gzipped = answer.headers.get("content-encoding") == "gzip"
        assert gzipped == relative.startswith("tile/entries/")
    head = client.get("/v1/journal/tlog/checkpoint", headers=read)
    assert head.status_code == 200
    assert head.text.split("\n")[1] == "300"
    assert head.headers["content-type"].startswith("text/plain")
    assert head.headers["cache-control"] == "private, max-age=5"


@pytest.mark.parametrize(
    "path",
    ["tile/0/001.p/45", "tile/entries/001.p/45", "tile/1/000",  # beyond the signed tree
     "tile/0/1", "tile/0/000.p/256", "tile/64/000", "tile/0/x000", "tile/0/000.p/0"],
)  # fmt: skip
def test_nothing_beyond_the_signed_tree_and_no_odd_paths(
    client: TestClient, dep: Deployment, path: str
) -> None:
    answer = client.get(f"/v1/journal/tlog/{path}", headers=dep.keys.header("read"))
    assert answer.status_code == 404, answer.text


def test_tiles_need_the_read_scope(client: TestClient) -> None:
    assert client.get("/v1/journal/tlog/tile/0/000").status_code == 401
    assert client.get("/v1/journal/tlog/checkpoint").status_code == 401
