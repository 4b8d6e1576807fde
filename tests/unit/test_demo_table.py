"""The demo's closing report reads whole at any width: rendered where the output is not a terminal (a CI log,
a pipe: 80 columns), no cell is cut and every actor's name and figure is there."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from gensyn_py.cli.demo import E18, actor_rows, report
from gensyn_py.sim.accounting import Holding
from gensyn_py.sim.demo import DemoResult

NAMES = ["requester", "solver-1", "solver-2", "validator-1", "validator-2", "validator-3", "challenger-1"]


def result() -> DemoResult:
    """A settled market's figures: wide enough (names, balances, gas) not to fit 80 columns as one table."""
    before = {n: Holding(10_000 * E18, 0 if n == "requester" else 1_000 * E18, 0) for n in NAMES}
    after = {n: Holding(10_000 * E18 + i * 1_234_567 * 10**13 - (10**21 if n == "requester" else 0),
                        500 * E18 if n == "solver-2" else before[n].bonded, 3 * 10**16 * i)
             for i, n in enumerate(NAMES)}
    return DemoResult(
        accuracy=0.934, honest_job=1, cheat_job=2, cheater_slashed=500 * E18, slashed={"solver-2": 500 * E18},
        before=before, after=after, gas={n: (10 + i, 1_234_567 * (i + 1)) for i, n in enumerate(NAMES)},
        seconds={"total": 101.5, "training": 12.25, "verification": 4.5, "protocol": 84.75},
        fraud_detected_by="validator-2",
    )


def rendered(width: int) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width)  # a StringIO: not a terminal, as in a CI log or a pipe
    assert not console.is_terminal
    report(console, result(), 123.4, Path("/tmp/gensyn-demo-x"))
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 60, 200])
def test_no_cell_is_cut_and_every_figure_is_there(width: int) -> None:
    text = rendered(width)
    assert "…" not in text
    words = set(text.split())
    for row in actor_rows(result()):
        for cell in row:
            for word in cell.split():
                assert word in words, f"{word!r} of {row[0]} missing at width {width}"
    assert f"{sum(g for _, g in result().gas.values()):,}" in text


def test_the_table_is_kept_where_it_fits() -> None:
    assert "┃ actor" in rendered(200)  # wide: the table itself, one row per actor
    narrow = rendered(80)
    assert "┃" not in narrow  # too narrow for the table: key/value lines per actor
    assert all(any(line.startswith(name) for line in narrow.splitlines()) for name in NAMES)
