"""A leaderboard's prices file (``prices.csv`` / ``.parquet``): both layouts, token prices from the question's length,
landed costs winning, bad files naming file, row and column, a changed file superseding the old, and the data-version
property (a prices drop changes the prices' version, never a partition's responses version; only the cost assets turn
stale). The leaderboard is the head of RouteLLM's real GSM8K table (../shared/data/routellm)."""

import math

import dagster as dg
import pandas as pd
import pytest

from tinybench_assets.io.drops import DropError, read_drop
from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.price_drops import DEFAULT_OUTPUT_TOKENS, estimate_tokens, question_costs
from tinybench_assets.io.store import Store
from tinybench_assets.orchestration.versions import landing_version, partition_version, prices_version
from tinybench_assets_tests.conftest import SHARED

WEAK, STRONG = "mistralai/Mixtral-8x7B-Instruct-v0.1", "gpt-4-1106-preview"
KEY = "routellm.gsm8k"
N = 12


@pytest.fixture()
def board(tmp_path):
    """A landing folder with the first N questions of RouteLLM's GSM8K table in ``routellm/``, and its store."""
    incoming = tmp_path / "incoming"
    (incoming / "routellm").mkdir(parents=True)
    head = pd.read_csv(SHARED / "routellm" / "gsm8k.csv", nrows=N)
    head.to_csv(incoming / "routellm" / "gsm8k.csv", index=False)
    return {
        "incoming": incoming,
        "quarantine": tmp_path / "quarantine",
        "store": Store(tmp_path / "tb.duckdb"),
        "head": head,
    }


def write_prices(board, text: str, name: str = "prices.csv"):
    path = board["incoming"] / "routellm" / name
    path.write_text(text)
    return path


def ingest(board):
    return ingest_landing(board["store"], board["incoming"], board["quarantine"])


def texts(board) -> dict[str, str]:
    """item id -> question text, as the wide reader names the rows (``gsm8k.<row>``)."""
    return {f"gsm8k.{i}": t for i, t in enumerate(board["head"]["prompt"])}


def test_flat_prices_make_cost_the_share_of_strong_calls(board):
    write_prices(board, f"model,cost_per_question\n{STRONG},1\n{WEAK},0\n")
    report = ingest(board)
    assert sorted(report.ingested) == ["routellm/gsm8k.csv", "routellm/prices.csv"] and not report.quarantined
    assert report.partitions == {KEY}  # the prices file touches no partition
    drops = board["store"].query("SELECT path, kind, format, n_rows, partitions FROM drops ORDER BY path")
    assert drops.iloc[1].tolist() == ["routellm/prices.csv", "prices", "prices_csv", 2, ""]
    costs = board["store"].costs(KEY)
    assert list(costs.columns) == ["model", "item", "cost"] and len(costs) == 2 * N  # every question, both models
    assert (costs.loc[costs["model"] == STRONG, "cost"] == 1).all() and (
        costs.loc[costs["model"] == WEAK, "cost"] == 0
    ).all()


def test_token_prices_cost_from_question_length_and_layouts_mix(board):
    # the strong model by the token (with its answer length), the weak one by the token (default length) in parquet; the
    # drop carries no response text (the next tests cover it)
    board["head"].filter(regex="^(?!.*_response$)").to_csv(board["incoming"] / "routellm" / "gsm8k.csv", index=False)
    pd.DataFrame(
        {
            "model": [STRONG, WEAK],
            "cost_per_question": [None, None],
            "input_per_mtok": [10.0, 0.6],
            "output_per_mtok": [30.0, 0.6],
            "output_tokens": [200.0, None],
            "note": ["a", "b"],
        }
    ).to_parquet(board["incoming"] / "routellm" / "prices.parquet", index=False)
    report = ingest(board)
    assert "ignored columns: 'note'" in report.notes["routellm/prices.parquet"]
    costs = board["store"].costs(KEY).set_index(["model", "item"])["cost"]
    assert len(costs) == 2 * N
    for item, text in texts(board).items():
        tokens = math.ceil(len(text) / 4)
        assert costs[(STRONG, item)] == pytest.approx((10.0 * tokens + 30.0 * 200) / 1e6)
        assert costs[(WEAK, item)] == pytest.approx((0.6 * tokens + 0.6 * DEFAULT_OUTPUT_TOKENS) / 1e6)
    long_q = max(texts(board), key=lambda i: len(texts(board)[i]))
    short_q = min(texts(board), key=lambda i: len(texts(board)[i]))
    assert costs[(STRONG, long_q)] > costs[(STRONG, short_q)]  # a longer question costs more
    # a row may carry a flat price instead (it wins over token prices on the same row); a question without text
    # gets no token-priced cost
    mixed = pd.DataFrame(
        {
            "model": ["a", "b"],
            "cost_per_question": [0.5, float("nan")],
            "input_per_mtok": [9.0, 1.0],
            "output_per_mtok": [9.0, 2.0],
            "output_tokens": [float("nan"), 10.0],
        }
    )
    got = question_costs(mixed, pd.DataFrame({"item": ["q1", "q2"], "text": ["x" * 41, None]}))
    assert got.to_dict("records") == [
        {"model": "a", "item": "q1", "cost": 0.5},
        {"model": "a", "item": "q2", "cost": 0.5},
        {"model": "b", "item": "q1", "cost": pytest.approx((11 + 20) / 1e6)},
    ]
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2 and math.isnan(estimate_tokens(None))


