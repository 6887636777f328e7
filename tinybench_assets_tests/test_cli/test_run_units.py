"""run-all's unit loop (cli/chains.run_units): every unit refreshed in turn, a line each, and the keys whose run failed
returned, so run-all prints them and exits 1 (cli/run_all.py)."""

from __future__ import annotations

from types import SimpleNamespace

from tinybench_assets.cli import chains
from tinybench_assets.orchestration import refresh as refresh_module


def test_a_failed_unit_is_returned_and_said(monkeypatch):
    def fake(defs, instance, job_name, key, **kw):
        return SimpleNamespace(materialized=["x", "y"], fresh=False, success=key != "lb.bad", seconds=0.5)

    monkeypatch.setattr(refresh_module, "refresh", fake)
    said = []
    units = [("refresh_scenario", "lb.ok", "scenario"), ("refresh_scenario", "lb.bad", "scenario")]
    units.append(("refresh_leaderboard", "lb", "leaderboard"))
    n, failed = chains.run_units(units, say=said.append, setup=(None, None, {}))
    assert failed == ["lb.bad"] and n == 6
    assert [("FAILED" in line, "ok" in line) for line in said] == [(False, True), (True, False), (False, True)]
