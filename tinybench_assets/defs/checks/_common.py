"""Helpers shared by the asset checks: the partition being checked, result rows, skipped materializations."""

from __future__ import annotations

import math

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets.io.store import Store

ERROR = dg.AssetCheckSeverity.ERROR
WARN = dg.AssetCheckSeverity.WARN


def partition_of(context: dg.AssetCheckExecutionContext) -> str | None:
    """The partition under check: the check's own partition key (checks here are partitioned like their
    asset), else the run's ``dagster/partition`` tag."""
    if context.has_partition_key:
        return context.partition_key
    return context.run.tags.get("dagster/partition")


def rows(db: Store, table: str, sql_where: str, params: list, columns: str = "*") -> pd.DataFrame:
    """Rows of a result table; empty when no partition has created the table yet."""
    return db.result_rows(table, sql_where, params, columns)


def skipped(context: dg.AssetCheckExecutionContext, asset: str, partition: str | None) -> str | None:
    """The ``skipped`` note of the asset's latest materialization of this partition (assets skip partitions they
    cannot handle, e.g. a leaderboard with too few models), or None."""
    flt = dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None)
    records = context.instance.fetch_materializations(flt, limit=1).records
    if not records or records[0].asset_materialization is None:
        return None
    value = records[0].asset_materialization.metadata.get("skipped")
    return None if value is None else str(value.value)


def clean(value):
    """Metadata-friendly Python values (numpy scalars to int/float/bool, NaN kept as float)."""
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value)
    return value


def result(passed: bool, severity: dg.AssetCheckSeverity, partition: str | None, **metadata) -> dg.AssetCheckResult:
    md = {"partition": str(partition)}
    for k, v in metadata.items():
        if isinstance(v, (dict, list)):
            md[k] = dg.MetadataValue.json(v)
        elif isinstance(v, pd.DataFrame):
            md[k] = dg.MetadataValue.md(v.to_markdown(index=False) if len(v) else "(none)")
        else:
            v = clean(v)
            md[k] = dg.MetadataValue.float(v) if isinstance(v, float) and not math.isfinite(v) else v
    return dg.AssetCheckResult(passed=bool(passed), severity=severity, metadata=md)


def skip_result(severity: dg.AssetCheckSeverity, partition: str | None, reason: str) -> dg.AssetCheckResult:
    """Pass with the asset's own reason: the asset wrote nothing for this partition on purpose."""
    return result(True, severity, partition, skipped=reason)


def nothing_stored(
    context: dg.AssetCheckExecutionContext,
    asset: str,
    partition: str | None,
    severity: dg.AssetCheckSeverity,
    error: str,
) -> dg.AssetCheckResult:
    """The result when the asset stored nothing for the partition: a pass with its ``skipped`` note when the asset
    skipped the partition on purpose, else a failure naming what is missing."""
    reason = skipped(context, asset, partition)
    return skip_result(severity, partition, reason) if reason else result(False, severity, partition, error=error)