def test_landed_costs_win_over_prices(board):
    head = board["head"].assign(**{f"{STRONG}|total_cost": 0.01})  # the drop prices the strong model's calls itself
    head.to_csv(board["incoming"] / "routellm" / "gsm8k.csv", index=False)
    write_prices(board, f"model,cost_per_question\n{STRONG},1\n{WEAK},0.001\nnot-in-the-drop,5\n")
    ingest(board)
    costs = board["store"].costs(KEY)
    per_model = costs.groupby("model")["cost"].agg(["min", "max", "count"])
    assert per_model.loc[STRONG].tolist() == [0.01, 0.01, N]  # landed, not the price
    assert per_model.loc[WEAK].tolist() == [0.001, 0.001, N]  # no landed cost: priced
    assert "not-in-the-drop" not in per_model.index  # a price for a model the partition lacks adds nothing


def test_models_without_a_price_get_no_costs(board):
    write_prices(board, f"model,cost_per_question\n{STRONG},1\n")
    ingest(board)
    assert set(board["store"].costs(KEY)["model"]) == {STRONG}  # incomplete: the router asset treats it as no costs


@pytest.mark.parametrize(
    "text, row, column, problem",
    [
        (f"model,cost_per_question\n{STRONG},-1\n", 1, "cost_per_question", "is negative"),
        (f"model,cost_per_question\n{STRONG},1\n{WEAK},cheap\n", 2, "cost_per_question", "'cheap' is not a number"),
        (f"model,cost_per_question\n{STRONG},inf\n", 1, "cost_per_question", "is not finite"),
        (f"model,cost_per_question\n{STRONG},1\n{WEAK},\n", 2, "cost_per_question", "no price (empty or NaN)"),
        (f"model,cost_per_question\n{STRONG},1\n{STRONG},2\n", 2, "model", "listed twice (rows 1 and 2)"),
        (f"model,input_per_mtok\n{STRONG},3\n", 1, "output_per_mtok", "input_per_mtok without output_per_mtok"),
        (f"model,input_per_mtok,output_per_mtok,output_tokens\n{STRONG},3,4,-5\n", 1, "output_tokens", "is negative"),
        (f"model,price,currency\n{STRONG},1,usd\n", None, "price", "no price column"),
        (f"name,cost_per_question\n{STRONG},1\n", None, "model", "needs a 'model' column"),
        (",cost_per_question\n,1\n", None, "model", "needs a 'model' column"),
        ("model,cost_per_question\n", None, None, "empty file"),
    ],
)
def test_bad_prices_files_name_file_row_and_column(board, text, row, column, problem):
    path = write_prices(board, text)
    with pytest.raises(DropError) as err:
        read_drop(path, "routellm")
    assert (err.value.path, err.value.row, err.value.column) == (str(path), row, column), str(err.value)
    assert problem in err.value.problem and str(path) in str(err.value)


def test_a_bad_prices_file_is_quarantined_and_the_leaderboard_lands(board):
    write_prices(board, f"model,cost_per_question\n{STRONG},-1\n")
    report = ingest(board)
    assert report.ingested == ["routellm/gsm8k.csv"]
    assert "row 1, column 'cost_per_question'" in report.quarantined["routellm/prices.csv"]
    assert board["store"].costs(KEY).empty


def test_changed_prices_supersede_the_old_and_same_bytes_are_skipped(board):
    store = board["store"]
    write_prices(board, f"model,cost_per_question\n{STRONG},1\n{WEAK},0\n")
    ingest(board)
    first = prices_version(store, "routellm")
    assert ingest(board).skipped == ["routellm/gsm8k.csv", "routellm/prices.csv"]  # the same bytes: nothing new
    write_prices(board, f"model,input_per_mtok,output_per_mtok\n{STRONG},10,30\n{WEAK},0.6,0.6\n")
    assert ingest(board).ingested == ["routellm/prices.csv"]
    status = store.query("SELECT status FROM drops WHERE path = 'routellm/prices.csv' ORDER BY seq")["status"].tolist()
    assert status == ["superseded", "active"]
    assert store.query("SELECT count(*) AS n FROM landed_prices")["n"].iloc[0] == 2  # the old rows are gone
    assert store.prices("routellm")["input_per_mtok"].tolist() == [10.0, 0.6]
    assert (store.costs(KEY)["cost"] < 1).all()  # token prices now, no flat 1
    assert prices_version(store, "routellm") != first


