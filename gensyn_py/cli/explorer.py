"""`gensyn explorer`: the protocol's events in a live web app (jobs, units, nodes, disputes, prices)."""

from __future__ import annotations

from pathlib import Path

import click

from gensyn_py.cli.interrupt import wait_for_ctrl_c
from gensyn_py.config import Settings


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="address to serve on")
@click.option("--port", default=8700, show_default=True, type=int, help="port to serve on (0: any free one)")
@click.option("--db", "db_path", type=click.Path(path_type=Path), default=Path(".explorer/index.sqlite"),
              show_default=True, help="the SQLite index (rebuilt from the chain when deleted)")
@click.option("--store", default=None, help="content store for specs, losses and models (default: GENSYN_STORE)")
@click.option("--no-losses", is_flag=True, help="do not replay a step at each checkpoint for the loss chart")
@click.pass_obj
def explorer(settings: Settings, host: str, port: int, db_path: Path, store: str | None, no_losses: bool) -> None:
    """Serve the explorer until Ctrl-C; pages update as blocks arrive."""
    from gensyn_py.chain.client import connect
    from gensyn_py.chain.contracts import ProtocolContracts
    from gensyn_py.explorer.server import ExplorerServer
    from gensyn_py.storage.factory import open_store

    protocol = ProtocolContracts.load(connect(settings.rpc_url, settings.chain_id), settings.deployments_dir)
    server = ExplorerServer(protocol, db_path, open_store(store or settings.store), host, port,
                            compute_losses=not no_losses)
    with server:
        click.echo(f"explorer: {server.url}  (indexed to block {server.indexer.next_block - 1}; Ctrl-C stops)")
        try:
            wait_for_ctrl_c()
        except KeyboardInterrupt:
            click.echo("explorer: stopping")
