"""The one Definitions object of the tinybench code location."""
import dagster as dg

from tinybench_assets.defs.assets import all_assets
from tinybench_assets.defs.checks import checks
from tinybench_assets.defs.jobs import jobs
from tinybench_assets.defs.resources import default_resources
from tinybench_assets.defs.schedules import schedules
from tinybench_assets.defs.sensors import sensors


def build_defs() -> dg.Definitions:
    """Definitions whose resources read the TINYBENCH_* paths now (the module-level ``defs`` read them at import)."""
    return dg.Definitions(
        assets=all_assets,
        asset_checks=checks,
        jobs=jobs,
        sensors=sensors,
        schedules=schedules,
        resources=default_resources(),
    )


defs = build_defs()
