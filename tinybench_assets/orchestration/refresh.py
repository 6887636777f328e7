"""Materialize only what is stale or missing, with Dagster's own data-version staleness.

For one partition of one asset job, :func:`refresh` asks Dagster's stale-status resolver (the same one the UI
uses for its "stale" badges) which of the job's assets are MISSING or STALE, and runs those together with their
descendants in the job, in one run. Assets with logical data versions (code version + upstream versions) change
whenever a stale ancestor re-runs, so they go in the same run. The roots report content hashes
(``landing_ingest``, ``raw_responses``, ``model_prices``, see ``defs/versions.py``): when a root re-runs to the
version it had, nothing below it is stale, so a second look after each run decides what else to do. A run with nothing new
materializes nothing.

Two corrections to Dagster's answer (:func:`assess`), shared with the daemon's sensor and the schedule
(``refresh_plan.py``). First: ``raw_responses`` and ``model_prices`` read the unpartitioned ``landing_ingest``, so
Dagster calls every scenario's raw responses and prices stale after any drop; a partition whose own drops (for
``model_prices``: its leaderboard's prices drops) are unchanged stays fresh. Second: a leaderboard partition (``openllm``) reads the scenario partitions through an
``AllPartitionMapping`` (Dagster has no built-in mapping from dynamic ``openllm.arc`` keys to ``openllm``), so Dagster
calls every leaderboard stale when any leaderboard's scenario changes. :func:`assess` keeps a STALE verdict
only when one of its root causes lies in the partition's own leaderboard (or in an unpartitioned asset, or is a code
change): a new openllm drop refreshes openllm's scenario and leaderboard, never routerdc's. The UI's badge still
shows the broad verdict, with the root cause naming the other leaderboard's partition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import dagster as dg

from tinybench_assets.io.drop_types import split_partition_key
from tinybench_assets.orchestration.live_runs import wait_for_live_runs
from tinybench_assets.orchestration.versions import partition_version, prices_version

# assets whose data version is a content hash (not derived from their inputs): a re-run may leave it unchanged
CONTENT_VERSIONED = frozenset({"landing_ingest", "raw_responses", "model_prices"})
#: the scenario-partitioned ones, which read landing_ingest: fresh after an ingest that left their content as it was
SCENARIO_CONTENT = ("raw_responses", "model_prices")
#: a new model's evaluation: its data version is its answers file's content hash (:func:`answers_version`), which
#: Dagster does not observe; a changed file makes it stale
EVALUATION_ASSET = "model_evaluation"


@dataclass
class RefreshResult:
    partition: str | None
    materialized: list[str] = field(default_factory=list)  # asset names, in run order (repeats if re-run)
    runs: int = 0
    success: bool = True
    seconds: float = 0.0

    @property
    def fresh(self) -> bool:
        return self.success and not self.materialized


def leaderboard_of_key(partition: str | None) -> str | None:
    """The leaderboard a scenario (``openllm.arc``), leaderboard (``openllm``) or evaluation (``openllm/mymodel``)
    partition key belongs to."""
    if partition is not None and "/" in partition:  # an evaluation: <leaderboard>/<model>
        return partition.split("/", 1)[0]
    if partition is None or "." not in partition:  # unpartitioned, or a leaderboard key
        return partition
    return split_partition_key(partition)[0]


def answers_version(key: str, incoming=None) -> str | None:
    """The data version ``model_evaluation`` would report for evaluation partition ``key`` now (its answers' content
    hash, as the asset reports it), None when its file is gone from the landing folder."""
    from tinybench_assets import paths
    from tinybench_assets.io.evaluation_files import evaluation_file

    ev = evaluation_file(incoming or paths.incoming_dir(), key)
    return None if ev is None else ev.sha256()[:16]


def own_cause(cause, partition: str | None) -> bool:
    """Whether a stale root cause can concern ``partition``: a code change, a cause in an unpartitioned asset, or one
    in a partition of the same leaderboard."""
    # lazy: dagster_private loads ~0.55 s of private Dagster modules that the definitions do not
    from tinybench_assets.orchestration.dagster_private import StaleCauseCategory

    if cause.category == StaleCauseCategory.CODE or partition is None:
        return True
    places = [cause.key.partition_key] + ([cause.dependency.partition_key] if cause.dependency is not None else [])
    return all(p is None or leaderboard_of_key(p) == leaderboard_of_key(partition) for p in places)


@dataclass
class Staleness:
    """What is stale at one partition: ``status`` {asset key: StaleStatus}; ``certain``: the STALE content-versioned
    keys whose new version is already known to differ (their descendants are stale too); ``why`` {key: reason}."""

    status: dict
    certain: set = field(default_factory=set)
    why: dict = field(default_factory=dict)


def resolver_for(instance: dg.DagsterInstance, asset_graph):
    """One caching stale-status resolver (the UI's): share it across the partitions of one decision."""
    # lazy: dagster_private loads ~0.55 s of private Dagster modules that the definitions do not
    from tinybench_assets.orchestration.dagster_private import (
        AssetGraphView,
        CachingStaleStatusResolver,
        TemporalContext,
        get_current_datetime,
    )

    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=asset_graph,
    )
    return CachingStaleStatusResolver(instance=instance, asset_graph=asset_graph, loading_context=view)


