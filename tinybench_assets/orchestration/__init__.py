"""Orchestration below the Dagster definitions: what is stale and why (``refresh``), the refresh decision that
run-all, the refresh sensor and the schedules share (``refresh_plan``), runs in flight (``live_runs``), runs whose
process died (``orphans``), and the code and data versions (``versions``). Every use of Dagster's private
``dagster._core`` API goes through ``dagster_private``. Nothing here imports ``tinybench_assets.defs``.
"""
