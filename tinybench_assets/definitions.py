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
    assets with other op tags, resources overriding the defaults by key, another executor (default: Dagster's)."""
    return dg.Definitions(
        assets=all_assets if assets is None else assets,
        asset_checks=checks,
        jobs=jobs,
        sensors=sensors,
        schedules=schedules,
        resources={**default_resources(), **(resources or {})},
        executor=executor,
    )


defs = build_defs()
