"""``tinybench serve``: routing where applications call models, an OpenAI-compatible endpoint (docs/routing.md).

- :mod:`.names` -- the ``model`` field: ``router:<leaderboard>[/<scenario>][?objective=...&threshold=...]``.
- :mod:`.registry` -- the stored routers, each loaded once (with its encoder) on first use, and their decisions
  through ``tinybench route``'s own code path (cli/route.py's ``decide``).
- :mod:`.batcher` -- concurrent requests for one router decided together (one ``decide`` call per batch).
- :mod:`.upstreams` -- the YAML mapping each model to an OpenAI-compatible base URL, model name and key variable.
- :mod:`.proxy` -- forwarding a request to the chosen model's upstream (streaming passed through), faults as 502/504.
- :mod:`.errors` -- OpenAI-style error bodies.
- :mod:`.app` -- the Starlette application: ``/v1/chat/completions``, ``/v1/route``, ``/v1/models``, ``/health``.
- :mod:`.thresholds` -- named thresholds saved by ``tinybench calibrate`` beside their router.
"""
