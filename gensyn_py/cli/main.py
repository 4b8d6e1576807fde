"""The `gensyn` command: one click group, each command thin."""

from __future__ import annotations

import sys

import click

from gensyn_py.config import Settings
from gensyn_py.errors import GensynError


class GensynGroup(click.Group):
    """Turns any GensynError into one clear line and exit code 1."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except GensynError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(1)


@click.group(cls=GensynGroup)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Verifiable, decentralized training on an EVM chain."""
    ctx.obj = Settings.from_env()


def _register() -> None:
    from gensyn_py.cli.classes import nodes
    from gensyn_py.cli.data import data
    from gensyn_py.cli.demo import demo
    from gensyn_py.cli.devnet import devnet
    from gensyn_py.cli.explorer import explorer
    from gensyn_py.cli.job import job
    from gensyn_py.cli.nodes import challenger, solver, validator
    from gensyn_py.cli.operator import node

    cli.add_command(data)
    cli.add_command(devnet)
    cli.add_command(demo)
    cli.add_command(explorer)
    cli.add_command(job)
    cli.add_command(nodes)
    cli.add_command(node)
    for role in (solver, validator, challenger):
        cli.add_command(role)


_register()
