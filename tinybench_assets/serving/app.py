"""The Starlette application of ``tinybench serve``.

- ``POST /v1/chat/completions``: the OpenAI chat schema; ``model`` names a router (serving/names.py); the last user
  message is routed and the request forwarded to the chosen model's upstream (serving/proxy.py).
- ``POST /v1/route``: the decision only (``tinybench route --json``'s row for the question), for ``messages`` as
  above or a ``question`` string.
- ``GET /v1/models``: the routers (OpenAI's model list); ``GET /health``.
Bad requests are 400 with an OpenAI-style error body (serving/errors.py); the server stays up whatever a request
holds.
"""

from __future__ import annotations

import contextlib
import json
import logging

from .batcher import DecisionBatcher
from .errors import ServingError, bad_request
from .names import parse_model
from .registry import RouterRegistry

log = logging.getLogger("tinybench.serve")


def last_user_text(body: dict) -> str:
    """The text of the last user message (a string, or the text parts of a content list); 400 if there is none."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages: a non-empty list of {role, content} is required", "messages")
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                content = "\n".join(
                    p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
                )
            if not isinstance(content, str) or not content.strip():
                raise bad_request(f"messages[{i}]: the last user message is empty", "messages")
            return content
    raise bad_request("messages: no message with role 'user' to route", "messages")


async def _json_body(request) -> dict:
    raw = await request.body()
    try:
        body = json.loads(raw)
    except ValueError:
        raise bad_request("the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    return body


def build_app(registry: RouterRegistry, forwarder=None):
    """The application; ``forwarder`` (serving/proxy.py's ``Forwarder``) None serves ``/v1/route`` only."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    batcher = DecisionBatcher(registry)

    def error(e: ServingError) -> JSONResponse:
        return JSONResponse(e.body(), status_code=e.status)

    async def decision(body: dict) -> tuple[dict, dict]:
        name = parse_model(body.get("model"))
        if "question" in body and "messages" not in body:
            text = body["question"]
            if not isinstance(text, str) or not text.strip():
                raise bad_request("question: empty question text", "question")
        else:
            text = last_user_text(body)
        return name, await batcher.decide(name, text)

    async def route(request):
        try:
            _, d = await decision(await _json_body(request))
        except ServingError as e:
            return error(e)
        return JSONResponse(d)

    async def chat(request):
        try:
            body = await _json_body(request)
            name, d = await decision(body)
            if forwarder is None:
                raise ServingError(501, "no upstreams configured (tinybench serve --upstreams FILE)", "server_error")
            return await forwarder.forward(d["chosen_model"], name.router_id, body)
        except ServingError as e:
            return error(e)

    async def models(request):
        data = [
            {"id": rid, "object": "model", "created": int(path.stat().st_mtime), "owned_by": "tinybench"}
            for rid, path in registry.available().items()
        ]
        return JSONResponse({"object": "list", "data": data})

    async def health(request):
        return JSONResponse({"status": "ok", "routers_loaded": registry.loaded})

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        if forwarder is not None:
            await forwarder.aclose()

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/route", route, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
