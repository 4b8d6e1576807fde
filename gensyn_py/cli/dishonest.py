"""`python -m gensyn_py.cli.dishonest solver|validator run`: dishonest nodes for the tests and the demo.

The same options as `gensyn solver|validator run`, plus what makes the node dishonest. Kept out of the
`gensyn` command so that no operator's node carries a cheat; the classes live in `sim/dishonest.py`.
"""

from __future__ import annotations

from typing import Any

import click

from gensyn_py.cli.main import GensynGroup
from gensyn_py.cli.nodes import build_config, node_options, price_option, tokens_to_wei
from gensyn_py.config import Settings


@click.group(cls=GensynGroup)
@click.pass_context
def dishonest(ctx: click.Context) -> None:
    """Role daemons that cheat, for tests and the demo."""
    ctx.obj = Settings.from_env()


@dishonest.group()
def solver() -> None:
    """A solver that commits faked work."""


@solver.command("run")
@node_options
@price_option
@click.option("--cheat", required=True, help="The cheat to play (a name in gensyn_py/sim/cheats.py).")
@click.pass_obj
def solver_run(settings: Settings, price: float, cheat: str, **opts: Any) -> None:
    """Claim and commit units like a solver, faking the work with `--cheat`."""
    from gensyn_py.sim.dishonest import CheatingSolver

    config, state_dir = build_config(settings, "solver", opts, tokens_to_wei(price))
    raise SystemExit(CheatingSolver(config, state_dir / "records", cheat, device=opts["device"]).run_forever())


@dishonest.group()
def validator() -> None:
    """A validator that accepts without replaying, or reports available data missing."""


@validator.command("run")
@node_options
@click.option("--lazy", is_flag=True, help="Accept and vote without replaying.")
@click.option("--false-report", is_flag=True, help="Report each unit's data unavailable once, falsely.")
@click.pass_obj
def validator_run(settings: Settings, lazy: bool, false_report: bool, **opts: Any) -> None:
    """Take draws and committee seats like a validator, but never replay (`--lazy`) or first claim the data is
    missing (`--false-report`)."""
    from gensyn_py.sim.dishonest import FalseReporter, LazyValidator

    if lazy == false_report:
        raise click.UsageError("pass exactly one of --lazy and --false-report")
    config, _ = build_config(settings, "validator", opts)
    kind = LazyValidator if lazy else FalseReporter
    raise SystemExit(kind(config, device=opts["device"]).run_forever())


if __name__ == "__main__":
    dishonest()
