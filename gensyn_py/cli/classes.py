"""`gensyn nodes class|classes`: this machine's replay class, and the network's classes with their nodes.

`exact` units are solved, validated and judged only within the solver's replay class
(gensyn_py/node/replay_class.py); `repro` units by anyone. The listing shows which classes can take exact work.
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from gensyn_py.config import Settings


@click.group()
def nodes() -> None:
    """The network's nodes: replay classes."""


@nodes.command("class")
@click.option("--json", "as_json", is_flag=True, help="Print the class id and the description as JSON.")
def class_cmd(as_json: bool) -> None:
    """Measure this machine's replay class (what decides exact-mode bits) and print it. Offline."""
    from gensyn_py.node.replay_class import measure

    rc = measure()
    if as_json:
        click.echo(json.dumps({"classId": "0x" + rc.class_id.hex(), "description": rc.description,
                               "fields": dict(rc.fields)}, indent=2))
        return
    click.echo(rc.summary())
    click.echo(f"class id 0x{rc.class_id.hex()}")
    for key in sorted(rc.fields):
        click.echo(f"  {key}: {rc.fields[key]}")


@nodes.command("classes")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per class.")
@click.pass_obj
def classes_cmd(settings: Settings, as_json: bool) -> None:
    """List the network's replay classes: id, description, validators (who can check its exact units), solvers."""
    from gensyn_py.chain.classes import list_classes
    from gensyn_py.chain.client import connect
    from gensyn_py.chain.contracts import ProtocolContracts
    from gensyn_py.node.replay_class import ReplayClass, short

    protocol = ProtocolContracts.load(connect(settings.rpc_url, settings.chain_id), settings.deployments_dir)
    rows = list_classes(protocol)
    if as_json:
        for r in rows:
            click.echo(json.dumps({"classId": "0x" + r.class_id.hex(), "description": r.description,
                                   "validators": r.validators, "solvers": r.solvers, "nodes": list(r.nodes)}))
        return
    table = Table("class", "description", "validators", "solvers", title="replay classes (exact units stay in one)",
                  title_justify="left")
    for r in rows:
        try:
            fields = json.loads(r.description)
            about = ReplayClass(fields).summary().split(": ", 1)[1] if isinstance(fields, dict) else r.description
        except ValueError:
            about = r.description
        table.add_row(short(r.class_id), about, str(r.validators), str(r.solvers))
    console = Console()
    console.print(table if rows else "no node declares a replay class: only repro jobs can be verified")
