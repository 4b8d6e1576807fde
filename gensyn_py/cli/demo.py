"""`gensyn demo`: a fresh local chain, the protocol deployed, one whole job played and reported."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from gensyn_py.config import Settings

E18 = 10**18


@click.command()
@click.option("--keep", type=click.Path(path_type=Path), default=None, help="Keep chain state and store here.")
@click.pass_obj
def demo(settings: Settings, keep: Path | None) -> None:
    """Start anvil, deploy, run one job through every protocol step, print what happened."""
    from eth_account import Account
    from web3 import Web3

    from gensyn_py.chain.anvil import DEV_KEYS, AnvilNode
    from gensyn_py.chain.compiler import compile_detailed
    from gensyn_py.chain.contracts import ProtocolContracts
    from gensyn_py.chain.deploy import deploy_protocol
    from gensyn_py.roles.walkthrough import Walkthrough, default_store

    console = Console()
    workdir = keep or Path(tempfile.mkdtemp(prefix="gensyn-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    with console.status("compiling contracts…"):
        compiled = compile_detailed()
    console.print(f"[bold]contracts[/] compiled with {compiled.compiler}{' (cached)' if compiled.cached else ''}")
    with AnvilNode(state_path=workdir / "anvil-state.json", log_path=workdir / "anvil.log") as node:
        w3 = Web3(Web3.HTTPProvider(node.url))
        deployment = deploy_protocol(w3, Account.from_key(DEV_KEYS[0]), compiled.artifacts)
        console.print(f"[bold]anvil[/] at {node.url}; protocol deployed:")
        for name, address in deployment["contracts"].items():
            console.print(f"  {name:<18} {address}")
        protocol = ProtocolContracts(w3, deployment["contracts"], compiled.artifacts, int(w3.eth.chain_id), deployment)
        play = Walkthrough(w3, protocol, default_store(workdir / "store"), lambda line: console.print(f"• {line}"))
        result = play.run()

    console.rule("what happened")
    console.print(f"held-out accuracy of the trained model: [bold]{result.accuracy:.1%}[/]")
    balances = Table("actor", "tokens before", "tokens after", "change", "stake slashed")
    for name, before in result.balances_before.items():
        after = result.balances_after[name]
        slashed = result.slashed.get(name, 0)
        balances.add_row(name, f"{before / E18:,.2f}", f"{after / E18:,.2f}", f"{(after - before) / E18:+,.2f}",
                         f"{slashed / E18:,.2f}")
    console.print(balances)
    gas = Table("actor", "action", "gas")
    for actor, action, used in result.gas:
        gas.add_row(actor, action, f"{used:,}")
    console.print(gas)
    console.print(f"total gas {result.total_gas:,}; wall time {result.seconds['total']:.1f}s "
                  f"(training {result.seconds['training']:.1f}s, verification {result.seconds['verification']:.1f}s)")
    console.print(f"chain state and content store in {workdir}")
