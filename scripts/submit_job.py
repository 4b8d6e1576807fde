"""Wallet script: submit a training job, follow it live, download its verified model.

    .venv/bin/python scripts/submit_job.py job.json --keystore me.json --out model.safetensors

One run does what `gensyn job submit --follow --out ...` does, then withdraws
the unspent budget: it checks the spec and its dataset (uploading a local
dataset the spec names), checks the account holds the escrow, approves only
what the allowance lacks, submits, follows the job until it is completed or
cancelled, downloads the final model (refusing bytes that do not match the
on-chain final state hash) and claims the refund credit.

The account comes from --keystore (+ --password, prompted for if missing) or
--key, or from GENSYN_KEYSTORE / GENSYN_PASSWORD / GENSYN_KEY; the key is never
printed. The chain, deployment and store come from GENSYN_RPC_URL,
GENSYN_CHAIN_ID, GENSYN_DEPLOYMENTS_DIR and GENSYN_STORE unless given here.
Exit status: 0 done, 1 refused or failed (one line on stderr), 2 still running
at --timeout.
"""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from gensyn_py.config import Settings
from gensyn_py.errors import GensynError

if TYPE_CHECKING:
    from eth_account.signers.local import LocalAccount


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="submit_job.py", description="Submit a training job, follow it, download its verified model.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("spec", type=Path, help="job spec JSON; its dataset may be {\"file\": \"data.safetensors\"}")
    p.add_argument("--dataset", type=Path, help="local dataset (safetensors with x and y) to upload and use")
    p.add_argument("--max-price", default="10", metavar="TOKENS", help="most a solver may charge per unit")
    p.add_argument("--collateral", default="100", metavar="TOKENS", help="solver stake locked per unit")
    p.add_argument("--commit-window", type=int, default=3600, metavar="SECONDS", help="claim-to-commit time")
    p.add_argument("--min-throughput", type=int, default=0, help="minimum declared solver throughput")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--keystore", type=Path, default=os.environ.get("GENSYN_KEYSTORE"),
                     help="encrypted keystore of the paying account [GENSYN_KEYSTORE]")
    who.add_argument("--key", default=None, help="hex private key (prefer --keystore) [GENSYN_KEY]")
    p.add_argument("--password", default=None, help="keystore password [GENSYN_PASSWORD; prompted if unset]")
    p.add_argument("--rpc-url", default=None, help="JSON-RPC endpoint [GENSYN_RPC_URL]")
    p.add_argument("--chain-id", type=int, default=None, help="expected chain id [GENSYN_CHAIN_ID]")
    p.add_argument("--deployments", type=Path, default=None, help="deployments dir [GENSYN_DEPLOYMENTS_DIR]")
    p.add_argument("--store", default=None, help="content store: local:/dir or http://kubo:5001 [GENSYN_STORE]")
    p.add_argument("--out", type=Path, default=None, help="model file (default job-<id>.safetensors)")
    p.add_argument("--force", action="store_true", help="overwrite an existing model file")
    p.add_argument("--timeout", type=float, default=None, help="stop following after this many seconds")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between polls")
    p.add_argument("--no-claim", action="store_true", help="leave the refund credit in the pool")
    p.add_argument("--dry-run", action="store_true", help="run every check and print the escrow; send nothing")
    return p.parse_args(argv)


def load_account(args: argparse.Namespace) -> LocalAccount:
    from gensyn_py.chain.accounts import from_keystore, from_private_key
    from gensyn_py.errors import ConfigError

    key = args.key or (None if args.keystore else os.environ.get("GENSYN_KEY"))
    if args.keystore:
        password = args.password or os.environ.get("GENSYN_PASSWORD")
        if password is None:
            password = getpass.getpass(f"password for {args.keystore}: ")
        return from_keystore(args.keystore, password)
    if key:
        return from_private_key(key)
    raise ConfigError("no account: pass --keystore or --key (or set GENSYN_KEYSTORE / GENSYN_KEY)")


def run(args: argparse.Namespace, console: Console) -> int:
    from gensyn_py.requester.amounts import format_tokens, parse_tokens
    from gensyn_py.requester.availability import ModelGuard
    from gensyn_py.requester.cancel import claim_credit
    from gensyn_py.requester.download import download_model
    from gensyn_py.requester.follow import JobWatcher, follow
    from gensyn_py.requester.pricing import Offer
    from gensyn_py.requester.session import open_requester
    from gensyn_py.requester.spec_file import load_spec
    from gensyn_py.requester.submit import prepare_job, submit_job
    from gensyn_py.storage.factory import open_store
    from gensyn_py.types import JobStatus

    settings = Settings.from_env()
    overrides = {"rpc_url": args.rpc_url, "chain_id": args.chain_id, "deployments_dir": args.deployments,
                 "store": args.store}
    settings = dataclasses.replace(settings, **{k: v for k, v in overrides.items() if v is not None})
    offer = Offer(parse_tokens(args.max_price, "--max-price"), parse_tokens(args.collateral, "--collateral"),
                  args.commit_window, args.min_throughput)
    store = open_store(settings.store)
    loaded = load_spec(args.spec, store, args.dataset)  # the spec is checked before the chain is reached
    req = open_requester(settings, load_account(args), store)
    console.print(f"requester {req.address} on chain {req.protocol.chain_id}, store {req.store!r}")
    if loaded.uploaded:
        console.print(f"dataset {loaded.dataset_file} uploaded as {loaded.spec.dataset.cid}")
    if args.dry_run:
        q = prepare_job(req, loaded.spec, offer)
        console.print(f"checks passed: {q.units} unit(s), escrow {format_tokens(q.escrow)} tokens; nothing sent")
        return 0
    with console.status("building the step table, then submitting…") as status:
        def on_unit(done: int, total: int) -> None:
            status.update(f"step table: {done}/{total} units' steps hashed…")

        result = submit_job(req, loaded.spec, offer, on_unit)
    console.print(f"job {result.job_id} submitted: {result.units} unit(s), {format_tokens(result.escrow)} tokens "
                  f"escrowed (tx {result.tx_hash})", soft_wrap=True)
    watcher = JobWatcher(req.view, result.job_id, loaded.spec.rounds, loaded.spec.shards)
    # Each verified unit's model is fetched before it can be final; a missing one is claimed on-chain.
    guard = ModelGuard(req, result.job_id, say=lambda line: console.print(line, soft_wrap=True))
    outcome = follow(watcher, console, poll_interval=args.poll, timeout=args.timeout, on_snapshot=guard.on_snapshot)
    state = outcome.snapshot.state
    if outcome.timed_out:
        console.print(f"job {result.job_id} still {state.status.name.lower()} after {args.timeout:.0f}s; it goes on")
        return 2
    console.print(f"job {result.job_id} {state.status.name.lower()}")
    if state.status is JobStatus.COMPLETED:
        out = args.out or Path(f"job-{result.job_id}.safetensors")
        d = download_model(req, result.job_id, out, overwrite=args.force)
        console.print(f"model {d.path} ({d.size:,} bytes) verified: state hash 0x{d.final_state_hash.hex()} "
                      f"is unit {d.unit_id}'s final state hash on-chain; sidecar {d.sidecar}", soft_wrap=True)
    if not args.no_claim:
        claimed = claim_credit(req)
        console.print(f"withdrew {format_tokens(claimed)} tokens of refunds" if claimed else "no refund to withdraw")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console()
    try:
        return run(args, console)
    except GensynError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; a submitted job goes on (gensyn job status JOB_ID)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
