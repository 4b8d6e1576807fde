"""`gensyn devnet up|down|status`."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from gensyn_py.config import Settings

# As gensyn_py.devnet.devnet.DEFAULT_PORT / DEFAULT_BLOCK_TIME (not imported here: web3 loads slowly).
DEFAULT_PORT = 8545
DEFAULT_BLOCK_TIME = 1.0


def _mining(block_time: float | None) -> str:
    if block_time is None:
        return "unknown"
    if block_time == 0:
        return "on each transaction only (chain time stands still between them)"
    return f"a block every {block_time:g} s, and each transaction at once"


@click.group()
def devnet() -> None:
    """A local anvil chain with the protocol deployed and dev accounts funded."""


@devnet.command()
@click.option("--port", default=DEFAULT_PORT, show_default=True, help="Port of anvil's RPC on 127.0.0.1.")
@click.option("--block-time", type=click.FloatRange(min=0), default=DEFAULT_BLOCK_TIME, show_default=True,
              metavar="SECONDS",
              help="Mine a block every SECONDS (transactions are also mined at once); 0: only on transactions.")
@click.pass_obj
def up(settings: Settings, port: int, block_time: float) -> None:
    """Start anvil (state persisted under .devnet/), deploy, fund accounts, print addresses."""
    from gensyn_py.devnet import devnet as dn

    console = Console()
    with console.status("starting anvil and deploying…"):
        info, started = dn.up(settings.devnet_dir, settings.deployments_dir, port=port, block_time=block_time)
    console.print(f"devnet {'started' if started else 'already running'} at {info.url} (chain {info.chain_id})")
    if started:
        console.print("contracts deployed and dev accounts funded" if info.deployed_now else "saved chain state loaded")
    elif info.port != port or info.block_time != block_time:
        console.print("the running devnet keeps its port and block time: `gensyn devnet down` first to change them")
    console.print(f"mining: {_mining(info.block_time)}")
    if info.url != settings.rpc_url:
        console.print(f"other commands reach it with GENSYN_RPC_URL={info.url}")
    table = Table("contract", "address")
    for name, address in info.deployment["contracts"].items():
        table.add_row(name, address)
    console.print(table)


@devnet.command()
@click.option("--port", type=int, default=None, help="Stop the devnet only if it serves this port.")
@click.pass_obj
def down(settings: Settings, port: int | None) -> None:
    """Stop the devnet; its chain state is kept for the next `up`."""
    from gensyn_py.devnet import devnet as dn

    stopped = dn.down(settings.devnet_dir, port=port)
    click.echo("devnet stopped" if stopped else "no devnet was running" + (f" on port {port}" if port else ""))


@devnet.command()
@click.option("--port", type=int, default=None,
              help="Read the chain on this port of 127.0.0.1 (default: the port the devnet was started on).")
@click.pass_obj
def status(settings: Settings, port: int | None) -> None:
    """Show the chain, contracts, registered nodes and jobs."""
    from web3 import Web3

    from gensyn_py.devnet import devnet as dn
    from gensyn_py.devnet.status import protocol_summary

    info = dn.require_running(settings.devnet_dir, settings.deployments_dir, port=port)
    w3 = Web3(Web3.HTTPProvider(info.url))
    console = Console()
    latest = w3.eth.get_block("latest")
    console.print(f"chain {info.chain_id} at {info.url}, block {latest['number']}, time {latest['timestamp']}")
    console.print(f"mining: {_mining(info.block_time)}")
    table = Table("contract", "address", "code bytes")
    for name, address in info.deployment["contracts"].items():
        table.add_row(name, address, str(len(w3.eth.get_code(address))))
    console.print(table)
    for key, value in protocol_summary(w3, info.deployment).items():
        console.print(f"{key}: {value}")