def test_a_prices_drop_changes_the_prices_version_only(board):
    store = board["store"]
    ingest(board)
    responses, prices, landed = partition_version(store, KEY), prices_version(store, "routellm"), landing_version(store)
    write_prices(board, f"model,cost_per_question\n{STRONG},1\n{WEAK},0\n")
    ingest(board)
    assert partition_version(store, KEY) == responses  # raw_responses keeps its version: no IRT fit refits
    assert prices_version(store, "routellm") != prices
    assert landing_version(store) != landed
    assert prices_version(store, "other") == prices  # another leaderboard's prices: untouched


def test_after_a_price_change_only_the_cost_assets_are_stale(board, tmp_path, monkeypatch):
    """Dagster's verdict with refresh.assess's corrections: after a new prices file and an ingest, raw_responses and
    an asset reading only responses are fresh; model_prices and an asset that lists it in deps are to run."""
    from tinybench_assets.defs.assets.prices import model_prices
    from tinybench_assets.defs.assets.responses import landing_ingest, raw_responses
    from tinybench_assets.defs.partitions import scenario_partitions
    from tinybench_assets.defs.resources import LandingResource, StoreResource
    from tinybench_assets.orchestration.refresh import assess, plan

    @dg.asset(partitions_def=scenario_partitions, deps=[raw_responses], code_version="1")
    def fit_like() -> None:  # an IRT fit's place: reads responses only
        return None

    @dg.asset(partitions_def=scenario_partitions, deps=[raw_responses, model_prices], code_version="1")
    def router_like() -> None:  # router_accuracy's place: reads costs
        return None

    db = tmp_path / "tb.duckdb"
    resources = {
        "store": StoreResource(database=str(db)),
        "landing": LandingResource(incoming=str(board["incoming"]), quarantine=str(board["quarantine"])),
    }
    everything = [landing_ingest, raw_responses, model_prices, fit_like, router_like]
    scenario = [raw_responses, model_prices, fit_like, router_like]
    graph = dg.Definitions(assets=everything, resources=resources).get_repository_def().asset_graph
    keys = {a.key for a in scenario}
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:

        def run(selection, partition=None):
            assert dg.materialize(
                everything, selection=selection, partition_key=partition, instance=instance, resources=resources
            ).success

        run([landing_ingest])
        run(scenario, KEY)
        fresh = assess(instance, graph, keys, KEY, Store(db))
        assert plan(graph, fresh.status, fresh.certain) == set()

        write_prices(board, f"model,cost_per_question\n{STRONG},1\n{WEAK},0\n")
        run([landing_ingest])
        after = assess(instance, graph, keys, KEY, Store(db))
        todo = {k.to_user_string() for k in plan(graph, after.status, after.certain)}
        assert todo == {"model_prices", "router_like"}, after.why
        assert "prices changed" in after.why[model_prices.key]


def test_prices_on_postgresql_match_duckdb(board):
    """The same landing folder on both engines: the same prices, costs and prices version, before and after a change."""
    from tinybench_assets.testing.pg_server import PostgresServer

    head = board["head"].assign(**{f"{STRONG}|total_cost": 0.01})
    head.to_csv(board["incoming"] / "routellm" / "gsm8k.csv", index=False)
    write_prices(board, f"model,cost_per_question,input_per_mtok,output_per_mtok\n{WEAK},,0.6,0.6\n{STRONG},1,,\n")
    duck = board["store"]
    with PostgresServer() as server:
        pg = Store(server.create_db("prices"))
        for change in (None, f"model,cost_per_question\n{STRONG},1\n{WEAK},0\n"):
            if change:
                write_prices(board, change)
            for store in (duck, pg):
                assert not ingest_landing(store, board["incoming"], board["quarantine"]).quarantined
            pd.testing.assert_frame_equal(pg.costs(KEY), duck.costs(KEY), check_dtype=False)
            pd.testing.assert_frame_equal(pg.prices("routellm"), duck.prices("routellm"), check_dtype=False)
            pd.testing.assert_frame_equal(pg.response_tokens(KEY), duck.response_tokens(KEY), check_dtype=False)
            assert prices_version(pg, "routellm") == prices_version(duck, "routellm")
        assert len(pg.costs(KEY)) == 2 * N and set(pg.costs(KEY)["cost"]) == {0.0, 0.01}


