"""`gensyn node ...`: an operator's own node: its status, stake, credit, price and hardware.

Every transaction is simulated before it is sent (`gensyn_py/chain/tx.py`), so what the contract would refuse
(unbonding more than is free, withdrawing before the release time) is refused with the decoded reason and
nothing is sent.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

from gensyn_py.cli.job import account_options, load_account
from gensyn_py.config import Settings

if TYPE_CHECKING:
    from eth_account.signers.local import LocalAccount

    from gensyn_py.chain.contracts import ProtocolContracts
    from gensyn_py.node.operator import NodeStatus


@click.group()
def node() -> None:
    """Your node: status, unbond, withdraw, claim, set-price, update-hardware."""


def _protocol(settings: Settings) -> ProtocolContracts:
    from gensyn_py.chain.client import connect
    from gensyn_py.chain.contracts import ProtocolContracts

    return ProtocolContracts.load(connect(settings.rpc_url, settings.chain_id), settings.deployments_dir)


def _account(key: str | None, keystore: Path | None, password: str | None) -> LocalAccount:
    account = load_account(key, keystore, password)
    if account is None:
        raise click.UsageError("no account: pass --key or --keystore (or set GENSYN_KEY / GENSYN_KEYSTORE)")
    return account


def _signed(settings: Settings, key: str | None, keystore: Path | None,
            password: str | None) -> tuple[LocalAccount, ProtocolContracts]:
    """The operator's account and the protocol it sends to."""
    return _account(key, keystore, password), _protocol(settings)


def _when(release: int, now: int) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(release))
    return f"{stamp} (now)" if release <= now else f"{stamp} (in {release - now} s)"


def _print_status(s: NodeStatus) -> None:
    from gensyn_py.node.operator import device_name, role_names
    from gensyn_py.requester.amounts import format_tokens

    console = Console()
    if not s.registered:
        console.print(f"{s.address} is not registered (start a role daemon, which registers it)")
        return
    table = Table(show_header=False, title=f"node {s.address} at block {s.block}", title_justify="left")
    table.add_row("roles", ", ".join(role_names(s.roles)))
    hw = s.hardware
    table.add_row("hardware", f"{device_name(hw.device_class)}, {hw.memory_mb} MiB, "
                  f"{hw.throughput / 1000:.1f} GFLOP/s")
    table.add_row("price per unit", format_tokens(hw.price_per_unit))
    table.add_row("replay class", "none" if not any(s.replay_class) else "0x" + s.replay_class.hex())
    table.add_row("stake", f"{format_tokens(s.bonded)} bonded, {format_tokens(s.locked)} locked, "
                  f"{format_tokens(s.free)} free")
    if s.unbonding.amount:
        table.add_row("unbonding", f"{format_tokens(s.unbonding.amount)}, withdrawable "
                      f"{_when(s.unbonding.release, s.now)}")
    table.add_row("validator set", "in" if s.in_validator_set else
                  f"out (needs the validator role, no jail, {format_tokens(s.min_validator_stake)} bonded)")
    r = s.reputation
    table.add_row("reputation", f"{r.completed} completed, {r.missed} missed, {r.frauds} frauds")
    table.add_row("jailed", "no" if not s.jailed_until else f"until {_when(s.jailed_until, s.now)}")
    table.add_row("claimable credit", format_tokens(s.credit))
    table.add_row("solving", ", ".join(f"unit {u} ({st.name})" for u, st in s.solving) or "nothing")
    table.add_row("validating", ", ".join(f"unit {u} ({st.name})" for u, st in s.validating) or "nothing")
    console.print(table)


