"""`gensyn demo`: a whole market on this machine, an honest job settled, a cheater slashed, a report."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table

from gensyn_py.cli.interrupt import wait_for_ctrl_c
from gensyn_py.config import Settings

if TYPE_CHECKING:
    from gensyn_py.explorer.server import ExplorerServer
    from gensyn_py.sim.demo import DemoResult
    from gensyn_py.sim.localnet import LocalNetwork

E18 = 10**18


@click.command()
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep chain state, content store, daemon state and logs here, and keep the chain and the "
                   "explorer serving after the report until Ctrl-C.")
@click.option("--store", default=None,
              help="Content store: a Kubo RPC URL (http://127.0.0.1:5001) for a real IPFS node. "
                   "Default: a local store in the work directory, or GENSYN_STORE when set.")
@click.pass_obj
def demo(settings: Settings, keep: Path | None, store: str | None) -> None:
    """Start anvil and 6 role daemons, settle a 2x2 training job, convict a repro cheater by the dispute game and
    an exact one by the committee, print what happened."""
    from gensyn_py.devnet.compiler import compile_detailed
    from gensyn_py.sim.demo import DemoMarket
    from gensyn_py.sim.localnet import LOCAL_PARAMS, LocalNetwork

    console = Console()  # its width; the report lays itself out to fit (see `actors_view`)
    started = time.perf_counter()
    workdir = keep or Path(tempfile.mkdtemp(prefix="gensyn-demo-"))
    with console.status("compiling contracts…"):
        compiled = compile_detailed()
    console.print(f"[bold]contracts[/] compiled with {compiled.compiler}{' (cached)' if compiled.cached else ''}")
    # The pool hands a repro unit's dispute to the dispute game, which the daemons play; exact units keep the committee.
    net = LocalNetwork(workdir, params={**LOCAL_PARAMS, "disputeGame": 1},
                       store=store or os.environ.get("GENSYN_STORE"))
    explorer: ExplorerServer | None = None
    result: DemoResult | None = None
    try:
        net.start()
        assert net.protocol is not None
        console.print(f"[bold]anvil[/] at {net.url} (a block a second, transactions mined at once); deployed:")
        for name, address in net.protocol.addresses.items():
            console.print(f"  {name:<18} {address}")
        console.print(f"content store: {net.store_spec}")
        explorer = _start_explorer(net, workdir)
        console.print(f"[bold]explorer[/] at {explorer.url} (jobs, units, nodes and disputes, live)")
        market = DemoMarket(net, lambda line: console.print(f"• {line}"))
        result = market.run()
        if keep is not None:  # the report now, then the chain and the explorer stay up until Ctrl-C
            report(console, result, time.perf_counter() - started, workdir)
            console.print(f"[bold]explorer[/] still serving at {explorer.url}, the chain at {net.url}; Ctrl-C stops")
            wait_for_ctrl_c()
    except KeyboardInterrupt:
        if result is None:
            console.print("[yellow]interrupted: stopping every process this demo started[/]")
            raise SystemExit(130) from None
    finally:
        with console.status("stopping the explorer, daemons and anvil…"):
            if explorer is not None:
                explorer.stop()
            net.stop()
    if keep is None:
        assert result is not None
        report(console, result, time.perf_counter() - started, workdir)


def _start_explorer(net: LocalNetwork, workdir: Path) -> ExplorerServer:
    from gensyn_py.explorer.server import ExplorerServer
    from gensyn_py.storage.factory import open_store

    assert net.protocol is not None
    return ExplorerServer(net.protocol, workdir / "explorer.sqlite", open_store(net.store_spec)).start()


def report(console: Console, result: DemoResult, wall: float, workdir: Path) -> None:
    """The closing report: what the two jobs showed, who holds what now, and where the time went."""
    from gensyn_py.sim.demo import ACCURACY_TARGET

    console.rule("what happened")
    console.print(f"job {result.honest_job} (2 rounds x 2 shards): held-out accuracy of the downloaded model "
                  f"[bold]{result.accuracy:.1%}[/] (target {ACCURACY_TARGET:.0%})")
    console.print(f"job {result.cheat_job} (repro): the cheating solver was caught by {result.fraud_detected_by}; the "
                  f"dispute game {result.game_ended or 'decided it'}; the contract alone convicted it and it lost "
                  f"[bold red]{result.cheater_slashed / E18:,.0f}[/] tokens of stake; the unit was redone honestly")
    if result.game_moves:
        console.print("  game moves (gas): " + ", ".join(
            f"{who} {n} ({result.game_gas.get(who, 0):,})" for who, n in sorted(result.game_moves.items())))
    if result.committee_job:
        console.print(f"job {result.committee_job} (exact): the committee voted fraud; the cheater lost "
                      f"[bold red]{result.committee_slashed / E18:,.0f}[/] tokens of stake; the unit was redone "
                      f"honestly")
    console.print(actors_view(console, result))
    total_gas = sum(g for _, g in result.gas.values())
    s = result.seconds
    console.print(f"gas spent by all actors: {total_gas:,}")
    console.print(f"wall time {wall:.1f}s; of the market's {s['total']:.1f}s: training {s['training']:.1f} CPU-s, "
                  f"verification {s['verification']:.1f} CPU-s, protocol waiting (claim auctions, seed blocks, "
                  f"reveal and challenge windows) {s['protocol']:.1f}s")
    console.print(f"chain state, content store, daemon state and logs in {workdir}")


UNBOUNDED = 10_000  # columns: room to measure a table's natural width
COLUMNS = ("actor", "wallet", "stake", "net change", "slashed", "txs", "gas")


def actor_rows(result: DemoResult) -> list[tuple[str, ...]]:
    """One row per actor, in `COLUMNS` order: balances before → after, what was slashed, gas spent."""
    rows: list[tuple[str, ...]] = []
    for name, before in result.before.items():
        after = result.after[name]
        txs, gas = result.gas.get(name, (0, 0))
        rows.append((name, f"{before.wallet / E18:,.0f} → {after.wallet / E18:,.2f}",
                     f"{before.bonded / E18:,.0f} → {after.bonded / E18:,.0f}",
                     f"{(after.total - before.total) / E18:+,.2f}", f"{result.slashed.get(name, 0) / E18:,.0f}",
                     str(txs), f"{gas:,}"))
    return rows


def actors_view(console: Console, result: DemoResult) -> RenderableType:
    """The actors' table where it fits the console whole; otherwise the same figures as key/value lines.

    A rich table wider than its console is squeezed and its cells cut ("…"), as happens at the 80 columns a
    console assumes when its output is not a terminal (a CI log, a pipe). The lines wrap at spaces instead:
    every name and figure is printed whole at any width.
    """
    rows = actor_rows(result)
    table = Table(*COLUMNS)
    for row in rows:
        table.add_row(*row)
    natural = Measurement.get(console, console.options.update_width(UNBOUNDED), table).maximum
    if natural <= console.width:
        return table
    lines = Table.grid(padding=(0, 2))
    lines.add_column(style="bold", no_wrap=True)  # the actor's name, whole
    lines.add_column(overflow="fold")  # its figures wrap (at spaces where they can), never cut
    for row in rows:
        figures = ["   ".join(f"{k} {v}" for k, v in zip(COLUMNS[a:b], row[a:b], strict=True))
                   for a, b in ((1, 3), (3, 7))]  # wallet, stake; net change, slashed, txs, gas
        lines.add_row(row[0], "\n".join(figures))
    return lines
