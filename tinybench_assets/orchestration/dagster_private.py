"""Every private Dagster name the project uses, in one place: a Dagster upgrade that moves one breaks this module's
import (and the tests that load it), not a refresh decision at run time. Each is used because Dagster has no public
call for it (the notes say where it is used and why).

- stale status and its causes (``refresh``): the UI's caching resolver over an asset-graph view, the status and
  cause enums; Dagster exposes staleness only through the UI and declarative automation.
- ``InMemoryRunStorage`` / ``SqliteRunStorage`` (``orphans``): whether an instance's runs live on this machine.
- ``InstanceRef`` (``cli/chains.py``): a worker process's instance from the parent's settings.
- ``OpDefinition`` (``deploy_profiles``): an asset's op rebuilt with extra op tags.
- ``RetryMode``, ``serializable_error_info_from_exc_info`` (``deploy_profiles``): the Celery profile's executor,
  dagster-celery's with a step failure for a task lost with its worker process; dagster-celery builds its own executor
  with the same names.
- ``ReconstructableRepository`` (``testing/distributed.py``): a job loaded from the code location's module and
  attribute (``-m tinybench_assets.deploy_profiles -a celery_defs``), the pointer Celery workers load it from;
  ``dg.reconstructable`` takes only a module-level function returning one job.
- ``TickStatus`` (``testing/daemon_harness.py``): whether a recorded sensor tick has ended; Dagster's public API
  reads ticks only through the instance, whose tick records carry this private enum.
- ``_create_run``, ``WorkspaceProcessContext``, ``WorkspaceFileTarget`` (``testing/daemon_harness.py``): runs
  submitted to the daemon's queue from the code location the daemon loads (workspace.yaml), as the UI's Launch
  button does; Dagster's public API launches runs only in-process (``materialize``, ``execute_in_process``).
"""

from dagster._cli.job import _create_run
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleCauseCategory, StaleStatus
from dagster._core.definitions.op_definition import OpDefinition
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.execution.retries import RetryMode
from dagster._core.instance.ref import InstanceRef
from dagster._core.scheduler.instigation import TickStatus
from dagster._core.storage.runs import InMemoryRunStorage, SqliteRunStorage
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import WorkspaceFileTarget
from dagster._time import get_current_datetime
from dagster._utils.error import serializable_error_info_from_exc_info

__all__ = [
    "AssetGraphView",
    "CachingStaleStatusResolver",
    "InMemoryRunStorage",
    "InstanceRef",
    "OpDefinition",
    "ReconstructableRepository",
    "RetryMode",
    "SqliteRunStorage",
    "StaleCauseCategory",
    "StaleStatus",
    "TemporalContext",
    "TickStatus",
    "WorkspaceFileTarget",
    "WorkspaceProcessContext",
    "_create_run",
    "get_current_datetime",
    "serializable_error_info_from_exc_info",
]
