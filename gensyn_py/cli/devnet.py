"""`gensyn devnet up|down|status`."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from gensyn_py.config import Settings


@click.group()
def devnet() -> None:
    """A local anvil chain with the protocol deployed and dev accounts funded."""


@devnet.command()
@click.option("--port", default=8545, show_default=True)
@click.pass_obj
def up(settings: Settings, port: int) -> None:
    """Start anvil (state persisted under .devnet/), deploy, fund accounts, print addresses."""
    from gensyn_py.devnet import devnet as dn

    console = Console()
    with console.status("starting anvil and deploying…"):
        info, started = dn.up(settings.devnet_dir, settings.deployments_dir, port=port)
    console.print(f"devnet {'started' if started else 'already running'} at {info.url} (chain {info.chain_id})")
    if started:
        console.print("contracts deployed and dev accounts funded" if info.deployed_now else "saved chain state loaded")
    table = Table("contract", "address")
    for name, address in info.deployment["contracts"].items():
        table.add_row(name, address)
    console.print(table)


@devnet.command()
@click.pass_obj
def down(settings: Settings) -> None:
    """Stop the devnet; its chain state is kept for the next `up`."""
    from gensyn_py.devnet import devnet as dn

    click.echo("devnet stopped" if dn.down(settings.devnet_dir) else "no devnet was running")


@devnet.command()
@click.pass_obj
def status(settings: Settings) -> None:
    """Show the chain, contracts, registered nodes and jobs."""
    from web3 import Web3

    from gensyn_py.devnet import devnet as dn
    from gensyn_py.devnet.status import protocol_summary

    info = dn.require_running(settings.devnet_dir)
    w3 = Web3(Web3.HTTPProvider(info.url))
    console = Console()
    console.print(f"chain {info.chain_id} at {info.url}, block {w3.eth.block_number}")
    table = Table("contract", "address", "code bytes")
    for name, address in info.deployment["contracts"].items():
        table.add_row(name, address, str(len(w3.eth.get_code(address))))
    console.print(table)
    for key, value in protocol_summary(w3, info.deployment).items():
        console.print(f"{key}: {value}")
