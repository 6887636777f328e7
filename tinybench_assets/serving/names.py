"""The ``model`` field of a request: which stored router, and how it routes.

``router:<leaderboard>`` is the leaderboard's mixed-traffic router (``<leaderboard>/router.npz``);
``router:<leaderboard>/<scenario>`` a scenario's (``<leaderboard>/router_<scenario>.npz``). A query string may follow,
as in ``router:routellm/mmlu?threshold=0.4``: ``objective`` (accuracy, quality_at_min_cost, max_cost,
min_accuracy), ``tolerance``, ``max_cost``, ``min_accuracy`` (as ``tinybench route``'s options) and ``threshold``
(a number, or the name of a threshold ``tinybench calibrate`` saved).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl

from .errors import bad_request

PREFIX = "router:"
NUMBERS = ("tolerance", "max_cost", "min_accuracy")
KEYS = ("objective", "threshold", *NUMBERS)


@dataclass(frozen=True)
class RouterName:
    """A parsed ``model`` field: the router (``board``, ``scenario`` None for the leaderboard's) and its options."""

    board: str
    scenario: str | None
    objective: str | None = None
    threshold: str | None = None
    tolerance: float | None = None
    max_cost: float | None = None
    min_accuracy: float | None = None

    @property
    def router_id(self) -> str:
        return f"{PREFIX}{self.board}" + (f"/{self.scenario}" if self.scenario else "")


def parse_model(value) -> RouterName:
    """The router a request names; a 400 error (param ``model``) naming the problem otherwise."""
    if not isinstance(value, str) or not value.startswith(PREFIX):
        raise bad_request(
            f"model {value!r}: name a router, router:<leaderboard> or router:<leaderboard>/<scenario> "
            "(GET /v1/models lists them)",
            "model",
            "model_not_found",
        )
    path, _, query = value[len(PREFIX) :].partition("?")
    board, _, scenario = path.partition("/")
    if not board or "/" in scenario or (path.endswith("/") and not scenario):
        raise bad_request(f"model {value!r}: router:<leaderboard>[/<scenario>]", "model", "model_not_found")
    opts: dict = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise bad_request(f"model {value!r}: cannot read the query string {query!r}", "model") from None
    for k, v in pairs:
        if k not in KEYS:
            raise bad_request(f"model {value!r}: unknown option {k!r} (one of {', '.join(KEYS)})", "model")
        if k in opts:
            raise bad_request(f"model {value!r}: option {k!r} given twice", "model")
        if k in NUMBERS:
            try:
                opts[k] = float(v)
            except ValueError:
                raise bad_request(f"model {value!r}: {k}={v!r} is not a number", "model") from None
        else:
            opts[k] = v
    return RouterName(board, scenario or None, **opts)
