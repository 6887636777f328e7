"""The estimation assets' two kinds of leaderboard (defs/estimation_boards.py): one interface, chosen by size, so the
assets do not branch on board size (the assets themselves are exercised end to end in test_estimation_assets.py)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from tinybench_assets.defs.assets.estimation import EstimationConfig
from tinybench_assets.defs.estimation_boards import BigBoard, SmallBoard, board_for

ASSETS = Path(__file__).resolve().parents[2] / "tinybench_assets" / "defs" / "assets" / "estimation.py"


@pytest.mark.parametrize("models, kind", [(10, SmallBoard), (49, SmallBoard), (50, BigBoard), (4000, BigBoard)])
def test_board_for_picks_the_kind_by_size(models, kind):
    board = board_for(models, EstimationConfig(min_models=50, min_small_models=10), "cpu")
    assert type(board) is kind and board.device == "cpu"


def test_both_kinds_answer_the_same_calls():
    public = {name for name in dir(BigBoard) if not name.startswith("_")}
    assert (
        public
        == {name for name in dir(SmallBoard) if not name.startswith("_")}
        == {"fit", "estimates", "backtest", "export"}
    )
    for name in public:
        assert list(inspect.signature(getattr(BigBoard, name)).parameters) == list(
            inspect.signature(getattr(SmallBoard, name)).parameters
        ), name


def test_the_estimation_assets_do_not_branch_on_board_size():
    names = {
        n.attr if isinstance(n, ast.Attribute) else n.id
        for n in ast.walk(ast.parse(ASSETS.read_text()))
        if isinstance(n, ast.Attribute | ast.Name)
    }
    assert "board_for" in names
    assert not names & {"is_small", "SmallBoardPredictor", "AnchorPredictor", "small_backtest", "export_budgets"}
