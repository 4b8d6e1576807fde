#!/usr/bin/env python3
"""A minimal requester written from docs/formats.md and the shipped ABIs alone.

It imports web3.py, eth-account and the standard library only (never `gensyn_py`):

1. reads the deployment record `<deployments>/<chainId>.json` and the ABI files in
   `gensyn_py/chain/abi/` as plain JSON files;
2. builds a small dataset file (safetensors with tensors `x` float32 and `y` int64, written by hand)
   and a job spec JSON, formatted its own way (indented, its own key order);
3. stores both in the local content store: the file for CID `c` at `<store>/<c[-2:]>/<c>`, where `c`
   is the raw-codec CIDv1 (base32) of the bytes, computed here with hashlib;
4. approves the escrow `units * (maxPricePerUnit + validatorsPerUnit * validatorFee)` to the TaskPool
   and calls `submitJob` with `specHash = keccak256(exact spec bytes)`;
5. unless `--no-wait`, waits for `JobCompleted` and prints the final unit's final state hash.

Usage:
    python examples/minimal_requester.py RPC_URL KEY STORE_DIR DEPLOYMENTS_DIR [--no-wait]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eth_account import Account
from web3 import Web3

ABI_DIR = Path(__file__).resolve().parents[1] / "gensyn_py" / "chain" / "abi"
CHUNK_SIZE = 262144  # content up to one chunk has a raw-codec CID: sha256 of the bytes
AGGREGATION_SHARD = 2**32 - 1
E18 = 10**18

# The job: one round, one shard, a small MLP on 64 synthetic examples of 64 features and 10 classes.
NUM_EXAMPLES, FEATURES, CLASSES = 64, 64, 10
ROUNDS, SHARDS, STEPS, INTERVAL = 1, 1, 4, 2
MAX_PRICE = 10 * E18  # per unit
COLLATERAL = 100 * E18  # solver stake locked per unit
COMMIT_WINDOW = 3600  # seconds
DEVICE_CLASS_CPU = 1  # `DEVICE_CLASSES["cpu"]`
VERIFY_REPRO = 0  # JobParams.verification: the spec's mode, repro (0) or exact (1)


# --------------------------------------------------------------------------- content


def raw_cid(data: bytes) -> str:
    """CIDv1, raw codec (0x55), sha2-256 multihash, multibase base32 lower-case without padding."""
    if len(data) > CHUNK_SIZE:
        raise ValueError("content over 262144 bytes needs a UnixFS (dag-pb) CID; keep the example small")
    binary = bytes([0x01, 0x55, 0x12, 0x20]) + hashlib.sha256(data).digest()
    return "b" + base64.b32encode(binary).decode("ascii").lower().rstrip("=")


def store_put(store: Path, data: bytes) -> str:
    """Write `data` where the local content store looks for it: `<store>/<cid[-2:]>/<cid>`."""
    cid = raw_cid(data)
    folder = store / cid[-2:]
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, folder / cid)
    return cid


def safetensors(tensors: dict[str, tuple[str, list[int], bytes]]) -> bytes:
    """A safetensors file: u64le header length, JSON header (padded with spaces to 8 bytes), raw data."""
    header: dict[str, Any] = {}
    body = b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + body


def make_dataset(seed: int = 7) -> bytes:
    """x: float32 [N, 64], a noisy one-hot block per class; y: int64 [N] class labels."""
    rng = random.Random(seed)
    xs: list[float] = []
    ys: list[int] = []
    for i in range(NUM_EXAMPLES):
        label = i % CLASSES
        xs += [(1.0 if j // 6 == label else 0.0) + rng.random() * 0.1 for j in range(FEATURES)]
        ys.append(label)
    return safetensors({
        "x": ("F32", [NUM_EXAMPLES, FEATURES], struct.pack(f"<{len(xs)}f", *xs)),
        "y": ("I64", [NUM_EXAMPLES], struct.pack(f"<{len(ys)}q", *ys)),
    })


def make_spec(dataset_cid: str, dataset_size: int) -> bytes:
    """The job spec, formatted by this client: indented, integers where floats are allowed."""
    spec = {
        "version": 1,
        "dataset": {
            "cid": dataset_cid,
            "num_examples": NUM_EXAMPLES,
            "size_bytes": dataset_size,
            "x_dtype": "float32",
            "x_shape": [FEATURES],
            "y_shape": [],
        },
        "model": {"family": "mlp", "sizes": {"in_features": FEATURES, "hidden": 16, "num_classes": CLASSES}},
        "optimizer": {"name": "sgd", "lr": 0.1, "momentum": 0},
        "batch_size": 16,
        "steps_per_unit": STEPS,
        "checkpoint_interval": INTERVAL,
        "rounds": ROUNDS,
        "shards": SHARDS,
        "seed": 11,
        "hardware": {"device_class": "cpu", "min_memory_mb": 64},
    }
    return (json.dumps(spec, indent=4) + "\n").encode()


# --------------------------------------------------------------------------- chain


def load_abi(name: str, abi_dir: Path) -> list[dict[str, Any]]:
    abi: list[dict[str, Any]] = json.loads((abi_dir / f"{name}.json").read_text())
    return abi


def send(w3: Web3, account: Any, call: Any) -> Any:
    """Sign and send a contract call from `account`; the receipt, or SystemExit if it reverted."""
    tx = call.build_transaction({
        "from": account.address,
        "nonce": w3.eth.get_transaction_count(account.address, "pending"),
        "chainId": w3.eth.chain_id,
    })
    signed = account.sign_transaction(tx)
    receipt = w3.eth.wait_for_transaction_receipt(w3.eth.send_raw_transaction(signed.raw_transaction), timeout=120)
    if receipt["status"] != 1:
        raise SystemExit(f"transaction {receipt['transactionHash'].hex()} reverted")
    return receipt


def final_state_hash(pool: Any, job_id: int, from_block: int) -> bytes:
    """The job's model: the last opened unit (the last round's aggregation unit, or its only unit) and the
    final state hash of its latest `UnitCommitted`."""
    opened = pool.events.UnitOpened().get_logs(argument_filters={"jobId": job_id}, from_block=from_block)
    last = max(opened, key=lambda e: (e["blockNumber"], e["logIndex"]))
    committed = pool.events.UnitCommitted().get_logs(argument_filters={"unitId": last["args"]["unitId"]},
                                                     from_block=from_block)
    latest = max(committed, key=lambda e: (e["blockNumber"], e["logIndex"]))
    return bytes(latest["args"]["finalStateHash"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("rpc_url")
    ap.add_argument("key", help="the requester's private key (hex)")
    ap.add_argument("store_dir", help="the local content store's root directory")
    ap.add_argument("deployments_dir", help="the directory holding <chainId>.json")
    ap.add_argument("--abi-dir", type=Path, default=ABI_DIR)
    ap.add_argument("--no-wait", action="store_true", help="exit once the job is submitted")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for JobCompleted")
    ap.add_argument("--poll", type=float, default=1.0)
    args = ap.parse_args(argv)

    w3 = Web3(Web3.HTTPProvider(args.rpc_url, request_kwargs={"timeout": 30}))
    account = Account.from_key(args.key)
    chain_id = int(w3.eth.chain_id)
    deployment = json.loads((Path(args.deployments_dir) / f"{chain_id}.json").read_text())
    addresses = deployment["contracts"]
    first_block = int(deployment.get("block", 0))
    pool = w3.eth.contract(address=Web3.to_checksum_address(addresses["TaskPool"]),
                           abi=load_abi("TaskPool", args.abi_dir) + load_abi("errors", args.abi_dir))
    token = w3.eth.contract(address=Web3.to_checksum_address(addresses["GensynToken"]),
                            abi=load_abi("GensynToken", args.abi_dir))

    store = Path(args.store_dir)
    dataset = make_dataset()
    dataset_cid = store_put(store, dataset)
    spec = make_spec(dataset_cid, len(dataset))
    spec_cid = store_put(store, spec)
    spec_hash = Web3.keccak(spec)  # keccak256 of the exact bytes stored under specCid
    print(f"dataset {dataset_cid} ({len(dataset)} bytes), spec {spec_cid} hash 0x{spec_hash.hex()}")

    params = pool.functions.params().call()  # PoolParams, in struct order
    validators_per_unit, validator_fee = int(params[0]), int(params[8])
    units = ROUNDS * SHARDS + (ROUNDS if SHARDS > 1 else 0)
    escrow = units * (MAX_PRICE + validators_per_unit * validator_fee)
    send(w3, account, token.functions.approve(pool.address, escrow))

    # The spec has no "mode": it is `repro`, so the job's verification is VERIFY_REPRO (0): any validator.
    # No step table (stepsRoot zero): building one means tracing a step with the repro kernels, which this
    # script does not have, so a dispute over this job goes to the committee instead of the on-chain game.
    job_params = (spec_hash, spec_cid, ROUNDS, SHARDS, STEPS, INTERVAL, DEVICE_CLASS_CPU, 64, 0,
                  MAX_PRICE, COLLATERAL, COMMIT_WINDOW, VERIFY_REPRO, b"\0" * 32)
    receipt = send(w3, account, pool.functions.submitJob(job_params))
    (submitted,) = pool.events.JobSubmitted().process_receipt(receipt)
    job_id = int(submitted["args"]["jobId"])
    print(f"job {job_id} submitted: escrow {escrow} ({escrow / E18:.2f} tokens)", flush=True)
    if args.no_wait:
        return 0

    deadline = time.monotonic() + args.timeout
    while not pool.events.JobCompleted().get_logs(argument_filters={"jobId": job_id},
                                                  from_block=receipt["blockNumber"]):
        if time.monotonic() > deadline:
            print(f"job {job_id} not completed after {args.timeout:.0f} s", file=sys.stderr)
            return 1
        time.sleep(args.poll)
    print(f"job {job_id} completed: final state hash 0x{final_state_hash(pool, job_id, first_block).hex()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