@node.command()
@click.argument("address", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON object (token amounts in base units, as strings).")
@account_options
@click.pass_obj
def status(settings: Settings, address: str | None, as_json: bool, key: str | None, keystore: Path | None,
           password: str | None) -> None:
    """Stake, locks, unbonding, reputation, jail, credit and units in flight of ADDRESS (default: your account)."""
    from web3 import Web3

    from gensyn_py.node.operator import node_status

    if address is None:
        address = _account(key, keystore, password).address
    elif not Web3.is_address(address):
        raise click.BadParameter(f"{address!r} is not an address", param_hint="ADDRESS")
    s = node_status(_protocol(settings), address)
    if as_json:
        click.echo(json.dumps(s.to_json()))
    else:
        _print_status(s)


@node.command()
@click.argument("amount", metavar="TOKENS")
@account_options
@click.pass_obj
def unbond(settings: Settings, amount: str, key: str | None, keystore: Path | None, password: str | None) -> None:
    """Start unbonding TOKENS of free stake (withdrawable after the unbonding delay)."""
    from gensyn_py.requester.amounts import format_tokens, parse_tokens

    wei = parse_tokens(amount, "TOKENS")
    account, protocol = _signed(settings, key, keystore, password)
    registry = protocol.registry(protocol.sender(account))
    registry.unbond(wei)
    u = registry.unbonding_of(account.address)
    now = int(protocol.w3.eth.get_block("latest")["timestamp"])
    click.echo(f"unbonding {format_tokens(wei)} tokens; {format_tokens(u.amount)} withdrawable "
               f"{_when(u.release, now)}")


@node.command()
@account_options
@click.pass_obj
def withdraw(settings: Settings, key: str | None, keystore: Path | None, password: str | None) -> None:
    """Withdraw stake whose unbonding delay has passed to your wallet."""
    from gensyn_py.requester.amounts import format_tokens

    account, protocol = _signed(settings, key, keystore, password)
    registry = protocol.registry(protocol.sender(account))
    amount = registry.unbonding_of(account.address).amount
    registry.withdraw()
    click.echo(f"withdrew {format_tokens(amount)} tokens to {account.address}")


@node.command()
@account_options
@click.pass_obj
def claim(settings: Settings, key: str | None, keystore: Path | None, password: str | None) -> None:
    """Withdraw your credit from the pool (fees earned, rewards, returned bonds)."""
    from gensyn_py.requester.amounts import format_tokens

    account, protocol = _signed(settings, key, keystore, password)
    pool = protocol.pool(protocol.sender(account))
    amount = pool.credit(account.address)
    if amount == 0:
        click.echo("no credit to withdraw")
        return
    pool.claim_credit()
    click.echo(f"withdrew {format_tokens(amount)} tokens to {account.address}")


@node.command("set-price")
@click.argument("price", metavar="TOKENS")
@account_options
@click.pass_obj
def set_price(settings: Settings, price: str, key: str | None, keystore: Path | None, password: str | None) -> None:
    """Ask TOKENS per unit from now on (units already claimed keep their price)."""
    from dataclasses import replace

    from gensyn_py.requester.amounts import format_tokens, parse_tokens

    wei = parse_tokens(price, "TOKENS")
    account, protocol = _signed(settings, key, keystore, password)
    registry = protocol.registry(protocol.sender(account))
    registry.update_hardware(replace(registry.hardware_of(account.address), price_per_unit=wei))
    click.echo(f"price per unit: {format_tokens(wei)} tokens")


@node.command("update-hardware")
@click.option("--measure", "do_measure", is_flag=True, help="Measure this machine (device, memory, throughput).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None, help="Device class to declare.")
@click.option("--memory-mb", type=click.IntRange(min=1), default=None, help="Memory to declare (MiB).")
@click.option("--throughput", type=click.IntRange(min=1), default=None, help="Throughput to declare (MFLOP/s).")
@account_options
@click.pass_obj
def update_hardware(settings: Settings, do_measure: bool, device: str | None, memory_mb: int | None,
                    throughput: int | None, key: str | None, keystore: Path | None, password: str | None) -> None:
    """Declare new hardware (measured, or the fields given; the others and the price stay). A validator that
    changes device class moves to that class's validator set."""
    from dataclasses import replace

    from gensyn_py.node.hardware import measure
    from gensyn_py.node.operator import device_name
    from gensyn_py.types import DEVICE_CLASSES

    if not (do_measure or device or memory_mb or throughput):
        raise click.UsageError("nothing to change: give --measure or --device/--memory-mb/--throughput")
    account, protocol = _signed(settings, key, keystore, password)
    registry = protocol.registry(protocol.sender(account))
    hw = registry.hardware_of(account.address)
    if do_measure:
        hw = replace(measure().declared(), price_per_unit=hw.price_per_unit)
    hw = replace(hw, device_class=DEVICE_CLASSES[device] if device else hw.device_class,
                 memory_mb=memory_mb or hw.memory_mb, throughput=throughput or hw.throughput)
    registry.update_hardware(hw)
    click.echo(f"hardware: {device_name(hw.device_class)}, {hw.memory_mb} MiB, {hw.throughput / 1000:.1f} GFLOP/s")
