"""The stored routers the server serves: found under the artifacts folder, each loaded once on first use (or at
start-up) with its encoder, and asked for decisions through ``tinybench route``'s own code path (cli/route.py's
``decide`` and cli/route_policy.py), so ``/v1/route`` answers what ``tinybench route --json`` prints."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from tinybench_assets import paths

from .errors import bad_request
from .names import PREFIX, RouterName


@dataclass
class LoadedRouter:
    """A served router ready to decide: its file, ``ServedRouter``, encoder and the file's sha256."""

    router_id: str
    path: Path
    served: object
    encoder: object
    sha256: str


class RouterRegistry:
    """Routers by name, loaded once (thread-safe); encoders shared between routers of the same encoder id."""

    def __init__(self, root: str | Path | None = None, device: str = "cpu", threads: int = 1):
        self.root = Path(root or paths.artifacts_dir())
        self.device, self.threads = device, threads
        self._routers: dict[str, LoadedRouter] = {}
        self._encoders: dict[str, object] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ what is there
    def available(self) -> dict[str, Path]:
        """router id -> file, for every router file under the artifacts folder."""
        out = {}
        for f in sorted(self.root.glob("*/router*.npz")) if self.root.is_dir() else []:
            board = f.parent.name
            if f.name == "router.npz":
                out[f"{PREFIX}{board}"] = f
            elif f.name.startswith("router_"):
                out[f"{PREFIX}{board}/{f.stem[len('router_') :]}"] = f
        return out

    @property
    def loaded(self) -> list[str]:
        return sorted(self._routers)

    # ------------------------------------------------------------------ loading
    def get(self, name: RouterName) -> LoadedRouter:
        """The named router, loaded on first use; a 400 error naming it when it cannot be served."""
        hit = self._routers.get(name.router_id)
        if hit is not None:
            return hit
        with self._lock:
            if name.router_id not in self._routers:
                self._routers[name.router_id] = self._load(name)
        return self._routers[name.router_id]

    def _load(self, name: RouterName) -> LoadedRouter:
        from tinybench_assets.cli.errors import UsageError
        from tinybench_assets.cli.route import _encoder, decide
        from tinybench_assets.core.routing.served import RouterFileError, ServedRouter
        from tinybench_assets.hashing import file_sha256
        from tinybench_assets.io.model_files import BOARD_ROUTER_FILE, UnsafeNameError, model_path, router_file

        partition = f"{name.board}.{name.scenario}" if name.scenario else name.board
        try:
            file = BOARD_ROUTER_FILE if name.scenario is None else router_file(name.scenario)
            path = model_path(self.root, name.board, file)
            if not path.is_file():
                known = ", ".join(self.available()) or "none"
                raise UsageError(f"no router {name.router_id} (routers here: {known})")
            served = ServedRouter.load(path, partition=partition)
            key = served.meta["encoder"]
            if key not in self._encoders:
                self._encoders[key] = _encoder(served.meta, path, self.device, self.threads)
            loaded = LoadedRouter(name.router_id, path, served, self._encoders[key], file_sha256(path))
            decide(served, loaded.encoder, [("warm-up", "warm-up question")])  # imports and first-call costs now
        except (UsageError, RouterFileError, UnsafeNameError) as e:
            raise bad_request(str(e), "model", "model_not_found") from None
        return loaded

    # ------------------------------------------------------------------ deciding
    def policy(self, router: LoadedRouter, name: RouterName) -> tuple[str, object, str]:
        """(objective, policy, rule) of the request's options, as ``tinybench route`` resolves its flags."""
        from tinybench_assets.cli.route_policy import cost_policy, threshold_policy

        extra = {"tolerance": name.tolerance, "max_cost": name.max_cost, "min_accuracy": name.min_accuracy}
        if name.threshold is not None:
            return threshold_policy(
                router.path, router.served, name.threshold, name.objective, extra, sha_of=lambda _: router.sha256
            )
        return cost_policy(router.served.meta, name.objective, *extra.values())

    def decide(self, name: RouterName, text: str) -> dict:
        """The decision for one question: ``tinybench route --json``'s row, with the router and its policy."""
        return self.decide_many(name, [text])[0]

    def decide_many(self, name: RouterName, texts: list[str]) -> list[dict]:
        """The decisions for questions of separate requests (each its own id ``1``): one ``decide`` call on the static
        encoder; on MiniLM, whose embedding of a text moves (up to 6e-4) with the batch it is padded in, one call per
        question, so each gets what ``tinybench route`` gives it alone."""
        from tinybench_assets.cli.errors import UsageError
        from tinybench_assets.cli.route import decide, json_rows
        from tinybench_assets.io.static_encoder import StaticEncoder

        router = self.get(name)
        try:
            objective, policy, rule = self.policy(router, name)
            qs = [(str(i), t) for i, t in enumerate(texts)]
            if isinstance(router.encoder, StaticEncoder):  # a question's embedding does not depend on its batch
                results, _, _ = decide(router.served, router.encoder, qs, policy)
            else:  # MiniLM pads a batch to its longest text: alone, a question is embedded as `tinybench route` does it
                results = [decide(router.served, router.encoder, [q], policy)[0][0] for q in qs]
        except UsageError as e:  # the CLI's flags named as the model field's options
            msg = str(e).replace("--objective ", "objective=")
            for flag in ("--max-cost", "--min-accuracy", "--tolerance"):
                msg = msg.replace(flag, flag[2:].replace("-", "_"))
            raise bad_request(msg, "model") from None
        label = policy.label() if policy is not None else "argmax of P(correct)"
        head = {"router": name.router_id, "objective": objective, "policy": label, "rule": rule}
        return [{**head, **row, "id": "1"} for row in json_rows(results)]
