"""``model_evaluation``: a new model's estimates, one dynamic partition per evaluation file
(``<leaderboard>/<model>``, io/evaluation_files.py), kept in the ``evaluations`` table with their history."""

import dagster as dg

from tinybench_assets.defs.cards import card
from tinybench_assets.defs.evaluation_report import evaluate, evaluation_metadata, quarantine, same_version
from tinybench_assets.defs.partitions import evaluation_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, LandingResource, ModelStore, StoreResource
from tinybench_assets.io.evaluation_files import evaluation_file, split_evaluation_key
from tinybench_assets.orchestration.versions import code_version

GROUP = "evaluations"
CODE_VERSION = code_version("evaluations")


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=evaluation_partitions,
    # every leaderboard's tiny benchmark (no mapping from a dynamic <board>/<model> key to its board exists): the refresh
    # decision keeps a stale verdict only when its cause is the evaluation's own leaderboard (orchestration/refresh.py)
    deps=[dg.AssetDep("tiny_benchmark", partition_mapping=dg.AllPartitionMapping())],
    **card(
        "Model evaluation",
        "A new model's estimates from its answers to the anchors, as `tinybench estimate --allow-missing` gives them: "
        "one partition per file in data/incoming/evaluations/<leaderboard>/ (`<leaderboard>/<model>`). Per scenario "
        "the estimate and 90 % interval (T1 and T2), the estimator served, the answers counted and the anchors "
        "missing, the notes, and the tiny benchmark's version (the leaderboard's drop ids and the artifact's hash), "
        "added to the evaluations table (earlier rows of the model kept, marked superseded). Re-estimated when its "
        "answers file changes or its leaderboard's tiny benchmark does. A bad file (unreadable, items of another "
        "leaderboard, scores not in [0, 1], no anchor answered) is quarantined with its reason. Picture: where the "
        "model would rank on every scenario, and its estimates across tiny-benchmark versions.",
        kinds=("python", "duckdb"),
    ),
)
def model_evaluation(
    context: dg.AssetExecutionContext, store: StoreResource, model_store: ModelStore, landing: LandingResource
) -> dg.MaterializeResult:
    key, db = context.partition_key, store.get()
    board, model = split_evaluation_key(key)
    ev = evaluation_file(landing.incoming_path, key)
    if ev is None:
        return dg.MaterializeResult(metadata={"skipped": f"no evaluation file for {key} in the landing folder"})
    sha = ev.sha256()
    version = dg.DataVersion(sha[:16])  # the answers' content: a changed file makes the evaluation stale
    out = evaluate(db, model_store.folder(board), ev, sha)
    if out.skipped:
        return dg.MaterializeResult(data_version=version, metadata={"skipped": out.skipped})
    if out.quarantined:
        moved = quarantine(db, ev, landing.incoming_path, landing.quarantine_path, out.quarantined, sha)
        context.log.warning(f"quarantined {ev.relpath} -> {moved}: {out.quarantined}")
        return dg.MaterializeResult(
            data_version=version, metadata={"quarantined": out.quarantined, "moved_to": dg.MetadataValue.path(moved)}
        )
    unchanged = same_version(db, out.rows)
    if not unchanged:
        db.write_evaluation(board, model, out.rows)
    return dg.MaterializeResult(
        data_version=version,
        metadata={
            **evaluation_metadata(db, board, model, out.rows),
            "new_version": not unchanged,  # False: the same answers and tiny benchmark as the stored rows
            "notes": dg.MetadataValue.json(out.notes),
        },
    )


evaluation_assets = [model_evaluation]