def test_response_text_prices_output_tokens(board):
    """RouteLLM's ``<model>_response`` columns: a token-priced cell's output tokens are its response's length; a cell
    without response text falls back to the prices file's ``output_tokens``, then the default."""
    head = board["head"].copy()
    missing = head.index[3]
    head.loc[missing, f"{STRONG}_response"] = None
    head.to_csv(board["incoming"] / "routellm" / "gsm8k.csv", index=False)
    write_prices(board, f"model,input_per_mtok,output_per_mtok,output_tokens\n{STRONG},10,30,200\n{WEAK},0.6,0.6,\n")
    report = ingest(board)
    notes = "\n".join(report.notes["routellm/gsm8k.csv"])
    for model in (STRONG, WEAK):
        assert f"'{model}_response' (response text of model '{model}': its length prices output tokens)" in notes
    assert "ignored columns" not in notes
    assert len(board["store"].response_tokens(KEY)) == 2 * N - 1
    costs = board["store"].costs(KEY).set_index(["model", "item"])["cost"]
    assert len(costs) == 2 * N
    for row, (item, text) in enumerate(texts(board).items()):
        tokens_in = math.ceil(len(text) / 4)
        for model, rate_in, rate_out in ((STRONG, 10.0, 30.0), (WEAK, 0.6, 0.6)):
            answer = board["head"][f"{model}_response"].iloc[row]
            tokens_out = 200 if (model, row) == (STRONG, missing) else math.ceil(len(answer) / 4)
            assert costs[(model, item)] == pytest.approx((rate_in * tokens_in + rate_out * tokens_out) / 1e6), (
                model,
                row,
            )
    # a new version of the file without response text supersedes the old tokens: output_tokens, then the default
    board["head"].drop(columns=[f"{STRONG}_response", f"{WEAK}_response"]).to_csv(
        board["incoming"] / "routellm" / "gsm8k.csv", index=False
    )
    ingest(board)
    assert board["store"].query("SELECT count(*) AS n FROM landed_response_tokens")["n"].iloc[0] == 0
    costs = board["store"].costs(KEY).set_index(["model", "item"])["cost"]
    item, text = next(iter(texts(board).items()))
    assert costs[(STRONG, item)] == pytest.approx((10.0 * math.ceil(len(text) / 4) + 30.0 * 200) / 1e6)
    assert costs[(WEAK, item)] == pytest.approx((0.6 * math.ceil(len(text) / 4) + 0.6 * DEFAULT_OUTPUT_TOKENS) / 1e6)


def test_routerbench_model_response_columns_are_recognised(tmp_path):
    """RouterBench's ``<model>|model_response`` (suffix in any case): one token count per scored cell with text."""
    rows = pd.read_csv(SHARED / "routerbench" / "mbpp_train.csv", nrows=6)
    model = "claude-v2"
    rows = rows.rename(columns={f"{model}|model_response": f"{model}|MODEL_RESPONSE"})
    rows.loc[rows.index[1], "gpt-4-1106-preview|model_response"] = None
    path = tmp_path / "mbpp_train.csv"
    rows.to_csv(path, index=False)
    drop = read_drop(path, "routerbench")
    notes = "\n".join(drop.notes)
    assert f"'{model}|MODEL_RESPONSE' (response text of model '{model}': its length prices output tokens)" in notes
    assert "model_response" not in notes.split("response columns:")[0]  # none listed as ignored
    tokens = drop.response_tokens.set_index(["model", "item"])["tokens"]
    assert len(tokens) == len(drop.responses) - 1  # every scored cell but the one without text
    for i, item in enumerate(rows["sample_id"]):
        assert tokens[(model, item)] == math.ceil(len(rows[f"{model}|MODEL_RESPONSE"].iloc[i]) / 4)
    assert ("gpt-4-1106-preview", rows["sample_id"].iloc[1]) not in tokens.index
    assert drop.kind == "responses" and drop.n_rows == len(drop.responses) + len(drop.items)


def test_a_question_split_over_rows_keeps_each_models_response_text(tmp_path):
    """RouterBench's split rows: a model scored in a second row of the same question id brings its response text along."""
    rows = pd.read_csv(SHARED / "routerbench" / "mbpp_train.csv", nrows=3)
    model, fields = STRONG, [STRONG, f"{STRONG}|model_response", f"{STRONG}|total_cost"]
    extra = rows.iloc[[0]][["sample_id", "prompt", "eval_name", *fields]]  # the strong model's cells of question 0 ...
    rows.loc[rows.index[0], fields] = None  # ... and not in its first row
    path = tmp_path / "mbpp_train.csv"
    pd.concat([rows, extra.reindex(columns=rows.columns)], ignore_index=True).to_csv(path, index=False)
    drop = read_drop(path, "routerbench")
    tokens = drop.response_tokens.set_index(["model", "item"])["tokens"]
    assert tokens[(model, extra["sample_id"].iloc[0])] == math.ceil(len(extra[f"{model}|model_response"].iloc[0]) / 4)
    assert len(tokens) == len(drop.responses)
