"""Forwarding a chat request to the chosen model's upstream (serving/upstreams.py) with one shared async client.

The request goes as it came, its ``model`` replaced by the upstream's name for the chosen model, with the key
from the upstream's variable as a bearer token. The answer comes back with ``model`` set to the chosen model (the
leaderboard's name) and the ``x-tinybench-model`` / ``x-tinybench-router`` headers; a streamed answer
(``"stream": true``) passes through byte for byte (server-sent events), with the same headers. Faults name the
model and never the key: an upstream that cannot be reached is 502, one that does not answer within its timeout 504,
one that answers 5xx or no JSON 502; an upstream's 4xx comes back as it is (the key scrubbed from it).
"""

from __future__ import annotations

import json
import logging

from .errors import ServingError, scrub
from .upstreams import Upstream

log = logging.getLogger("tinybench.serve")
MODEL_HEADER = "x-tinybench-model"
ROUTER_HEADER = "x-tinybench-router"


def _fault(status: int, message: str, key: str | None) -> ServingError:
    return ServingError(status, scrub(message, [key]), "upstream_error", None, "upstream_unavailable")


class Forwarder:
    """Sends requests to upstreams through one ``httpx2.AsyncClient`` (``aclose`` at shutdown)."""

    def __init__(self, upstreams: dict[str, Upstream], source: str = "the upstreams file"):
        import httpx2

        self.upstreams, self.source = upstreams, source
        self.client = httpx2.AsyncClient(limits=httpx2.Limits(max_connections=256, max_keepalive_connections=64))

    async def aclose(self) -> None:
        await self.client.aclose()

    def upstream(self, model: str) -> Upstream:
        up = self.upstreams.get(model)
        if up is None:
            raise ServingError(500, f"no upstream for model {model} in {self.source}", "server_error", None, None)
        return up

    async def forward(self, model: str, router_id: str, body: dict):
        """The upstream's answer to ``body`` as a Starlette response (a ServingError for a fault)."""
        import httpx2
        from starlette.background import BackgroundTask
        from starlette.responses import JSONResponse, Response, StreamingResponse

        up = self.upstream(model)
        try:
            key = up.key()
        except KeyError as e:
            msg = f"the key of model {model}'s upstream is not set (environment variable {e.args[0]})"
            raise ServingError(500, msg, "server_error") from None
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        payload = {**body, "model": up.model}
        timeout = httpx2.Timeout(up.timeout_s, connect=min(up.timeout_s, 10.0))
        ours = {MODEL_HEADER: model, ROUTER_HEADER: router_id}
        request = self.client.build_request("POST", up.url, json=payload, headers=headers, timeout=timeout)
        try:
            resp = await self.client.send(request, stream=True)
        except httpx2.TimeoutException:
            raise _fault(504, f"model {model}: its upstream did not answer within {up.timeout_s:g} s", key) from None
        except httpx2.HTTPError as e:
            why = type(e).__name__
            raise _fault(502, f"model {model}: its upstream cannot be reached ({why})", key) from None
        if bool(body.get("stream")) and resp.status_code < 400:
            ctype = resp.headers.get("content-type", "text/event-stream")
            return StreamingResponse(
                _passthrough(resp, model),
                resp.status_code,
                headers=ours,
                media_type=ctype,
                background=BackgroundTask(resp.aclose),
            )
        try:
            raw = await resp.aread()
        except httpx2.TimeoutException:
            raise _fault(504, f"model {model}: its upstream did not answer within {up.timeout_s:g} s", key) from None
        except httpx2.HTTPError as e:
            raise _fault(502, f"model {model}: its upstream broke off its answer ({type(e).__name__})", key) from None
        finally:
            await resp.aclose()
        if resp.status_code >= 500:
            raise _fault(502, f"model {model}: its upstream answered HTTP {resp.status_code}", key)
        if resp.status_code >= 400:  # the client's request as the upstream saw it: its answer as it is, key-free
            text = scrub(raw.decode("utf-8", "replace"), [key])
            return Response(text, resp.status_code, headers=ours, media_type=resp.headers.get("content-type"))
        try:
            answer = json.loads(raw)
            if not isinstance(answer, dict):
                raise ValueError
        except ValueError:
            raise _fault(502, f"model {model}: its upstream answered without a JSON object", key) from None
        answer["model"] = model
        log.info("%s -> %s (%s)", router_id, model, resp.status_code)
        return JSONResponse(answer, headers=ours)


async def _passthrough(resp, model: str):
    """The upstream's streamed bytes as they come; a stream that breaks off ends (its status was sent already)."""
    import httpx2

    try:
        async for chunk in resp.aiter_raw():
            yield chunk
    except httpx2.HTTPError as e:
        log.warning("model %s: its upstream's stream broke off (%s)", model, type(e).__name__)
