"""The leaderboard router: one router for mixed traffic, questions of every scenario of a leaderboard arriving with
no scenario label (RouterDC's setting).

It trains on every routable scenario's TRAINING questions (the split ``question_embeddings`` recorded), with each
question's scenario as its task (the task families of core/routing/task.py recognise it from the text: its embedding
with the hashed character n-grams of core/routing/surface.py beside it, ``RouterConfig.surface_features``), and is
chosen by the scenario routers' cross-validation and gate (``RouterConfig``). Its candidates are the models that
answered every routable scenario; the others are named in the metadata. Test questions only report: per scenario the
router beside the best single model overall, the per-scenario best model (which needs the label) and the oracle.
The scenarios' questions are in one embedding space: their encoder where every scenario has the same one, else the
static encoder's (question_embeddings chooses per scenario; the static one embeds the whole board in seconds).
The saved router (``<board>/router.npz``) carries its training questions' embeddings, so ``tinybench route`` flags a
question unlike all of them (core/routing/guard.py) and sends it to the model the router trusts most overall.
"""

import time

import dagster as dg

from tinybench_assets.defs import board_router_report as report
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.partitions import leaderboard_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, ModelStore, StoreResource, TorchDevice
from tinybench_assets.defs.settings import ROUTER_GROUP as GROUP
from tinybench_assets.defs.settings import RouterConfig
from tinybench_assets.io.embeddings import embed_cached
from tinybench_assets.io.routing_reads import board_routing_data
from tinybench_assets.io.static_encoder import StaticEncoder
from tinybench_assets.orchestration.versions import code_version
from tinybench_assets.progress import Stopwatch

CODE_VERSION = code_version("router")


ALL_EMBEDDINGS = dg.AssetDep("question_embeddings", partition_mapping=dg.AllPartitionMapping())
ALL_ITEM_PARAMS = dg.AssetDep("irt_model", partition_mapping=dg.AllPartitionMapping())


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=leaderboard_partitions,
    deps=[ALL_EMBEDDINGS, ALL_ITEM_PARAMS],
    **card(
        "Leaderboard router (mixed traffic)",
        "One router for questions of every scenario of the leaderboard, "
        "with no scenario label: trained on every scenario's training questions, the scenario recognised "
        "from the question (task families), chosen by cross-validation and the gate. Test figures per "
        "scenario beside the best single model overall, the per-scenario best model and the oracle. "
        "`tinybench route --leaderboard L` without --scenario uses it; a question unlike every training "
        "question is flagged out of distribution.",
        kinds=("python", "scikit-learn", "duckdb"),
    ),
)
def leaderboard_router(
    context: dg.AssetExecutionContext,
    config: RouterConfig,
    store: StoreResource,
    torch_device: TorchDevice,
    model_store: ModelStore,
) -> dg.MaterializeResult:
    board, db, t0 = context.partition_key, store.get(), time.perf_counter()
    watch = Stopwatch(say=context.log.info, start=t0)  # where the time went: the metadata's time_breakdown
    with watch.part("read inputs"):
        E, Y, models, task, test, encoder, left_out, scenarios, texts = board_routing_data(db, board)
    if skipped := report.skipped_metadata(scenarios, models, left_out):
        return dg.MaterializeResult(metadata=skipped)
    if E is None:  # the scenarios chose different encoders: every question in the static encoder's space
        with watch.part("static embeddings (scenarios' encoders differ)"):
            context.log.info(f"{board}: scenarios embedded with {encoder[len('mixed: ') :]}; one space: static")
            static = StaticEncoder.ensure(log=context.log.info)
            E, _ = embed_cached(db, static, texts, log=context.log.info)
            encoder = static.encoder_id
    device = torch_device.resolve()
    t_fit = watch.clock()
    fit = report.fit_board_router(E, Y, task, test, texts, models, config, device, context.log.info)
    watch.add("cross-validation (router choice)", fit.sel.seconds)
    watch.add("surface features, fit, guard and test scores", watch.clock() - t_fit - fit.sel.seconds)
    with watch.part("store and save router"):
        db.replace_partition(report.board_tables(fit, t0), board)
        path = model_store.save_board_router(board, report.board_router_file(board, fit, scenarios, encoder))
    meta = report.board_metadata(board, fit, scenarios, left_out, path, t0)
    return dg.MaterializeResult(metadata={**meta, "encoder": encoder, **watch.metadata()})


leaderboard_assets = [leaderboard_router]
