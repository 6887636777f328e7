"""What a Dagster instance recorded, read the way the daemon tests check it: runs, live runs, materializations,
sensor ticks and the pid of a run's worker.

``InstanceRecords`` is a mixin of ``testing.daemon_harness.DaemonProject``; its methods read ``self.instance`` (the
project's ``DagsterInstance``), so a project answers ``project.runs()``, ``project.worker_pid(...)`` and the like.
"""

from __future__ import annotations

import dagster as dg

from tinybench_assets.orchestration.live_runs import LIVE


class InstanceRecords:
    """Reads of the runs, event records and sensor ticks of ``self.instance`` (a ``DagsterInstance``)."""

    def runs(self, **filters) -> list:

        return list(self.instance.get_runs(dg.RunsFilter(**filters) if filters else None))

    def live_runs(self) -> list:

        return self.runs(statuses=LIVE)

    def materializations(self, after_storage_id: int = 0) -> list[tuple[str, str | None, str]]:
        """(asset, partition, run id) of every materialization recorded after ``after_storage_id``."""

        recs = self.instance.get_event_records(
            dg.EventRecordsFilter(event_type=dg.DagsterEventType.ASSET_MATERIALIZATION, after_cursor=after_storage_id),
            limit=100000,
        )
        return [(r.asset_key.to_user_string(), r.partition_key, r.run_id) for r in recs]

    def last_storage_id(self) -> int:

        recs = self.instance.get_event_records(
            dg.EventRecordsFilter(event_type=dg.DagsterEventType.ASSET_MATERIALIZATION), limit=1, ascending=False
        )
        return recs[0].storage_id if recs else 0

    def sensor_ticks(self, sensor: str) -> list:
        """Every recorded tick of ``sensor``, oldest first."""
        states = [s for s in self.instance.all_instigator_state() if s.name == sensor]
        out = []
        for st in states:
            out += self.instance.get_ticks(st.instigator_origin_id, st.selector_id, limit=1000)
        return sorted(out, key=lambda t: t.timestamp)

    def worker_pid(self, run_id: str, after_step: str) -> int | None:
        """The pid of the run worker executing ``run_id`` (its first engine event naming one), once the step
        ``after_step`` has succeeded (so a kill lands in a later step); else None."""

        logs = self.instance.all_logs(run_id)
        if not any(
            e.dagster_event is not None
            and e.dagster_event.event_type == dg.DagsterEventType.STEP_SUCCESS
            and e.step_key == after_step
            for e in logs
        ):
            return None
        for e in logs:
            ev = e.dagster_event
            if (
                ev is not None
                and ev.event_type == dg.DagsterEventType.ENGINE_EVENT
                and ev.engine_event_data
                and "pid" in ev.engine_event_data.metadata
            ):
                return int(ev.engine_event_data.metadata["pid"].value)
        return None
