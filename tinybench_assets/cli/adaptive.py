"""``tinybench adaptive``: an adaptive test of a new model on one scenario, item by item or from a batch.

    tinybench adaptive --leaderboard openllm --scenario mmlu --state run.json next [--with-text]
    tinybench adaptive --leaderboard openllm --scenario mmlu --state run.json answer ITEM SCORE
    tinybench adaptive --leaderboard openllm --scenario mmlu --state run.json estimate [--json]
    tinybench adaptive --leaderboard openllm --scenario mmlu run --answers answers.csv [--max-items 30]

Two methods (``--method``; ``auto``, the default, takes ``bank`` when the store holds the scenario's binarized
answers of at least 20 models, else ``irt``):

* ``bank``: the leaderboard's own answers are the prior (core/estimation/adaptive_bank.py): each step asks the item that
  most shrinks the expected posterior variance of the accuracy on the unasked items, the estimate is the asked
  answers plus the unasked items' posterior mean answers. Its settings are tuned on the leaderboard's models
  (whole families held out as validation models, never the tested model) by the first command, in about a
  second, and kept in the state file with the answers. On openllm's grouped backtest 15 bank items beat 30
  static anchors.
* ``irt``: the item with the most information at the model's current ability under the scenario's IRT model
  (fitted by the irt_model asset), p-IRT estimate with the posterior's 90 % interval.

``--state`` is a small JSON file holding the method, its settings and the answers so far; it is created by the
first command. The test stops after ``--max-items`` answers (default 30) or, with ``--target-width W``, once the
90 % interval is at most W wide (accuracy fraction, e.g. 0.08). ``run`` drives the whole test from a file of
answers (CSV item,score or JSON, as ``tinybench estimate`` reads): items the file lacks are skipped. The
budget is the scenario's own (only its asked items). Bad input exits with code 2 and a one-line error on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from tinybench_assets import paths
from tinybench_assets.cli.errors import UsageError

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions


def load_scenario(leaderboard: str, scenario: str | None):
    """(partition key, item ids, a (I, D), b (I,), balance weights (I,), texts {item: text}) from the store."""
    from tinybench_assets.io.drops import partition_key, split_partition_key
    from tinybench_assets.io.store import Store, is_postgres_url

    target = paths.store_target()  # TINYBENCH_STORE (PostgreSQL or a DuckDB path), else the project's DuckDB file
    if not is_postgres_url(target) and not Path(target).exists():
        raise UsageError(f"no DuckDB store at {target}: run `tinybench run-all` first")
    store = Store(target)
    db_path = store.location
    if "irt_items" not in store.tables():
        raise UsageError(f"{db_path}: no IRT fits stored yet (materialize irt_model)")
    keys = store.irt_scenario_keys(leaderboard)
    if not keys:
        raise UsageError(f"leaderboard {leaderboard!r}: no scenario with a fitted IRT model in {db_path}")
    names = [split_partition_key(k)[1] for k in keys]
    if scenario is None:
        if len(keys) > 1:
            raise UsageError(
                f"leaderboard {leaderboard!r} has scenarios {', '.join(names)}: choose one with --scenario"
            )
        scenario = names[0]
    key = partition_key(leaderboard, scenario)
    if key not in keys:
        raise UsageError(f"leaderboard {leaderboard!r} has no fitted scenario {scenario!r} (have: {', '.join(names)})")
    items = store.weighted_irt_items(key)
    texts = {}
    if "items" in store.tables():
        t = store.item_texts(leaderboard, scenario)
        texts = dict(zip(t["item"], t["text"]))
    a = np.array([np.asarray(x, dtype=float) for x in items["a"]])
    return key, items["item"].tolist(), a, items["b"].to_numpy(float), items["w"].to_numpy(float), texts


MIN_BANK_MODELS = 20
TUNED_N = (10, 15, 20, 30)


def _bank(key: str, items: list[str]):
    """The scenario's binarized answers as the bank, models x ``items`` (NaN = missing), or None when too few."""
    import pandas as pd

    from tinybench_assets.io.store import Store, load_matrix

    store = Store(paths.store_target())
    if "binarized" not in store.tables():
        return None
    try:
        m = load_matrix(store, key, binarized=True)
    except LookupError:  # nothing binarized for this scenario
        return None
    bank = pd.DataFrame(m.scores, index=m.models, columns=m.items).reindex(columns=items)
    bank = bank[bank.notna().any(axis=1)]
    return bank if len(bank) >= MIN_BANK_MODELS else None


