"""Dashboard and query hardening: cross-site login posts, Secure cookies behind a TLS proxy,
a key name revoked and added again, and time windows that cannot be computed (422, not 5xx)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from svc_helpers import Deployment, make_deployment

from refusalkit.server import KeyStore, Scope, ServiceConfig, create_app


def client_for(deployment: Deployment, **changes: object) -> TestClient:
    config = ServiceConfig(
        policy=deployment.pack,
        journal=deployment.journal,
        keys_file=deployment.keys.path,
        keyring=deployment.keyring_path,
        **changes,  # type: ignore[arg-type]
    )
    # The keyring passed in-process: the dashboard then verifies the journal in-process too, with
    # no child process outliving the test client's event loop.
    app = create_app(config, keyring=deployment.keyring)
    return TestClient(app, follow_redirects=False)


@pytest.fixture
def dep(tmp_path: Path) -> Deployment:
    return make_deployment(tmp_path / "dep")


@pytest.fixture
def client(dep: Deployment) -> Iterator[TestClient]:
    with client_for(dep) as c:
        yield c


def login(client: TestClient, key: str, **headers: str) -> object:
    return client.post("/ui/login", data={"key": key}, headers=headers)


@pytest.mark.parametrize(
    "headers",
    [{"Origin": "https://evil.example"}, {"Origin": "null"},
     {"Origin": "http://testserver.evil.example"}, {"Sec-Fetch-Site": "cross-site"},
     {"Sec-Fetch-Site": "same-site"}, {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
     {"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"}],
)  # fmt: skip
def test_a_cross_site_login_post_is_refused(
    client: TestClient, dep: Deployment, headers: dict[str, str]
) -> None:
    response = client.post("/ui/login", data={"key": dep.keys.read}, headers=headers)
    assert response.status_code == 403
    assert "set-cookie" not in response.headers
    assert "another site" in response.text


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://testserver"},
        {"Sec-Fetch-Site": "same-origin"},
        {},
        # What Chromium sends for a same-origin form post under a no-referrer policy.
        {"Origin": "null", "Sec-Fetch-Site": "same-origin"},
    ],
)
def test_a_same_site_login_post_is_accepted(
    client: TestClient, dep: Deployment, headers: dict[str, str]
) -> None:
    response = client.post("/ui/login", data={"key": dep.keys.read}, headers=headers)
    assert response.status_code == 303
    assert "refusalkit_session=" in response.headers["set-cookie"]


def test_a_cross_site_logout_is_refused(client: TestClient) -> None:
    assert client.post("/ui/logout", headers={"Origin": "https://evil.example"}).status_code == 403


def test_cookies_are_secure_behind_a_tls_proxy_only_when_configured(dep: Deployment) -> None:
    with client_for(dep) as plain:
        cookie = plain.post("/ui/login", data={"key": dep.keys.read}).headers["set-cookie"]
        assert "secure" not in cookie.lower()
    with client_for(dep, secure_cookies=True) as proxied:
        cookie = proxied.post("/ui/login", data={"key": dep.keys.read}).headers["set-cookie"]
        assert "; secure" in cookie.lower()
        assert "httponly" in cookie.lower()


def test_a_key_name_revoked_and_added_again_can_use_the_dashboard(dep: Deployment) -> None:
    store = KeyStore(dep.keys.path)
    store.revoke("read")
    _, secret = store.add("read", {Scope.READ})
    with client_for(dep) as client:
        assert client.post("/ui/login", data={"key": dep.keys.read}).status_code == 401
        response = client.post("/ui/login", data={"key": secret})
        assert response.status_code == 303
        page = client.get("/ui")
        assert page.status_code == 200, page.headers.get("location")
        assert "read" in page.text


@pytest.mark.parametrize("query", ["last=999999d", "last=999999h&until=x", "since=x", "until=%00"])
@pytest.mark.parametrize("path", ["/v1/stats", "/v1/decisions"])
def test_malformed_time_windows_are_422(
    client: TestClient, dep: Deployment, path: str, query: str
) -> None:
    response = client.get(f"{path}?{query}", headers=dep.keys.header("read"))
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid-request"
