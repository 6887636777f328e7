"""Partitions: one dynamic key per leaderboard scenario (``openllm.mmlu``), one per leaderboard, one per evaluated model
(``openllm/mymodel``: a file in the evaluations landing folder, io/evaluation_files.py)."""

import dagster as dg

from tinybench_assets.io.drops import split_partition_key
from tinybench_assets.orchestration.evaluations import EVALUATION_PARTITIONS

scenario_partitions = dg.DynamicPartitionsDefinition(name="scenarios")
leaderboard_partitions = dg.DynamicPartitionsDefinition(name="leaderboards")
#: registered by the refresh decision's callers (orchestration/evaluations.py: register_evaluations)
evaluation_partitions = dg.DynamicPartitionsDefinition(name=EVALUATION_PARTITIONS)


def register_partitions(instance: dg.DagsterInstance, keys) -> list[str]:
    """Add scenario keys (and their leaderboards) that the instance does not know yet; returns the new scenario keys."""
    keys = sorted(set(keys))
    known = set(instance.get_dynamic_partitions(scenario_partitions.name))
    new = [k for k in keys if k not in known]
    if new:
        instance.add_dynamic_partitions(scenario_partitions.name, new)
    boards = sorted({split_partition_key(k)[0] for k in keys})
    known_boards = set(instance.get_dynamic_partitions(leaderboard_partitions.name))
    new_boards = [b for b in boards if b not in known_boards]
    if new_boards:
        instance.add_dynamic_partitions(leaderboard_partitions.name, new_boards)
    return new
