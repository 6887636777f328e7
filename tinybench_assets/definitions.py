"""The one Definitions object of the tinybench code location."""

import dagster as dg

from tinybench_assets.defs.assets import all_assets
from tinybench_assets.defs.checks import checks
from tinybench_assets.defs.jobs import jobs
from tinybench_assets.defs.resources import default_resources
from tinybench_assets.defs.schedules import schedules
from tinybench_assets.defs.sensors import sensors


def build_defs(*, assets=None, resources: dict | None = None, executor=None) -> dg.Definitions:
    """Definitions whose resources read the TINYBENCH_* paths now (the module-level ``defs`` read them at import).

    ``assets`` / ``resources`` / ``executor`` are for the deployment profiles (``deploy_profiles.py``): the same
    assets with other op tags, resources overriding the defaults by key, another executor. The default is Dagster's
    in-process executor: a run's steps run in its run worker, one after another, as ``tinybench run-all`` runs them
    (a refresh run is a chain; a process per step re-imported torch and the package for every step, and the
    daemon's refresh took several times run-all's time)."""
    return dg.Definitions(
        assets=all_assets if assets is None else assets,
        asset_checks=checks,
        jobs=jobs,
        sensors=sensors,
        schedules=schedules,
        resources={**default_resources(), **(resources or {})},
        executor=dg.in_process_executor if executor is None else executor,
    )


defs = build_defs()
