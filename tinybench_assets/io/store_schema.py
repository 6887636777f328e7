"""The DuckDB store's tables: ``SCHEMA``, run once per ``Store`` before its first connection is handed out.

Every statement is idempotent (``CREATE ... IF NOT EXISTS``, ``ADD COLUMN IF NOT EXISTS``), so a file created by an
older version gains what it lacks. The tables are documented in docs/schema.md. A result table not declared here is
created by ``Store.replace_partition`` from the first frame written to it.
"""

SCHEMA = """
CREATE SEQUENCE IF NOT EXISTS drop_seq START 1;
CREATE TABLE IF NOT EXISTS drops (
    drop_id VARCHAR PRIMARY KEY,          -- sha256 of the file's bytes (bound to the leaderboard: drop_ids)
    seq BIGINT NOT NULL,                  -- ingestion order; later drops win on conflicting cells
    path VARCHAR NOT NULL,                -- landing path, relative to the landing folder
    leaderboard VARCHAR NOT NULL,
    format VARCHAR NOT NULL,              -- long_csv | long_parquet | routerdc_json | tinybenchmarks_pickle
                                          -- | wide_csv | wide_parquet | matrix_csv | matrix_parquet
                                          -- | harness_jsonl | prices_csv | prices_parquet
    kind VARCHAR NOT NULL,                -- responses | items | full_scores | prices
    n_rows BIGINT NOT NULL,
    partitions VARCHAR NOT NULL,          -- comma-separated scenario partition keys
    status VARCHAR NOT NULL,              -- active | superseded (a newer version of the same path landed)
    ingested_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS landed_responses (
    drop_id VARCHAR NOT NULL, leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL,
    subscenario VARCHAR NOT NULL, item VARCHAR NOT NULL, model VARCHAR NOT NULL, score DOUBLE NOT NULL
);
CREATE TABLE IF NOT EXISTS landed_costs (  -- per-(model, item) cost from wide tables' <model>|total_cost columns
    drop_id VARCHAR NOT NULL, leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL,
    item VARCHAR NOT NULL, model VARCHAR NOT NULL, cost DOUBLE NOT NULL CHECK (cost >= 0 AND isfinite(cost))
);
CREATE TABLE IF NOT EXISTS landed_response_tokens (  -- per-(model, item) answer length from wide tables' response text
    drop_id VARCHAR NOT NULL, leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL,
    item VARCHAR NOT NULL, model VARCHAR NOT NULL, tokens BIGINT NOT NULL CHECK (tokens >= 0)
);
CREATE TABLE IF NOT EXISTS landed_prices (  -- a leaderboard's prices file (prices.csv), one row per model; NULL = not given
    drop_id VARCHAR NOT NULL, leaderboard VARCHAR NOT NULL, model VARCHAR NOT NULL,
    cost_per_question DOUBLE CHECK (cost_per_question >= 0 AND isfinite(cost_per_question)),
    input_per_mtok DOUBLE CHECK (input_per_mtok >= 0 AND isfinite(input_per_mtok)),
    output_per_mtok DOUBLE CHECK (output_per_mtok >= 0 AND isfinite(output_per_mtok)),
    output_tokens DOUBLE CHECK (output_tokens >= 0 AND isfinite(output_tokens))
);
CREATE TABLE IF NOT EXISTS items (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, item VARCHAR NOT NULL,
    subscenario VARCHAR NOT NULL, text VARCHAR, split VARCHAR, drop_id VARCHAR NOT NULL,
    PRIMARY KEY (leaderboard, scenario, item)
);
CREATE TABLE IF NOT EXISTS full_scores (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, model VARCHAR NOT NULL,
    full_score DOUBLE NOT NULL, split VARCHAR, drop_id VARCHAR NOT NULL,
    PRIMARY KEY (leaderboard, scenario, model)
);
CREATE TABLE IF NOT EXISTS scenarios (
    partition_key VARCHAR PRIMARY KEY, leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL,
    binarize_rule VARCHAR NOT NULL, registered_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS quarantine (
    path VARCHAR NOT NULL, sha256 VARCHAR, error VARCHAR NOT NULL, quarantined_to VARCHAR, quarantined_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS responses (
    partition_key VARCHAR NOT NULL, leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL,
    subscenario VARCHAR NOT NULL, item VARCHAR NOT NULL, model VARCHAR NOT NULL, score DOUBLE NOT NULL,
    drop_id VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS matrix_items (
    partition_key VARCHAR NOT NULL, col INTEGER NOT NULL, item VARCHAR NOT NULL, subscenario VARCHAR NOT NULL,
    balance_weight DOUBLE NOT NULL, split VARCHAR, mean_score DOUBLE
);
CREATE TABLE IF NOT EXISTS matrix_models (
    partition_key VARCHAR NOT NULL, "row" INTEGER NOT NULL, model VARCHAR NOT NULL,
    n_items INTEGER NOT NULL, accuracy DOUBLE
);
CREATE TABLE IF NOT EXISTS binarized (
    partition_key VARCHAR NOT NULL, model VARCHAR NOT NULL, item VARCHAR NOT NULL, y UTINYINT NOT NULL
);
CREATE TABLE IF NOT EXISTS binarization (
    partition_key VARCHAR PRIMARY KEY, rule VARCHAR NOT NULL, threshold DOUBLE,
    mean_raw DOUBLE, mean_binary DOUBLE, mean_abs_shift DOUBLE, updated_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS model_splits (
    partition_key VARCHAR NOT NULL, model VARCHAR NOT NULL, split VARCHAR NOT NULL, seed INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS irt_fits (
    partition_key VARCHAR PRIMARY KEY,     -- a scenario key (openllm.mmlu) or a leaderboard (openllm) for the joint fit
    scope VARCHAR NOT NULL,                -- scenario | joint
    dim INTEGER NOT NULL, n_models INTEGER NOT NULL, n_items INTEGER NOT NULL,
    loss DOUBLE, heldout_logloss DOUBLE, heldout_accuracy DOUBLE, heldout_score_mae DOUBLE, n_heldout_models INTEGER,
    val_bias DOUBLE, val_error DOUBLE, seconds DOUBLE, device VARCHAR, fitter VARCHAR, seed INTEGER, updated_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS irt_dims (
    partition_key VARCHAR NOT NULL, dim INTEGER NOT NULL, val_error DOUBLE NOT NULL, val_bias DOUBLE NOT NULL,
    val_error_sd DOUBLE, seconds DOUBLE, chosen BOOLEAN NOT NULL
);
CREATE TABLE IF NOT EXISTS irt_items (
    partition_key VARCHAR NOT NULL, item VARCHAR NOT NULL, scenario VARCHAR NOT NULL, subscenario VARCHAR NOT NULL,
    b DOUBLE NOT NULL, a DOUBLE[] NOT NULL
);
CREATE TABLE IF NOT EXISTS irt_models (
    partition_key VARCHAR NOT NULL, model VARCHAR NOT NULL, theta DOUBLE[] NOT NULL
);
CREATE TABLE IF NOT EXISTS anchors (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, clustering VARCHAR NOT NULL, n INTEGER NOT NULL,
    item VARCHAR NOT NULL, item_index INTEGER NOT NULL, weight DOUBLE NOT NULL
);
-- columns added after the first release: files created before them gain them here
ALTER TABLE anchors ADD COLUMN IF NOT EXISTS n_anchors INTEGER;  -- the scenario's anchor count at budget n
ALTER TABLE drops ADD COLUMN IF NOT EXISTS notes VARCHAR;  -- what the reader decided (matrix orientation, ignored columns)
CREATE TABLE IF NOT EXISTS gpirt_lambdas (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, clustering VARCHAR NOT NULL, n INTEGER NOT NULL,
    fit VARCHAR NOT NULL, lambda_tutorial DOUBLE, lambda_validation DOUBLE, b DOUBLE, v DOUBLE
);
CREATE TABLE IF NOT EXISTS estimator_selection (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, n INTEGER NOT NULL, selector VARCHAR NOT NULL,
    clustering_t1 VARCHAR, estimator_t1 VARCHAR, clustering_t2 VARCHAR, estimator_t2 VARCHAR
);
CREATE TABLE IF NOT EXISTS estimator_validation (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, clustering VARCHAR NOT NULL, n INTEGER NOT NULL,
    estimator VARCHAR NOT NULL, val_mae_t1 DOUBLE, val_mae_t2 DOUBLE, n_val INTEGER
);
CREATE TABLE IF NOT EXISTS estimates (
    leaderboard VARCHAR NOT NULL, model VARCHAR NOT NULL, scenario VARCHAR NOT NULL, clustering VARCHAR NOT NULL,
    estimator VARCHAR NOT NULL, n INTEGER NOT NULL, estimate DOUBLE, lower DOUBLE, upper DOUBLE,
    estimate_t2 DOUBLE, lower_t2 DOUBLE, upper_t2 DOUBLE, truth_t1 DOUBLE, truth_t2 DOUBLE
);
CREATE TABLE IF NOT EXISTS backtest_summary (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, clustering VARCHAR NOT NULL, estimator VARCHAR NOT NULL,
    n INTEGER NOT NULL, mae_t1 DOUBLE, sd_t1 DOUBLE, bias_t1 DOUBLE, coverage_t1 DOUBLE, width_t1 DOUBLE,
    mae_t2 DOUBLE, sd_t2 DOUBLE, coverage_t2 DOUBLE, width_t2 DOUBLE, n_models INTEGER, n_splits INTEGER
);
ALTER TABLE backtest_summary ADD COLUMN IF NOT EXISTS split_kind VARCHAR;  -- grouped (headline) | random
ALTER TABLE backtest_summary ADD COLUMN IF NOT EXISTS mae_t1_lo DOUBLE;  -- 95 % bootstrap interval over test models
ALTER TABLE backtest_summary ADD COLUMN IF NOT EXISTS mae_t1_hi DOUBLE;
ALTER TABLE backtest_summary ADD COLUMN IF NOT EXISTS mae_t2_lo DOUBLE;
ALTER TABLE backtest_summary ADD COLUMN IF NOT EXISTS mae_t2_hi DOUBLE;
CREATE TABLE IF NOT EXISTS evaluations (  -- a new model's estimates (model_evaluation), one version after another
    leaderboard VARCHAR NOT NULL, model VARCHAR NOT NULL, scenario VARCHAR NOT NULL,
    estimate DOUBLE, lower DOUBLE, upper DOUBLE, estimate_t2 DOUBLE, lower_t2 DOUBLE, upper_t2 DOUBLE,
    estimator VARCHAR, estimator_t2 VARCHAR, source VARCHAR,
    n_answers INTEGER NOT NULL, n_anchors INTEGER NOT NULL, anchors_missing INTEGER NOT NULL, notes VARCHAR,
    answers_path VARCHAR NOT NULL, answers_sha256 VARCHAR NOT NULL,
    tiny_benchmark_version VARCHAR NOT NULL,  -- of artifact_sha256 and drop_ids (io/evaluation_rows.py)
    artifact_sha256 VARCHAR NOT NULL, drop_ids VARCHAR NOT NULL,  -- the leaderboard's active drops, comma-separated
    superseded BOOLEAN NOT NULL,  -- a later evaluation of the same leaderboard and model replaced these rows
    evaluated_at TIMESTAMP NOT NULL
);
"""
