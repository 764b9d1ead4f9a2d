"""The console's web face: a Starlette application over `Console` (docs/serve.md).

Every route is a GET: nothing here writes (repairs stay with `auditor rebuild ... --apply`).
A triage runs in a worker thread under a deadline: a slow or down backend gives a clear page
(504, or 503 naming the backend) within `timeout` seconds, never a hung request. Anything but
a loopback client needs the bearer token or the trusted proxy's header (`Guard`).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import threading
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from auditor.errors import AuditorError, BackendUnavailable, ConfigError
from auditor.serve import pages
from auditor.serve.console import Console
from auditor.serve.journal_dir import JournalFolder
from auditor.serve.reports_dir import ReportsFolder

log = logging.getLogger("auditor.serve")

Problem = tuple[str, str, str | None]  # (title, message, hint) of a request that got no triage
MAX_ASKED = 4096  # longer than any urn: refused before anything is read
# a run's page reads its journal whole, as a stream (about 5 s for 200,000 documents): no backend
# is asked, so the triage's deadline is not the one to keep
JOURNAL_TIMEOUT = 120.0


@dataclass(frozen=True)
class Guard:
    """Who may ask: a loopback client always; anyone else with `Authorization: Bearer <token>`
    or, behind an authenticating proxy, the header it sets (e.g. X-Forwarded-User)."""

    token: str | None = None
    proxy_header: str | None = None

    def allows(self, scope: Scope) -> bool:
        client = scope.get("client")
        if client and _loopback(client[0]):
            return True
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.token:
            given = headers.get("authorization", "")
            if given[:7].lower() == "bearer " and hmac.compare_digest(given[7:].strip(), self.token):
                return True
        if self.proxy_header and headers.get(self.proxy_header.lower(), "").strip():
            return True
        return False


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


OPEN_PATHS = ("/healthz", "/readyz")


class Guarded:
    """ASGI middleware: the guard, and the headers every answer carries."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app, self.guard = app, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        allowed = self.guard.allows(scope)
        scope.setdefault("state", {})["allowed"] = allowed
        if not allowed and scope["path"] not in OPEN_PATHS:
            answer = JSONResponse(
                {"error": "authentication required: a bearer token, or the trusted proxy's header"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="auditor"'},
            )
            await answer(scope, receive, _headers(send, scope))
            return
        await self.app(scope, receive, _headers(send, scope))


def _headers(send: Send, scope: Scope) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            have = {k.lower() for k, _ in headers}
            extra = {
                b"x-content-type-options": b"nosniff",
                b"referrer-policy": b"no-referrer",
                b"cache-control": b"no-store",
                b"x-frame-options": b"DENY",
            }
            if b"content-security-policy" not in have:
                extra[b"content-security-policy"] = pages.csp().encode()
            headers += [(k, v) for k, v in extra.items() if k not in have]
            message = {**message, "headers": headers}
        await send(message)

    return sending


@dataclass
class Options:
    timeout: float = 10.0  # seconds a request may take, whatever the backends do
    reports: Path | None = None
    guard: Guard = Guard()
    workers: int = 12  # worker threads: the sessions' walks, /readyz's probes, the reports' reads
    journal: Path | None = None  # the repairs' journal folder, listed at /journal (None: not served)
    journal_named: bool = False  # given as --journal-dir: the undo command the pages offer names it


def build(console: Console, options: Options, watch: Any = None) -> Starlette:
    """The application; `watch` (an auditor.serve.watching.Watching) adds /watch and /metrics."""
    limiter = anyio.CapacityLimiter(options.workers)
    folder = ReportsFolder(options.reports) if options.reports else None
    journals = JournalFolder(options.journal) if options.journal else None
    named = options.journal if options.journal_named else None
    about = console.describe()
    ready_cache: dict[str, Any] = {}

    async def in_thread(fn: Callable[[], Any], timeout: float | None = None) -> Any:
        with anyio.fail_after(timeout or options.timeout):
            return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True, limiter=limiter)

    def html(body: list[str], title: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(pages.layout(title, body, watch=watch is not None), status_code=status)

    async def home(request: Request) -> Response:
        return html(pages.form("", about, console.paste_hint), "auditor console")

    async def run_triage(request: Request) -> tuple[int, dict[str, Any] | None, Problem | None]:
        """(HTTP status, the triage as JSON, or (title, message, hint) of what went wrong)."""
        from auditor.reports.triage_report import to_dict

        asked = request.query_params.get("q", request.query_params.get("urn", ""))
        types = tuple(request.query_params.getlist("entity_type"))
        if not asked.strip():
            return 400, None, ("nothing asked", "paste a urn, an FQN or an id", None)
        if len(asked) > MAX_ASKED:
            return 400, None, ("too long", f"{len(asked)} characters: no urn is that long", None)
        began = time.monotonic()
        try:
            result = await in_thread(lambda: console.triage(asked, types))
        except TimeoutError:
            log.warning("triage timed out after %.1f s", options.timeout)
            return (
                504,
                None,
                (
                    "no answer in time",
                    f"the backends did not answer within {options.timeout:g} s",
                    "see /readyz for which backend is down or slow; the page answers again when it is back",
                ),
            )
        except ConfigError as exc:
            return 400, None, ("cannot triage that", str(exc), exc.hint)
        except BackendUnavailable as exc:
            return 503, None, ("a backend is down", str(exc), exc.hint or "see /readyz")
        except AuditorError as exc:
            return 500, None, ("the triage failed", str(exc), exc.hint)
        log.debug("triage in %.3f s", time.monotonic() - began)
        return 200, to_dict(result, console.group), None

    async def triage_page(request: Request) -> Response:
        asked = request.query_params.get("q", request.query_params.get("urn", ""))
        status, out, problem = await run_triage(request)
        if out is not None:
            return html(pages.triage(out, about, console.paste_hint), f"triage {asked[:80]}")
        title, message, hint = problem or ("", "", None)
        return html(pages.error(title, message, hint, asked, about, console.paste_hint), title, status)

    async def triage_api(request: Request) -> Response:
        status, out, problem = await run_triage(request)
        if out is not None:
            return JSONResponse(out)
        title, message, hint = problem or ("", "", None)
        return JSONResponse({"error": title, "message": message, "hint": hint}, status_code=status)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "up"})

    async def readyz(request: Request) -> Response:
        now = time.monotonic()
        if ready_cache.get("at", -10.0) > now - 1.0:
            results = ready_cache["results"]
        else:
            results = {}

            async def probe(name: str, fn: Callable[[], str]) -> None:
                try:
                    detail = await in_thread(fn, min(options.timeout, 5.0))
                    results[name] = {"up": True, "detail": detail}
                except TimeoutError:
                    results[name] = {"up": False, "detail": "no answer within 5 s"}
                except Exception as exc:  # any failure is the answer: this backend is down
                    results[name] = {"up": False, "detail": f"{type(exc).__name__}: {exc}"[:400]}

            async with anyio.create_task_group() as tg:
                for name, fn in console.checks().items():
                    tg.start_soon(probe, name, fn)
            ready_cache.update(at=now, results=results)
        # the console answers without Kafka (weaker verdicts): not ready only without the others
        ready = all(v["up"] for k, v in results.items() if k != "kafka")
        down = sorted(k for k, v in results.items() if not v["up"])
        shown = results if request.scope["state"].get("allowed") else {
            k: {"up": v["up"]} for k, v in results.items()
        }  # fmt: skip
        body = {"ready": ready, "down": down, "backends": dict(sorted(shown.items()))}
        return JSONResponse(body, status_code=200 if ready else 503)

    async def reports_list(request: Request) -> Response:
        if folder is None:
            return html(
                pages.error("no reports folder", "start the console with --reports DIR", None, None, about,
                            console.paste_hint), "scan reports", 404,
            )  # fmt: skip
        entries = await in_thread(folder.entries)
        from auditor.serve.report_pages import listing

        return html(listing(entries), "scan reports")

    async def report_one(request: Request) -> Response:
        name = request.path_params["name"]
        entry = await in_thread(lambda: folder.get(name)) if folder is not None else None
        if entry is None or entry.report is None:
            why = entry.error if entry is not None else "no such report in the folder"
            return html(pages.error("no such report", why or "", None, None, about, console.paste_hint),
                        "scan report", 404)  # fmt: skip
        from auditor.reports.html import render

        page = await in_thread(lambda: render(entry.report))
        # the report carries its own policy (a meta tag allowing its script by hash)
        return HTMLResponse(
            page, headers={"content-security-policy": "frame-ancestors 'none'; base-uri 'none'"}
        )

    async def reports_api(request: Request) -> Response:
        if folder is None:
            return JSONResponse({"error": "no reports folder (--reports DIR)"}, status_code=404)
        entries = await in_thread(folder.entries)
        return JSONResponse(
            [
                {
                    "name": e.name,
                    "started_at": e.started_at.isoformat(),
                    "exit_code": e.report.exit_code if e.report is not None else None,
                    "counts": dict(sorted(e.counts.items())),
                    "error": e.error,
                }
                for e in entries
            ]
        )

    async def journal_list(request: Request) -> Response:
        from auditor.serve.journal_pages import listing

        if journals is None:
            return html(pages.error("no journal folder", "start the console with --journal-dir DIR", None,
                                    None, about, console.paste_hint), "repair journal", 404)  # fmt: skip
        runs = await in_thread(journals.runs, JOURNAL_TIMEOUT)
        return html(listing(runs, journals.folder), "repair journal")

    def page_of(request: Request) -> tuple[int, int]:
        """(page, documents a page) asked for, within bounds."""
        from auditor.serve.journal_dir import MAX_PAGE, PAGE

        try:
            page = max(0, int(request.query_params.get("page", "0")))
            size = min(MAX_PAGE, max(1, int(request.query_params.get("size", str(PAGE)))))
        except ValueError:
            return 0, PAGE
        return page, size

    async def run_of(request: Request) -> tuple[Any, int, int]:
        """The journaled run the path names, read a page at a time (None: no such run)."""
        run, (page, size) = request.path_params["run"], page_of(request)
        if journals is None:
            return None, page, size
        return await in_thread(lambda: journals.run(run, page, size), JOURNAL_TIMEOUT), page, size

    async def journal_run(request: Request) -> Response:
        from auditor.serve.journal_pages import run_page

        run = request.path_params["run"]
        found, page, size = await run_of(request)
        if found is None:
            why = "no journaled run of that id in the journal folder"
            return html(pages.error("no such run", why, "see /journal", None, about, console.paste_hint),
                        "repair journal", 404)  # fmt: skip
        return html(run_page(found, page, size, named), f"run {run[:80]}")

    async def journal_api(request: Request) -> Response:
        if journals is None:
            return JSONResponse({"error": "no journal folder (--journal-dir DIR)"}, status_code=404)
        runs = await in_thread(journals.runs, JOURNAL_TIMEOUT)
        return JSONResponse([s.listed() for s in runs])

    async def journal_run_api(request: Request) -> Response:
        from dataclasses import asdict

        from auditor.serve.journal_pages import undo_commands

        found, page, size = await run_of(request)
        if found is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        changes = [{**asdict(c), "kind": c.kind} for c in found.changes]
        return JSONResponse({**found.listed(), "page": page, "changes": changes,
                             "undo": undo_commands(found.run, named)})  # fmt: skip

    routes = [
        Route("/", home),
        Route("/triage", triage_page),
        Route("/api/triage", triage_api),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/reports", reports_list),
        Route("/reports/{name}", report_one),
        Route("/api/reports", reports_api),
        Route("/journal", journal_list),
        Route("/journal/{run}", journal_run),
        Route("/api/journal", journal_api),
        Route("/api/journal/{run}", journal_run_api),
    ]
    if watch is not None:
        routes += watch.routes(html)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        threading.Thread(target=console.warm, name="warm-up", daemon=True).start()
        if watch is not None:
            watch.start()
        try:
            yield
        finally:
            if watch is not None:
                watch.stop()
            console.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    return Guarded(app, options.guard)  # type: ignore[return-value]


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
