"""Nightly schedules: the same refresh decision as ``tinybench run-all`` and the refresh sensor
(``refresh_plan.decide``), one schedule per job (a schedule targets one job), so the project catches up even with the
sensor turned off: 03:00 ingest new drops, 03:15 the stale scenario partitions, 04:00 the stale leaderboards, 04:30
the stale evaluations."""

import time

import dagster as dg

from tinybench_assets.defs.jobs import jobs
from tinybench_assets.defs.resources import LandingResource, StoreResource
from tinybench_assets.orchestration.refresh_plan import (
    EVALUATION_JOB,
    INGEST_JOB,
    LEADERBOARD_JOB,
    SCENARIO_JOB,
    decide,
)

CRON = {INGEST_JOB: "0 3 * * *", SCENARIO_JOB: "15 3 * * *", LEADERBOARD_JOB: "0 4 * * *", EVALUATION_JOB: "30 4 * * *"}


def stale_schedule(job) -> dg.ScheduleDefinition:
    name = f"stale_{job.name}_schedule"

    @dg.schedule(
        name=name,
        job=job,
        cron_schedule=CRON[job.name],
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"Nightly ({CRON[job.name]}): request {job.name} runs for what is stale or missing, "
        "decided as `tinybench run-all` and the refresh sensor decide (refresh_plan.py); only the stale "
        "assets of each partition, tagged with why.",
    )
    def _schedule(context: dg.ScheduleEvaluationContext, store: StoreResource, landing: LandingResource):
        try:
            day = context.scheduled_execution_time.strftime("%Y-%m-%d")
        except Exception:  # noqa: BLE001 - evaluated by hand (tests, a preview): dagster raises when no tick time is set
            day = time.strftime("%Y-%m-%d")
        decision = decide(context.repository_def, context.instance, store.get(), landing.incoming_path)
        requests = [
            w.run_request(f"{name}:{day}:{w.partition or ''}:{w.state}", name)
            for w in decision.work
            if w.job == job.name
        ]
        return requests or dg.SkipReason(
            f"nothing stale for {job.name}" + (f"; {'; '.join(decision.waiting)[:1000]}" if decision.waiting else "")
        )

    return _schedule


schedules = [stale_schedule(job) for job in jobs]
