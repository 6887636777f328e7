"""``tinybench serve``: the stored routers behind an OpenAI-compatible endpoint (tinybench_assets/serving/).

    tinybench serve --upstreams upstreams.yaml [--host 127.0.0.1] [--port 8000] [--preload [ROUTER ...]]

Applications call ``POST /v1/chat/completions`` with ``model`` = ``router:<leaderboard>[/<scenario>][?options]``;
the last user message is routed and the request forwarded to the chosen model's upstream (the YAML maps each model
to a base URL, the upstream's model name and the variable holding its key). ``POST /v1/route`` gives the decision
only. Routers are read from the artifacts folder (no DuckDB store), each loaded once (``--preload``: at start-up; else on
first use). Without ``--upstreams`` only the decisions are served.
"""

from __future__ import annotations

import argparse
import sys

from tinybench_assets.cli.errors import UsageError

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions


def serve_cmd(args: argparse.Namespace) -> int:
    import os

    from tinybench_assets.serving.app import build_app
    from tinybench_assets.serving.errors import ServingError
    from tinybench_assets.serving.names import parse_model
    from tinybench_assets.serving.proxy import Forwarder
    from tinybench_assets.serving.registry import RouterRegistry
    from tinybench_assets.serving.upstreams import UpstreamConfigError, read_upstreams

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        if not 0 < args.port < 65536:
            raise UsageError(f"--port {args.port}: a TCP port (1 to 65535)")
        upstreams = None
        if args.upstreams:
            try:
                upstreams = read_upstreams(args.upstreams)
            except UpstreamConfigError as e:
                raise UsageError(str(e)) from None
        registry = RouterRegistry(device=args.device, threads=args.threads)
        found = registry.available()
        if args.preload is not None:
            for rid in args.preload or found:
                try:
                    registry.get(parse_model(rid))
                except ServingError as e:
                    raise UsageError(f"{rid}: {e.message}") from None
    except UsageError as e:
        print(f"tinybench serve: error: {e}", file=sys.stderr)
        return 2
    import numpy  # noqa: F401 - BLAS loaded, so that its thread count can be set
    from threadpoolctl import threadpool_limits

    threadpool_limits(max(args.threads, 1))  # BLAS: one thread by default, batches beside the event loop
    unset = sorted(
        {u.api_key_env for u in (upstreams or {}).values() if u.api_key_env and not os.environ.get(u.api_key_env)}
    )
    print(
        f"tinybench serve: {len(found)} router(s) under {registry.root} ({len(registry.loaded)} loaded); "
        + (
            f"upstreams for {len(upstreams)} model(s) from {args.upstreams}"
            if upstreams
            else "no upstreams: /v1/route only"
        )
        + (f"; key variable(s) not set: {', '.join(unset)}" if unset else ""),
        file=sys.stderr,
        flush=True,
    )
    import uvicorn

    forwarder = Forwarder(upstreams, str(args.upstreams)) if upstreams else None
    uvicorn.run(
        build_app(registry, forwarder),
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=args.access_log,
    )
    return 0


def add_parsers(sub) -> None:
    """Register the ``serve`` subcommand on the ``tinybench`` parser's subparsers."""
    p = sub.add_parser(
        "serve",
        help="serve the stored routers behind an OpenAI-compatible endpoint (/v1/chat/completions, /v1/route)",
        description="An OpenAI-compatible endpoint in front of your models: model router:<leaderboard>[/<scenario>] "
        "routes each request's last user message and forwards it to the chosen model's upstream.",
    )
    p.add_argument("--upstreams", help="YAML file: each model's base_url, upstream model name and api_key_env")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument(
        "--preload",
        nargs="*",
        metavar="ROUTER",
        help="load these routers (e.g. router:routellm/mmlu; none named: every router) and their encoders at start-up",
    )
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"), help="encoder device (default cpu)")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="CPU threads of a decision: BLAS and a MiniLM encoder's torch (default 1: concurrent requests are "
        "decided in batches in a worker thread beside the event loop; on 2 cores one thread each measured fastest)",
    )
    p.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    p.add_argument("--access-log", action="store_true", help="log every request line (off by default)")
    p.set_defaults(func=serve_cmd)
