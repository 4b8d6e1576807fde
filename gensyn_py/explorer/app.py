"""The explorer's web app: Starlette routes over the index, Jinja templates, live updates by SSE.

Pages render whole on a normal request and as their `<main>` only with `?fragment=1`: the
page's script listens on `/live` (server-sent events, one message per index change) and
swaps the fragment in, so a page follows the chain without a reload. Assets are the app's
own files; nothing is fetched from elsewhere.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from eth_utils import is_address, to_checksum_address
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.explorer import charts, games, pages, queries
from gensyn_py.storage.base import ContentStore

log = logging.getLogger(__name__)
HERE = Path(__file__).parent


@dataclass
class ExplorerContext:
    """What the routes read: the index (a read connection), the chain, the store, the change counter."""

    db: sqlite3.Connection
    protocol: ProtocolContracts
    store: ContentStore | None
    version: Callable[[], int]
    wait_change: Callable[[int, float], int]  # blocks until the version passes the given one, or the timeout
    status: Callable[[], dict[str, Any]]  # the indexer's last poll: head, error
    stopping: Callable[[], bool] = lambda: False  # the server is shutting down: live streams end, not hang


def make_env() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
    env.filters.update(tokens=queries.tokens, short=queries.short, when=queries.when,
                       pretty=lambda v: json.dumps(v, indent=2, sort_keys=True))
    env.globals.update(describe=pages.describe, device_name=pages.device_name, role_names=pages.role_names,
                       game_of=pages.game_of)
    return env


def create_app(ctx: ExplorerContext) -> Starlette:
    env = make_env()

    def render(request: Request, template: str, title: str, status_code: int = 200, **data: Any) -> HTMLResponse:
        fragment = request.query_params.get("fragment") == "1"
        version = request.scope.get(VERSION_KEY, ctx.version())
        html = env.get_template(template).render(title=title, fragment=fragment, version=version,
                                                 status=ctx.status(), **data)
        return HTMLResponse(html, status_code=status_code)

    def not_found(request: Request, what: str) -> HTMLResponse:
        return render(request, "not_found.html", "Not found", 404, what=what)

    def network(request: Request) -> Response:
        summary = queries.network_summary(ctx.db)
        nodes = pages.node_rows(ctx.protocol, summary)
        prices = pages.price_rows(ctx.protocol)
        chart = charts.bar_chart(summary.throughput, "block", "units finalized over time")
        return render(request, "network.html", "Network", summary=summary, nodes=nodes, prices=prices,
                      throughput=chart)

    def job(request: Request) -> Response:
        job_id = int(request.path_params["job_id"])
        view = queries.job_view(ctx.db, job_id)
        if view is None:
            return not_found(request, f"job {job_id}")
        chart = charts.line_chart(pages.loss_series(view), "step", "loss", f"training loss of job {job_id}")
        return render(request, "job.html", f"Job {job_id}", job=view, loss_chart=chart)

    def unit(request: Request) -> Response:
        unit_id = int(request.path_params["unit_id"])
        job_id = queries.unit_job(ctx.db, unit_id)
        if job_id is None:
            return not_found(request, f"unit {unit_id}")
        view = queries.job_view(ctx.db, job_id)
        assert view is not None
        one = next(u for u in view.units if u.unit_id == unit_id)
        chart = charts.line_chart(pages.loss_series(view, [one]), "step", "loss", f"training loss of unit {unit_id}")
        return render(request, "unit.html", f"Unit {unit_id}", job=view, unit=one, loss_chart=chart)

    def node(request: Request) -> Response:
        raw = str(request.path_params["address"])
        if not is_address(raw):
            return not_found(request, f"address {raw!r} (not a 20-byte hex address)")
        address = to_checksum_address(raw)
        live, live_error = pages.live_status(ctx.protocol, address)
        if not queries.known_node(ctx.db, address) and (live is None or not live.roles):
            return not_found(request, f"address {address} (no protocol event names it)")
        history = queries.node_history(ctx.db, address)
        return render(request, "node.html", f"Node {queries.short(address)}", address=address, live=live,
                      live_error=live_error, history=history)

    def resolver_page(request: Request, view_of: Callable[[sqlite3.Connection, int], Any], what: str,
                      template: str, name: str) -> Response:
        """Dispute `dispute_id` of one resolver (the committee's, the game's): ids are per resolver."""
        dispute_id = int(request.path_params["dispute_id"])
        view: Any = view_of(ctx.db, dispute_id)
        if view is None:
            return not_found(request, f"{what.lower()} {dispute_id}")
        data: dict[str, Any] = {name: view}
        return render(request, template, f"{what} {dispute_id}", **data)

    def dispute(request: Request) -> Response:
        return resolver_page(request, queries.dispute_view, "Dispute", "dispute.html", "dispute")

    def game(request: Request) -> Response:
        return resolver_page(request, games.game_view, "Game dispute", "game.html", "game")

    def step_game(request: Request) -> Response:
        """A step game's page is the page of the dispute that opened it."""
        game_id = int(request.path_params["game_id"])
        dispute_id = games.step_game_dispute(ctx.db, game_id)
        if dispute_id is None:
            return not_found(request, f"step game {game_id} (no dispute game opened it)")
        return RedirectResponse(f"/game/{dispute_id}", status_code=303)

    def model(request: Request) -> Response:
        job_id = int(request.path_params["job_id"])
        data, error = pages.final_model(ctx.protocol, ctx.store, job_id)
        if data is None:
            return render(request, "not_found.html", "No model", 404, what=f"a final model of job {job_id}",
                          reason=error)
        return Response(data, media_type="application/octet-stream",
                        headers={"Content-Disposition": f'attachment; filename="job-{job_id}.safetensors"'})

    async def live(request: Request) -> StreamingResponse:
        async def stream() -> AsyncIterator[str]:
            seen = ctx.version()
            yield f"retry: 2000\ndata: {seen}\n\n"
            while not ctx.stopping() and not await request.is_disconnected():
                now = await anyio.to_thread.run_sync(ctx.wait_change, seen, 5.0)
                if now != seen:
                    seen = now
                    yield f"data: {now}\n\n"
                else:
                    yield ": still here\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    def health(request: Request) -> Response:
        return JSONResponse({"version": ctx.version(), **ctx.status()})

    async def on_404(request: Request, exc: Exception) -> Response:
        code = exc.status_code if isinstance(exc, HTTPException) else 500
        what = request.url.path if code == 404 else "this page"
        return render(request, "not_found.html", "Not found", code, what=what)

    routes = [
        Route("/", network), Route("/job/{job_id:int}", job), Route("/job/{job_id:int}/model", model),
        Route("/unit/{unit_id:int}", unit), Route("/node/{address}", node),
        Route("/dispute/{dispute_id:int}", dispute), Route("/game/{dispute_id:int}", game),
        Route("/step/{game_id:int}", step_game), Route("/live", live), Route("/healthz", health),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={404: on_404, 405: on_404},
                     middleware=[Middleware(StampIndexVersion, version=ctx.version)])


VERSION_KEY = "gensyn.index_version"


class StampIndexVersion:
    """Reads the index's version when a request arrives, before its queries run: a page then never claims a newer
    version than its content, so the live script cannot take a change as already shown when it is not."""

    def __init__(self, app: ASGIApp, version: Callable[[], int]) -> None:
        self.app, self.version = app, version

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[VERSION_KEY] = self.version()
        await self.app(scope, receive, send)
