"""`gensyn job submit|status|download|hash|cancel|claim|estimate`: the requester's side, each command thin."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console

from gensyn_py.config import Settings

if TYPE_CHECKING:
    from eth_account.signers.local import LocalAccount

    from gensyn_py.requester.session import Requester
    from gensyn_py.storage.base import ContentStore

F = TypeVar("F", bound=Callable[..., Any])


def account_options(fn: F) -> F:
    """--key / --keystore / --password, also from GENSYN_KEY / GENSYN_KEYSTORE / GENSYN_PASSWORD."""
    fn = click.option("--password", envvar="GENSYN_PASSWORD", default=None, show_envvar=True,
                      help="Keystore password (prompted for when a keystore is given without one).")(fn)
    fn = click.option("--keystore", envvar="GENSYN_KEYSTORE", type=click.Path(path_type=Path, dir_okay=False),
                      default=None, show_envvar=True, help="Encrypted keystore (v3 JSON) of the paying account.")(fn)
    fn = click.option("--key", envvar="GENSYN_KEY", default=None, show_envvar=True,
                      help="Hex private key of the paying account (prefer --keystore).")(fn)
    return fn


def store_option(fn: F) -> F:
    return click.option("--store", default=None, help="Content store (local:/dir or http://kubo:5001); "
                        "default GENSYN_STORE.")(fn)


def load_account(key: str | None, keystore: Path | None, password: str | None) -> LocalAccount | None:
    """The account from a key or a keystore, or None; the key itself is never echoed."""
    from gensyn_py.chain.accounts import from_keystore, from_private_key

    if key and keystore:
        raise click.UsageError("give --key or --keystore, not both")
    if keystore is not None:
        if password is None:
            password = click.prompt(f"password for {keystore}", hide_input=True)
        return from_keystore(keystore, password or "")
    return from_private_key(key) if key else None


def open_session(settings: Settings, store: str | ContentStore | None, account: LocalAccount | None = None
                 ) -> Requester:
    from gensyn_py.requester.session import open_requester

    return open_requester(settings, account, store)


def _offer(max_price: str, collateral: str, commit_window: int, min_throughput: int) -> Any:
    from gensyn_py.requester.amounts import parse_tokens
    from gensyn_py.requester.pricing import Offer

    return Offer(parse_tokens(max_price, "--max-price"), parse_tokens(collateral, "--collateral"), commit_window,
                 min_throughput)


def offer_options(fn: F) -> F:
    fn = click.option("--min-throughput", default=0, show_default=True, type=click.IntRange(min=0),
                      help="Minimum solver throughput, as nodes declare it.")(fn)
    fn = click.option("--commit-window", default=3600, show_default=True, type=click.IntRange(min=1),
                      help="Seconds a solver has from its claim to its commitment.")(fn)
    fn = click.option("--collateral", default="100", show_default=True,
                      metavar="TOKENS", help="Solver stake locked per unit, in tokens.")(fn)
    fn = click.option("--max-price", default="10", show_default=True,
                      metavar="TOKENS", help="Most a solver may charge per unit, in tokens.")(fn)
    return fn


@click.group()
def job() -> None:
    """Price, submit, follow, download and cancel training jobs (the requester's side)."""


@job.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--dataset", "dataset_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Local dataset (safetensors with x and y) to upload and reference, replacing the spec's.")
@offer_options
@click.option("--dry-run", is_flag=True, help="Run every check and print the escrow; send nothing.")
@click.option("--follow/--no-follow", default=True, show_default=True, help="Follow the job live until it ends.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="With --follow: download the final model here when the job completes.")
@click.option("--timeout", type=float, default=None, help="Stop following after this many seconds.")
@click.option("--poll", type=float, default=2.0, show_default=True, help="Seconds between polls while following.")
@account_options
@store_option
@click.pass_obj
def submit(settings: Settings, spec_path: Path, dataset_file: Path | None, max_price: str, collateral: str,
           commit_window: int, min_throughput: int, dry_run: bool, follow: bool, out: Path | None,
           timeout: float | None, poll: float, key: str | None, keystore: Path | None, password: str | None,
           store: str | None) -> None:
    """Check SPEC (and its dataset), escrow its budget and submit it; then follow it and fetch the model."""
    from gensyn_py.requester.amounts import format_tokens
    from gensyn_py.requester.spec_file import load_spec
    from gensyn_py.requester.submit import prepare_job, submit_job
    from gensyn_py.storage.factory import open_store

    if out is not None and not follow:
        raise click.UsageError("--out downloads the model at the end of --follow; use `gensyn job download` later")
    console = Console()
    offer = _offer(max_price, collateral, commit_window, min_throughput)
    content_store = open_store(store or settings.store)
    loaded = load_spec(spec_path, content_store, dataset_file)  # the spec is checked before the chain is reached
    req = open_session(settings, content_store, load_account(key, keystore, password))
    if loaded.uploaded:
        console.print(f"dataset {loaded.dataset_file} uploaded as {loaded.spec.dataset.cid}")
    if dry_run:
        q = prepare_job(req, loaded.spec, offer)
        console.print(f"checks passed: {_units(q.units)}, escrow {format_tokens(q.escrow)} tokens "
                      f"(balance {format_tokens(q.balance)}, approval needed {format_tokens(q.approval_needed)}); "
                      "nothing sent")
        return
    with console.status("checking the spec and dataset, then submitting…") as status:
        def on_unit(done: int, total: int) -> None:
            status.update(f"step table: {done}/{total} units' steps hashed…")

        result = submit_job(req, loaded.spec, offer, on_unit)
    console.print(f"job [bold]{result.job_id}[/] submitted: {_units(result.units)}, "
                  f"{format_tokens(result.escrow)} tokens escrowed (tx {result.tx_hash})", soft_wrap=True)
    console.print(f"spec {result.spec_cid} (hash 0x{result.spec_hash.hex()})", soft_wrap=True)
    if follow:
        _follow_and_fetch(click.get_current_context(), console, req, result.job_id, out, timeout, poll)


def _units(n: int) -> str:
    return f"{n} unit{'' if n == 1 else 's'}"


def _follow_and_fetch(ctx: click.Context, console: Console, req: Requester, job_id: int, out: Path | None,
                      timeout: float | None, poll: float) -> None:
    from gensyn_py.requester.availability import ModelGuard
    from gensyn_py.requester.download import download_model
    from gensyn_py.requester.follow import JobWatcher, follow
    from gensyn_py.types import JobStatus

    spec = req.content.spec(job_id)
    watcher = JobWatcher(req.view, job_id, spec.rounds, spec.shards)
    # Each verified unit's model is fetched before it can be final; a missing one is claimed on-chain.
    guard = ModelGuard(req, job_id, say=lambda line: console.print(line, soft_wrap=True))
    try:
        outcome = follow(watcher, console, poll_interval=poll, timeout=timeout, on_snapshot=guard.on_snapshot)
    except KeyboardInterrupt:
        console.print(f"stopped following; the job goes on (gensyn job status {job_id})")
        ctx.exit(130)
    if outcome.timed_out:
        console.print(f"still {outcome.snapshot.state.status.name.lower()} after {timeout:.0f}s; "
                      f"the job goes on (gensyn job status {job_id})")
        ctx.exit(2)
    status = outcome.snapshot.state.status
    console.print(f"job {job_id} {status.name.lower()}")
    if status is JobStatus.COMPLETED and out is not None:
        _print_download(console, download_model(req, job_id, out))


def _print_download(console: Console, d: Any) -> None:
    console.print(f"model written to {d.path} ({d.size:,} bytes, {d.tensors} weight tensors), "
                  f"sidecar {d.sidecar}", soft_wrap=True)
    console.print(f"state hash 0x{d.final_state_hash.hex()} = final state hash of unit {d.unit_id} on-chain",
                  soft_wrap=True)


@job.command()
@click.argument("job_id", type=click.IntRange(min=0))
@click.option("--follow", "follow_", is_flag=True, help="Keep the view live until the job ends.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the view.")
@store_option
@click.pass_obj
def status(settings: Settings, job_id: int, follow_: bool, as_json: bool, store: str | None) -> None:
    """Show JOB_ID's state, its units and its latest events."""
    from gensyn_py.errors import GensynError
    from gensyn_py.requester.follow import JobWatcher, follow, render

    req = open_session(settings, store)
    rounds: int | None
    shards: int | None
    try:
        spec = req.content.spec(job_id)
        rounds, shards = spec.rounds, spec.shards
    except GensynError:  # the spec is not reachable from here: show what the chain alone tells
        rounds = shards = None
    watcher = JobWatcher(req.view, job_id, rounds, shards)
    if follow_:
        follow(watcher, Console())
        return
    snap = watcher.poll()
    if as_json:
        click.echo(json.dumps(snap.to_json(), indent=2))
    else:
        Console().print(render(snap))


@job.command()
@click.argument("job_id", type=click.IntRange(min=0))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the model (safetensors); the sidecar goes beside it as .json.")
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@store_option
@click.pass_obj
def download(settings: Settings, job_id: int, out: Path, force: bool, store: str | None) -> None:
    """Fetch JOB_ID's final model, verify it against the chain, and save it with a JSON sidecar."""
    from gensyn_py.requester.download import download_model

    req = open_session(settings, store)
    _print_download(Console(), download_model(req, job_id, out, overwrite=force))


@job.command("hash")
@click.argument("path", metavar="FILE", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def hash_(path: Path) -> None:
    """Print FILE's state hash (a checkpoint or model, safetensors): a unit's on-chain final state hash names it."""
    from gensyn_py.errors import VerificationError
    from gensyn_py.proof.state import state_hash_of_bytes

    try:
        digest = state_hash_of_bytes(path.read_bytes())
    except VerificationError as e:
        raise click.ClickException(f"{path}: {e}") from None
    click.echo("0x" + digest.hex())


@job.command()
@click.argument("job_id", type=click.IntRange(min=0))
@click.option("--claim/--no-claim", default=True, show_default=True, help="Withdraw the refund to the wallet.")
@account_options
@store_option
@click.pass_obj
def cancel(settings: Settings, job_id: int, claim: bool, key: str | None, keystore: Path | None,
           password: str | None, store: str | None) -> None:
    """Cancel JOB_ID: open and unopened units are refunded now, in-flight ones when they finish."""
    from gensyn_py.requester.amounts import format_tokens
    from gensyn_py.requester.cancel import cancel_job

    req = open_session(settings, store, load_account(key, keystore, password))
    r = cancel_job(req, job_id, claim=claim)
    console = Console()
    console.print(f"job {job_id} cancelled: {format_tokens(r.refund)} tokens refunded, "
                  f"{format_tokens(r.claimed)} withdrawn to {req.address}")
    if r.in_flight:
        console.print(f"{r.in_flight} units are still in flight; their escrow is credited when they finish "
                      "(withdraw it with `gensyn job claim`)")


@job.command()
@account_options
@store_option
@click.pass_obj
def claim(settings: Settings, key: str | None, keystore: Path | None, password: str | None,
          store: str | None) -> None:
    """Withdraw the account's credit (refunds of completed or cancelled jobs)."""
    from gensyn_py.requester.amounts import format_tokens
    from gensyn_py.requester.cancel import claim_credit

    req = open_session(settings, store, load_account(key, keystore, password))
    amount = claim_credit(req)
    click.echo(f"withdrew {format_tokens(amount)} tokens to {req.address}" if amount else "no credit to withdraw")


@job.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--dataset", "dataset_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Local dataset file the spec trains on (not uploaded).")
@click.option("--max-price", default="10", show_default=True, metavar="TOKENS",
              help="Most a solver may charge per unit, in tokens.")
@click.option("--deployment", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Deployment record whose pool parameters price the job (default: GENSYN_DEPLOYMENTS_DIR/"
                   "<GENSYN_CHAIN_ID>.json if present, else the protocol defaults).")
@click.option("--hardware", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSON overriding the hardware table: {\"h100\": {\"usd_per_hour\": 2.2}}.")
@click.option("--token-usd", type=float, default=None, help="Token price in USD, to show the escrow in dollars.")
@click.option("--cloud-prices", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSON with dated on-demand prices: {\"date\": \"2026-12-01\", \"usd_per_hour\": {\"h100\": 2.2}}.")
@click.option("--min-throughput", default=0, show_default=True, type=click.IntRange(min=0),
              help="The job's minimum solver throughput, as `job submit` takes it (scores the live prices).")
@click.option("--offline", is_flag=True, help="Do not read the solvers' prices from the chain.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.pass_obj
def estimate(settings: Settings, spec_path: Path, dataset_file: Path | None, max_price: str,
             deployment: Path | None, hardware: Path | None, token_usd: float | None, cloud_prices: Path | None,
             min_throughput: int, offline: bool, as_json: bool) -> None:
    """Price SPEC: FLOPs, time per hardware class, tokens, the on-demand cloud equivalent (a dated table), both
    verification modes (repro, the default, and exact) side by side, and what solvers on the chain ask per device
    class (when an RPC node and a deployment are reachable; the rest works offline)."""
    from gensyn_py.devnet.deploy import DEFAULT_PARAMS
    from gensyn_py.requester import estimate as est
    from gensyn_py.requester import modes
    from gensyn_py.requester.amounts import parse_tokens
    from gensyn_py.requester.cloud import BUILT_IN, load_cloud_prices
    from gensyn_py.requester.live_prices import JobNeeds
    from gensyn_py.requester.market_report import read_market, render_market
    from gensyn_py.requester.spec_file import load_spec
    from gensyn_py.types import PoolParams

    spec = load_spec(spec_path, None, dataset_file).spec
    source, raw = "protocol defaults", dict(DEFAULT_PARAMS)
    explicit = deployment
    if deployment is None and settings.chain_id is not None:
        candidate = settings.deployments_dir / f"{settings.chain_id}.json"
        deployment = candidate if candidate.is_file() else None
    if deployment is not None:
        from gensyn_py.chain.contracts import read_deployment

        raw, source = {**raw, **read_deployment(deployment).get("params", {})}, str(deployment)
    cloud = load_cloud_prices(cloud_prices) if cloud_prices else BUILT_IN
    table = cloud.apply(est.load_hardware(hardware) if hardware else est.HARDWARE)
    price, pool = parse_tokens(max_price, "--max-price"), PoolParams.from_mapping(raw)
    result = est.estimate(spec, price, pool, table, token_usd)
    both = modes.compare(spec, price, pool, table)
    needs = JobNeeds(price, spec.hardware.min_memory_mb, min_throughput)
    market = read_market(settings, explicit, needs, offline)
    if as_json:
        click.echo(json.dumps({**result.to_json(), "mode": spec.mode, "modes": [m.to_json() for m in both],
                               "poolParams": source, "cloudPrices": cloud.to_json(),
                               "onChainPrices": market.to_json()}, indent=2))
        return
    console = Console()
    console.print(est.render(result, spec))
    console.print(modes.render(both, spec.mode))
    console.print(render_market(market, result, cloud, spec.hardware.device_class))
    console.print(f"pool parameters: {source}")