def _cause_text(cause) -> str:
    where = cause.key.asset_key.to_user_string() + (f"[{cause.key.partition_key}]" if cause.key.partition_key else "")
    return f"{where} {cause.reason}"


def assess(
    instance: dg.DagsterInstance, asset_graph, keys, partition: str | None, store=None, resolver=None
) -> Staleness:
    """Dagster's verdict for ``keys`` at one partition, with two corrections that run-all and the daemon share:

    * a STALE verdict none of whose root causes concerns the partition's own leaderboard is FRESH (module docstring);
    * ``raw_responses`` / ``model_prices`` (given the ``store``) made STALE only by a new ``landing_ingest`` version
      are FRESH when their content is unchanged (:func:`content_version` equals the stored version), and certain to
      change otherwise: a drop refreshes its own partitions, a prices file its leaderboard's cost assets.
    """
    # lazy: dagster_private loads ~0.55 s of private Dagster modules that the definitions do not
    from tinybench_assets.orchestration.dagster_private import StaleStatus

    resolver = resolver or resolver_for(instance, asset_graph)
    out = Staleness({})
    for k in keys:
        part = partition if asset_graph.get(k).is_partitioned else None
        status = resolver.get_status(k, part)
        if status == StaleStatus.MISSING:
            out.why[k] = "never materialized"
        elif status == StaleStatus.STALE:
            causes = resolver.get_stale_root_causes(k, part)
            if part is not None and causes and not any(own_cause(c, part) for c in causes):
                status = StaleStatus.FRESH
            elif (
                part is not None
                and store is not None
                and k.to_user_string() in SCENARIO_CONTENT
                and causes
                and all(c.key.asset_key.to_user_string() == "landing_ingest" for c in causes)
            ):
                landed = content_version(k.to_user_string(), store, part)
                if resolver.get_current_data_version(k, part).value == landed:
                    status = StaleStatus.FRESH
                else:
                    out.certain.add(k)
                    what = "its drops" if k.to_user_string() == "raw_responses" else "its leaderboard's prices"
                    out.why[k] = f"{what} changed (content version {landed})"
            if status == StaleStatus.STALE and k not in out.why:
                out.why[k] = "; ".join(sorted({_cause_text(c) for c in causes})) or "stale"
        if status != StaleStatus.MISSING and part is not None and k.to_user_string() == EVALUATION_ASSET:
            now = answers_version(part)
            if now is not None and resolver.get_current_data_version(k, part).value != now:
                status = StaleStatus.STALE
                out.why[k] = f"its answers file changed (content version {now})"
        out.status[k] = status
    return out


def content_version(name: str, store, partition: str) -> str:
    """The version a scenario partition's content-versioned asset (``SCENARIO_CONTENT``) would report now:
    ``raw_responses`` the partition's drops, ``model_prices`` its leaderboard's prices drops."""
    if name == "raw_responses":
        return partition_version(store, partition)
    return prices_version(store, leaderboard_of_key(partition))


