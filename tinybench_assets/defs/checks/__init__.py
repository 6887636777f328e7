"""Asset checks users can trust. Every check is partitioned like its asset, so a result belongs to
one scenario or leaderboard partition; blocking checks (severity ERROR) stop downstream assets in the same run.

- responses: ``responses_valid`` (raw_responses, blocking), ``matrix_complete`` (response_matrix, warning),
  ``balance_weights_normalized`` (response_matrix), ``binarization_keeps_accuracy`` (binarized_responses),
  ``irt_model_fit_sound`` / ``irt_joint_fit_sound`` (blocking)
- estimation: ``anchor_weights_sum_to_one`` (anchor_sets, blocking), ``estimates_in_range`` (model_estimates),
  ``backtest_sane`` (estimation_backtest), ``tiny_benchmark_round_trip`` (tiny_benchmark)
- router / MAGI: ``knn_params_cover_test_questions`` (knn_item_params, blocking), ``router_matches_best_single``
  (router_accuracy), ``magi_subset_within_bound`` (magi_subset, warning), ``magi_not_fair_flagged`` (magi_scores)
"""

import warnings

import dagster as dg

with (
    warnings.catch_warnings()
):  # partitioned checks (partitions_def on @asset_check) are a preview feature of Dagster 1.13
    warnings.filterwarnings(
        "ignore", category=dg.PreviewWarning, message="Specifying a partitions_def on an AssetCheckSpec"
    )
    from tinybench_assets.defs.checks import estimation, responses, router

checks = [*responses.checks, *estimation.checks, *router.checks]

__all__ = ["checks"]
