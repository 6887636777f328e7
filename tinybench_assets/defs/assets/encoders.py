"""``static_encoder``: the static encoder distilled from the packaged all-MiniLM-L6-v2 (io/static_encoder.py), once
per artifacts folder, in the ingest job (after ``landing_ingest``, whose landed items say whether a scenario needs it).

Its data version is the build's recipe (source package and version, model2vec version, PCA dimensions), not the time
it ran: the ingest job re-materializes it with every new drop, which reuses the build and leaves ``question_embeddings``
fresh; a new recipe (an upgraded model2vec) makes them stale. It distils when a scenario has more questions with text
than core/routing/encoder_choice.FEW_QUESTIONS (the only ones whose choice reads it), or always with ``build:
always``; otherwise it records the recipe and ``question_embeddings`` distils on first need, under the same lock.
"""

import os

import dagster as dg

from tinybench_assets.core.routing.encoder_choice import FEW_QUESTIONS
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.resources import StoreResource, env_torch_threads
from tinybench_assets.defs.settings import ROUTER_GROUP as GROUP
from tinybench_assets.io import static_encoder as static
from tinybench_assets.orchestration.versions import code_version


class StaticEncoderConfig(dg.Config):
    """``when_needed`` (distil once a scenario has more than FEW_QUESTIONS questions with text) or ``always``."""

    build: str = "when_needed"


def scenarios_needing(db) -> dict:
    """{leaderboard.scenario: questions with text} of the landed scenarios whose encoder choice reads the static
    encoder (empty before anything landed)."""
    df = db.query("SELECT leaderboard, scenario, count(text) AS n FROM items GROUP BY 1, 2 ORDER BY 1, 2")
    return {f"{r.leaderboard}.{r.scenario}": int(r.n) for r in df.itertuples() if r.n > FEW_QUESTIONS}


@dg.asset(
    group_name=GROUP,
    code_version=code_version("encoder"),
    deps=["landing_ingest"],
    **card(
        "Static encoder",
        "A model2vec static embedding distilled from the packaged all-MiniLM-L6-v2 (384 PCA dimensions, no SIF, offline), "
        "stored under the artifacts folder's encoders/ with its recipe and content hash; its encoder id "
        "(static:<name>@<hash>) keys the embedding cache. 24-100x faster than MiniLM on 2 cores; question_embeddings "
        "chooses between the two per scenario. Built once; its data version is the recipe.",
        kinds=("python", "torch"),
    ),
)
def static_encoder(
    context: dg.AssetExecutionContext, config: StaticEncoderConfig, store: StoreResource
) -> dg.MaterializeResult:
    if config.build not in ("when_needed", "always"):
        raise ValueError(f"static_encoder build must be when_needed or always; got {config.build!r}")
    rid, folder = static.recipe_id(), static.build_folder()
    need = scenarios_needing(store.get())
    meta = {"recipe": static.recipe(), "recipe_id": rid, "folder": str(folder)}
    if static.read_manifest(folder) is None and not need and config.build != "always":
        meta["built"] = f"not yet: no scenario has more than {FEW_QUESTIONS} questions with text"
        return dg.MaterializeResult(metadata=meta, data_version=dg.DataVersion(rid))
    folder, man, now = static.ensure_static_encoder(
        threads=env_torch_threads(min(2, os.cpu_count() or 1)), log=context.log.info
    )
    meta.update(
        {
            "built": f"now, in {man['seconds']} s" if now else "reused",
            "encoder_id": man["encoder_id"],
            "content_sha256": man["content_sha256"],
            "distil_seconds": man["seconds"],
            "needed_by": dg.MetadataValue.json(need),
        }
    )
    return dg.MaterializeResult(metadata=meta, data_version=dg.DataVersion(rid))


encoder_assets = [static_encoder]
