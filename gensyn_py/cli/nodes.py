"""`gensyn solver|validator|challenger run`: the role daemons."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gensyn_py.config import Settings
from gensyn_py.node.logs import configure_logging, logging_options

if TYPE_CHECKING:
    from eth_account.signers.local import LocalAccount

    from gensyn_py.node.role import NodeConfig

F = TypeVar("F", bound=Callable[..., Any])


def node_options(fn: F) -> F:
    """Options every role daemon takes."""
    options = [
        click.option("--key", envvar="GENSYN_KEY", default=None, help="Private key (hex). Env GENSYN_KEY."),
        click.option("--keystore", envvar="GENSYN_KEYSTORE", type=click.Path(dir_okay=False, path_type=Path),
                     default=None, help="Encrypted keystore file. Env GENSYN_KEYSTORE."),
        click.option("--password", envvar="GENSYN_PASSWORD", default=None, help="Keystore password."),
        click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Where the daemon keeps its SQLite state (default .gensyn/<role>-<address>)."),
        click.option("--metrics-port", type=int, default=None, help="Serve Prometheus metrics on this port."),
        click.option("--metrics-host", default="127.0.0.1", show_default=True,
                     help="Address the metrics endpoint binds (0.0.0.0 for every interface: only on purpose)."),
        click.option("--poll-interval", type=float, default=1.0, show_default=True, help="Seconds between cycles."),
        click.option("--ws-url", envvar="GENSYN_WS_URL", default=None,
                     help="The node's websocket endpoint (anvil: ws://127.0.0.1:8545): a cycle starts at each new "
                          "block, the poll stays as the fallback. Env GENSYN_WS_URL."),
        click.option("--stake", "stake_tokens", type=float, default=1000.0, show_default=True,
                     help="Tokens to keep bonded."),
        click.option("--device", default=None, help="cpu or cuda (default: cuda when available)."),
        click.option("--confirmations", type=int, default=0, show_default=True,
                     help="Blocks an event must be buried under before it is acted on."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return logging_options(fn)


price_option = click.option("--price", type=float, default=5.0, show_default=True, help="Tokens asked per unit.")


def tokens_to_wei(tokens: float) -> int:
    from gensyn_py.node.role import E18

    return int(tokens * E18)


def _account(key: str | None, keystore: Path | None, password: str | None) -> LocalAccount:
    from gensyn_py.chain.accounts import from_keystore, from_private_key
    from gensyn_py.errors import ConfigError

    if keystore is not None:
        if password is None:
            password = click.prompt("keystore password", hide_input=True)
        return from_keystore(keystore, password)
    if key:
        return from_private_key(key)
    raise ConfigError("no account: pass --key or --keystore (or set GENSYN_KEY / GENSYN_KEYSTORE)")


def build_config(settings: Settings, role: str, opts: dict[str, Any], price: int = 0) -> tuple[NodeConfig, Path]:
    """Connect, load the deployment, open the store and state, measure the hardware."""
    from gensyn_py.chain.client import connect
    from gensyn_py.chain.contracts import ProtocolContracts
    from gensyn_py.node.hardware import measure
    from gensyn_py.node.metrics import DaemonMetrics
    from gensyn_py.node.replay_class import measure as measure_class
    from gensyn_py.node.role import E18, NodeConfig
    from gensyn_py.node.state import DaemonState
    from gensyn_py.storage.factory import open_store

    account = _account(opts["key"], opts["keystore"], opts["password"])
    name = f"{role}-{account.address[2:10].lower()}"
    configure_logging(name, opts["log_level"], opts["log_file"], opts["log_format"])
    w3 = connect(settings.rpc_url, settings.chain_id)
    protocol = ProtocolContracts.load(w3, settings.deployments_dir)
    state_dir = opts["state_dir"] or Path(".gensyn") / name
    state_dir.mkdir(parents=True, exist_ok=True)
    metrics = DaemonMetrics(name)
    if opts["metrics_port"] is not None:
        metrics.serve(opts["metrics_port"], opts["metrics_host"])
    config = NodeConfig(
        protocol=protocol, account=account, store=open_store(settings.store),
        state=DaemonState(state_dir / "state.sqlite"), hardware=measure(price_per_unit=price),
        stake=int(opts["stake_tokens"] * E18), poll_interval=opts["poll_interval"],
        confirmations=opts["confirmations"], metrics=metrics, replay_class=measure_class(), ws_url=opts["ws_url"],
    )
    return config, state_dir


@click.group()
def solver() -> None:
    """Train units for pay."""


@solver.command("run")
@node_options
@price_option
@click.option("--partial-every", type=click.IntRange(min=0), default=None,
              help="Commit partial progress every N segments (default: each quarter of a unit; 0: never).")
@click.option("--data-parallel", type=click.IntRange(min=1, max=64), default=1, show_default=True,
              help="Processes that train one repro unit together (one per GPU with CUDA); the unit's states are "
                   "bit-identical to one process's. Exact units always train in one process.")
@click.pass_obj
def solver_run(settings: Settings, price: float, partial_every: int | None, data_parallel: int, **opts: Any) -> None:
    """Claim units you are fit for, train, commit, collect."""
    from gensyn_py.node.solver import SolverDaemon

    config, state_dir = build_config(settings, "solver", opts, tokens_to_wei(price))
    daemon = SolverDaemon(config, state_dir / "records", device=opts["device"], partial_every=partial_every,
                          data_parallel=data_parallel)
    raise SystemExit(daemon.run_forever())


@click.group()
def validator() -> None:
    """Replay sampled segments and post verdicts."""


@validator.command("run")
@node_options
@click.pass_obj
def validator_run(settings: Settings, **opts: Any) -> None:
    """Replay the segments you are drawn for, commit-reveal verdicts, serve on committees."""
    from gensyn_py.node.validator import ValidatorDaemon

    config, _ = build_config(settings, "validator", opts)
    raise SystemExit(ValidatorDaemon(config, device=opts["device"]).run_forever())


@click.group()
def challenger() -> None:
    """Audit verified work and dispute fraud."""


@challenger.command("run")
@node_options
@click.option("--audit-fraction", type=float, default=0.2, show_default=True,
              help="Share of each unit's unchecked segments to replay.")
@click.option("--max-segments", type=int, default=4, show_default=True, help="At most this many replays per unit.")
@click.pass_obj
def challenger_run(settings: Settings, audit_fraction: float, max_segments: int, **opts: Any) -> None:
    """Replay segments the validators did not, and challenge any that fail."""
    from gensyn_py.node.challenger import ChallengerDaemon

    config, _ = build_config(settings, "challenger", opts)
    daemon = ChallengerDaemon(config, device=opts["device"], audit_fraction=audit_fraction,
                              max_segments=max_segments)
    raise SystemExit(daemon.run_forever())


# -- quarantine: jobs a daemon set aside (see gensyn_py/node/quarantine.py) ----------------------


def _state_path(role: str, state_dir: Path | None, key: str | None, address: str | None) -> Path:
    from gensyn_py.errors import ConfigError

    if state_dir is None:
        if address is None and key:
            from gensyn_py.chain.accounts import from_private_key

            address = str(from_private_key(key).address)
        if address is None:
            raise ConfigError("which daemon? pass --state-dir, --address or --key (or set GENSYN_KEY)")
        state_dir = Path(".gensyn") / f"{role}-{address.lower().removeprefix('0x')[:8]}"
    path = state_dir / "state.sqlite"
    if not path.exists():
        raise ConfigError(f"no daemon state at {path}")
    return path


def quarantine_options(fn: F) -> F:
    for option in reversed([
        click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="The daemon's state folder (default .gensyn/<role>-<address>)."),
        click.option("--key", envvar="GENSYN_KEY", default=None, help="The daemon's private key, to find its folder."),
        click.option("--address", default=None, help="The daemon's address, to find its folder."),
    ]):
        fn = option(fn)
    return fn


def quarantine_group(role: str) -> click.Group:
    """`gensyn <role> quarantine list|clear`: read and release the jobs a daemon quarantined."""

    @click.group("quarantine")
    def group() -> None:
        """Jobs this daemon set aside (bad content, unfit, crashed) and retries with backoff."""

    @group.command("list")
    @quarantine_options
    @click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
    def list_cmd(state_dir: Path | None, key: str | None, address: str | None, as_json: bool) -> None:
        """List quarantined jobs with their reason and next retry."""
        import json
        import time

        from gensyn_py.node.quarantine import Quarantine
        from gensyn_py.node.state import DaemonState

        with DaemonState(_state_path(role, state_dir, key, address), readonly=True) as state:
            entries = Quarantine(state).entries()
        for e in entries:
            if as_json:
                click.echo(json.dumps(e.to_json()))
            else:
                wait = max(0.0, e.retry_at - time.time())
                click.echo(f"job {e.job}  unit {e.unit}  attempts {e.attempts}  retry in {wait:.0f}s  {e.reason}")
        if not entries and not as_json:
            click.echo("no job in quarantine")

    @group.command("clear")
    @quarantine_options
    @click.argument("job", type=int, required=False)
    def clear_cmd(state_dir: Path | None, key: str | None, address: str | None, job: int | None) -> None:
        """Release JOB (or every job) from quarantine: it is tried again at the next cycle."""
        from gensyn_py.node.quarantine import Quarantine
        from gensyn_py.node.state import DaemonState

        with DaemonState(_state_path(role, state_dir, key, address), lock=False) as state:
            removed = Quarantine(state).clear(job)
        click.echo(f"released {removed} job(s)")

    return group


solver.add_command(quarantine_group("solver"))
validator.add_command(quarantine_group("validator"))
challenger.add_command(quarantine_group("challenger"))