def _session(args, key, items, a, b, w, state: dict | None):
    from tinybench_assets.core.estimation.adaptive import AdaptiveSession

    state = state or {}
    max_items = args.max_items if args.max_items is not None else state.get("max_items", 30)
    width = args.target_width if args.target_width is not None else state.get("target_width")
    method = state.get("method", "irt" if state.get("asked") else None) if state else None
    if args.method != "auto" and method is not None and method != args.method:
        raise UsageError(f"{args.state}: a {method} test; it cannot go on as --method {args.method}")
    method = method or args.method
    bank = None
    if method in ("auto", "bank"):
        bank = _bank(key, items)
        if bank is None and method == "bank":
            raise UsageError(
                f"{key}: fewer than {MIN_BANK_MODELS} models' binarized answers stored: "
                "materialize binarized_responses, or use --method irt"
            )
        method = "bank" if bank is not None else "irt"
    if method == "bank":
        from tinybench_assets.core.estimation.adaptive_bank import BankSession, bank_matrix, tune_bank
        from tinybench_assets.core.estimation.groups import model_groups

        Y = bank.to_numpy(float)
        params = state.get("bank_params")
        if not params:  # tuned once, on the leaderboard's own models, then kept in the state file
            ns = tuple(sorted({n for n in (*TUNED_N, int(max_items)) if n <= len(items)}))
            params = tune_bank(Y, w, ns, groups=model_groups(bank.index).to_numpy())
        s = BankSession(bank_matrix(Y), items, w, params=params, max_items=max_items, target_width=width)
    else:
        s = AdaptiveSession(a, b, items, w, max_items=max_items, target_width=width)
    try:
        s.restore(state)
    except (KeyError, ValueError) as e:
        raise UsageError(f"{args.state}: {e}") from None
    return s


def _read_state(path: Path | None, key: str) -> dict | None:
    if path is None or not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(state, dict) or state.get("scenario") != key:
        raise UsageError(
            f"{path}: a state file of {state.get('scenario') if isinstance(state, dict) else '?'}, not {key}"
        )
    return state


def _write_state(path: Path | None, key: str, session) -> None:
    if path is not None:
        path.write_text(json.dumps({"scenario": key, **session.state()}, indent=1))


def _report(key: str, session, as_json: bool) -> str:
    e = session.estimate()
    e.setdefault("method", "irt")
    e.update(scenario=key, done=session.done, budget="own", interval_level=e.get("interval_level", 0.9))
    if as_json:
        return json.dumps(e, indent=1)
    return (
        f"{key}: {100 * e['estimate']:.1f} % [{100 * e['lower']:.1f}, {100 * e['upper']:.1f}] (90 % interval) from "
        f"{e['n']} adaptive answers ({e['method']}, own budget){'; done' if e['done'] else ''}"
    )


def adaptive_cmd(args: argparse.Namespace) -> int:
    from tinybench_assets.cli.answers import read_model_answers
    from tinybench_assets.core.tiny_benchmark import AnswerError

    try:
        key, items, a, b, w, texts = load_scenario(args.leaderboard, args.scenario)
        state_path = Path(args.state) if args.state else None
        if args.action in ("next", "answer", "estimate") and state_path is None:
            raise UsageError(f"`{args.action}` needs --state FILE (the answers so far)")
        session = _session(args, key, items, a, b, w, _read_state(state_path, key))
        if args.action == "next":
            item = session.next_item()
            _write_state(state_path, key, session)
            if item is None:
                print(f"done: {session.estimate()['n']} answers; run `estimate`")
            else:
                print(item + (f"\t{texts.get(item, '')}" if args.with_text else ""))
        elif args.action == "answer":
            try:
                score = float(args.score)
            except ValueError:
                raise UsageError(f"score {args.score!r} is not a number") from None
            try:
                session.record(args.item, score)
            except (KeyError, ValueError) as e:
                raise UsageError(str(e).strip('"')) from None
            _write_state(state_path, key, session)
            print(_report(key, session, False))
        elif args.action == "estimate":
            print(_report(key, session, args.json))
        else:  # run: the whole test from a file of answers
            answers = read_model_answers(args.answers)
            skipped = 0
            while not session.done:
                item = session.next_item()
                if item is None:
                    break
                if item not in answers:  # the file lacks it: never ask it again
                    session.skip(item)
                    skipped += 1
                    continue
                session.record(item, answers[item])
            _write_state(state_path, key, session)
            print(_report(key, session, args.json))
            if skipped and not args.json:
                print(f"note: {skipped} chosen item(s) were not in {args.answers} and were skipped")
    except (UsageError, AnswerError) as e:
        print(f"tinybench adaptive: error: {e}", file=sys.stderr)
        return 2
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "adaptive",
        help="adaptive test of a new model on one scenario (next / answer / estimate / run)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--leaderboard", required=True)
    p.add_argument("--scenario", help="scenario (needed when the leaderboard has several)")
    p.add_argument("--state", help="JSON file with the answers so far (created when missing)")
    p.add_argument("--max-items", type=int, default=None, help="stop after this many answers (default 30)")
    p.add_argument("--target-width", type=float, default=None, help="also stop once the 90%% interval is this narrow")
    p.add_argument(
        "--method",
        choices=("auto", "bank", "irt"),
        default="auto",
        help="bank: the leaderboard's answers as the prior; irt: the IRT model (auto: bank when stored)",
    )
    acts = p.add_subparsers(dest="action", required=True)
    n = acts.add_parser("next", help="print the next item to ask")
    n.add_argument("--with-text", action="store_true", help="also print the item's text")
    a = acts.add_parser("answer", help="record the model's score on an item")
    a.add_argument("item")
    a.add_argument("score")
    e = acts.add_parser("estimate", help="print the current estimate")
    e.add_argument("--json", action="store_true")
    r = acts.add_parser("run", help="run the whole test, reading the answers from a file")
    r.add_argument(
        "--answers",
        required=True,
        help="CSV item,score, JSON, or a harness samples file or folder, as `tinybench estimate` reads",
    )
    r.add_argument("--json", action="store_true")
    p.set_defaults(func=adaptive_cmd)