def _descendants(asset_graph, roots: set, within: set) -> set:
    out, todo = set(), list(roots)
    while todo:
        for child in asset_graph.get(todo.pop()).child_keys:
            if child in within and child not in out:
                out.add(child)
                todo.append(child)
    return out


def plan(asset_graph, statuses: dict, certain=frozenset()) -> set:
    """Keys to run now: every MISSING or STALE key, the descendants (within the job) of those whose new data
    version is certain to differ (``certain``: content-versioned keys known to change), and the rest of any
    multi-asset that cannot be split."""
    # lazy: dagster_private loads ~0.55 s of private Dagster modules that the definitions do not
    from tinybench_assets.orchestration.dagster_private import StaleStatus

    within = set(statuses)
    todo = {k for k, s in statuses.items() if s != StaleStatus.FRESH}
    sure = {k for k in todo if k.to_user_string() not in CONTENT_VERSIONED or k in certain}
    todo |= _descendants(asset_graph, sure, within)
    for k in list(todo):
        todo |= set(asset_graph.get(k).execution_set_asset_keys) & within
    return todo


def repository(defs):
    """The RepositoryDefinition of a Definitions object (run-all) or itself (a sensor's ``repository_def``)."""
    return defs.get_repository_def() if hasattr(defs, "get_repository_def") else defs


def job_keys(defs, job_name: str) -> set:
    return set(repository(defs).get_job(job_name).asset_layer.selected_asset_keys)


def store_of(defs):
    """The results store a Definitions object's ``store`` resource points at (None when it has none)."""
    res = getattr(defs, "resources", None) or {}
    store = res.get("store") if isinstance(res, dict) else None
    return store.get() if hasattr(store, "get") else None


def explain(
    defs, instance: dg.DagsterInstance, job_name: str, partition: str | None = None, store=None, resolver=None
) -> tuple[set, dict]:
    """(keys to run for ``partition``, {key: why}): the one refresh decision of run-all, the daemon's sensor and the
    schedule (:mod:`tinybench_assets.orchestration.refresh_plan`)."""
    repo = repository(defs)
    staleness = assess(instance, repo.asset_graph, job_keys(defs, job_name), partition, store, resolver)
    todo = plan(repo.asset_graph, staleness.status, staleness.certain)
    return todo, {k: staleness.why.get(k, "downstream of a changed input") for k in todo}


def pending(defs, instance: dg.DagsterInstance, job_name: str, partition: str | None = None, store=None) -> set:
    """The keys :func:`refresh` would run first for ``partition`` (empty when everything is fresh)."""
    return explain(defs, instance, job_name, partition, store if store is not None else store_of(defs))[0]


def refresh(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    job_name: str,
    partition: str | None = None,
    *,
    force: bool = False,
    run_config: dict | None = None,
    max_runs: int = 4,
    log=None,
    tags: dict[str, str] | None = None,
) -> RefreshResult:
    """Run ``job_name`` for ``partition`` on its stale or missing assets only (all of them with ``force``). A run of
    the same job and partition that the Dagster daemon has in hand is waited for first, then the question is asked
    again: a partition is computed once when run-all meets the daemon."""
    t0 = time.perf_counter()
    job = defs.resolve_job_def(job_name)
    keys = set(job.asset_layer.selected_asset_keys)
    out = RefreshResult(partition)
    for _ in range(max_runs):
        wait_for_live_runs(instance, job_name, partition, say=log or print)
        todo = keys if force and out.runs == 0 else pending(defs, instance, job_name, partition)
        if not todo or (force and out.runs > 0):
            break
        if log:
            log(
                f"{job_name} {partition or ''}: {len(todo)} stale or missing: {', '.join(sorted(k.to_user_string() for k in todo))}"
            )
        res = job.execute_in_process(
            instance=instance,
            partition_key=partition,
            asset_selection=sorted(todo),
            run_config=run_config or {},
            raise_on_error=False,
            tags=tags or {},
        )
        out.runs += 1
        out.materialized += [e.asset_key.to_user_string() for e in res.get_asset_materialization_events()]
        if not res.success:
            out.success = False
            break
    out.seconds = time.perf_counter() - t0
    return out
