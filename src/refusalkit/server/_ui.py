"""The dashboard at ``/ui``: server-rendered HTML (Jinja2), inline CSS and SVG, no script.

A login form takes a key with the ``read`` scope and sets a signed session cookie (``HttpOnly``,
``SameSite=Strict``; ``Secure`` over https, or always with ``secure_cookies`` behind a TLS proxy).
Posts to ``/ui/login`` and ``/ui/logout`` from another site are refused (403): a browser names
the page that posts in ``Origin`` (RFC 6454 §7) or ``Sec-Fetch-Site``, and either must be this
host. The page's Content-Security-Policy allows nothing but its own inline style (by hash) and
form posts to itself, so it fetches nothing at run time.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import time
from importlib import resources
from typing import Any

import jinja2
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from refusalkit._internal.keys import ApiKey, Scope
from refusalkit._version import __version__
from refusalkit.server._dashboard import CODE_COLOURS, DashboardData, gather
from refusalkit.server._errors import ApiError
from refusalkit.server._service import Service
from refusalkit.server._session import COOKIE_NAME
from refusalkit.server._verify_job import verify_in_child

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)
_HERE = resources.files("refusalkit.server")
_CSS = (_HERE / "static" / "dashboard.css").read_text(encoding="utf-8")
_CSS_HASH = base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()
_CSP = (
    f"default-src 'none'; style-src 'sha256-{_CSS_HASH}'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(_HERE / "templates")),
    autoescape=jinja2.select_autoescape(("html",)),
    trim_blocks=True,
    lstrip_blocks=True,
)
_VERIFY_EVERY_S = 30.0
_DATA_TTL_S = 2.0


def _page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = _ENV.get_template(name).render(
        css=_CSS, version=__version__, colours=CODE_COLOURS, **context
    )
    return HTMLResponse(
        html,
        status_code=status,
        headers={
            "Content-Security-Policy": _CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
            "Cache-Control": "no-store",
        },
    )


def _viewer(request: Request, service: Service) -> str | None:
    """The name of the logged-in key with ``read`` scope, or None."""
    store = service.auth.store
    if store is None:
        return "insecure-no-auth"
    claims = service.sessions.read(request.cookies.get(COOKIE_NAME))
    if claims is None:
        return None
    key = _session_key(store.list_keys(), claims.name, claims.key_hash)
    if key is None or not key.allows(Scope.READ):
        return None
    return key.name


def _session_key(keys: tuple[ApiKey, ...], name: str, key_hash: str) -> ApiKey | None:
    """The record the session was issued for: its name *and* hash (a name revoked and added
    again names two records; the first is the revoked one)."""
    return next((k for k in keys if k.name == name and k.hash.endswith(key_hash)), None)


def _same_site(request: Request) -> bool:
    """Whether a post comes from this site's own pages (or from no browser page at all).

    A browser's ``Origin`` is compared with ``Host``. An ``Origin`` of ``null`` (a sandboxed or
    privacy-restricted page; Fetch §3.2.5) proves nothing either way, so only the browser's
    ``Sec-Fetch-Site: same-origin`` vouches for such a post; a client that sends neither header
    is no browser page, so no other site can have made it post.
    """
    origin = request.headers.get("origin")
    fetch_site = request.headers.get("sec-fetch-site")
    if origin is not None and origin != "null":
        host = request.headers.get("host", "")
        return origin.split("://", 1)[-1] == host
    if origin == "null":
        return fetch_site == "same-origin"
    return fetch_site in (None, "same-origin", "none")


def _cross_site() -> Response:
    return _page(
        "login.html",
        status=403,
        error="This form was posted from another site; open the dashboard and log in here.",
    )


@router.get("/login")
async def login_form() -> Response:
    """The login form."""
    return _page("login.html", error=None)


@router.post("/login")
async def login(request: Request, key: str = Form("")) -> Response:
    """Check the key; on success set the session cookie and go to the dashboard."""
    service: Service = request.app.state.service
    if not _same_site(request):
        return _cross_site()
    try:
        record = service.auth.check(key.strip(), Scope.READ)
    except ApiError as exc:
        return _page("login.html", status=exc.status, error=exc.message)
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(
        COOKIE_NAME,
        service.sessions.issue(record.name, record.hash),
        max_age=service.sessions.lifetime_s,
        httponly=True,
        samesite="strict",
        secure=service.config.secure_cookies or request.url.scheme == "https",
        path="/ui",
    )
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    """Forget the session."""
    if not _same_site(request):
        return _cross_site()
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(COOKIE_NAME, path="/ui")
    return response


async def _verification(service: Service, size: int) -> None:
    """Verify the whole journal when it grew (at most every 30 s); wait briefly for the answer."""
    status = service.verify
    stale = status.size != size and time.time() - status.at > _VERIFY_EVERY_S
    if (status.ok is None or stale) and not status.running:
        status.running = True

        async def run() -> None:
            try:
                status.ok, status.message = await _verify(service, size)
            except Exception as exc:  # noqa: BLE001 (shown on the page)
                status.ok, status.message = False, getattr(exc, "message", str(exc))
            finally:
                status.size, status.at, status.running = size, time.time(), False

        service.verify_task = asyncio.get_running_loop().create_task(run())
    task = service.verify_task
    if task is not None and not task.done():
        await asyncio.wait({task}, timeout=3.0)


async def _verify(service: Service, size: int) -> tuple[bool, str]:
    """Verify in a child process (never blocks decisions), or here when the keyring has no file."""
    if service.keyring_from_config:
        return await verify_in_child(service.config.journal, service.config.keyring)
    report = await service.journal.read(lambda j: j.verify())
    return True, f"{_report_size(report, size)} entries verified"


def _report_size(report: Any, fallback: int) -> int:
    for name in ("size", "tree_size", "entries"):
        value = getattr(report, name, None)
        if isinstance(value, int):
            return value
    return fallback


async def _dashboard_data(service: Service) -> DashboardData:
    """The journal's figures, read at most every few seconds however often the page is loaded
    (on SQLite the read shares the process's one journal connection with the appends)."""
    cached = service.dashboard_cache
    if cached is not None and time.monotonic() - cached[0] < _DATA_TTL_S:
        return cached[1]
    data = await service.journal.read(gather)
    service.dashboard_cache = (time.monotonic(), data)
    return data


@router.get("")
async def dashboard(request: Request) -> Response:
    """The dashboard page."""
    service: Service = request.app.state.service
    viewer = _viewer(request, service)
    if viewer is None:
        return RedirectResponse("/ui/login", status_code=303)
    data = await _dashboard_data(service)
    await _verification(service, data.size)
    pack = service.pack.point.pack
    return _page(
        "dashboard.html",
        data=data,
        viewer=viewer,
        pack=pack,
        verify=service.verify,
        insecure=service.auth.store is None,
    )
