"""The contract's batch index (BatchIndex.example through its harness) equals the Python sampler's, bit for bit.

Random parameters over the whole uint range the spec allows (seed < 2^63, rounds, shards, steps), shard sizes 1,
small, the largest dataset a spec admits (10,000,000) and beyond it, all in a few eth_calls; and whole batches as
the trainer draws them. Every call is a static call to pure functions: no state, no money moves, so there is
nothing to conserve.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from web3 import Web3

from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.train.batch_sampler import DOMAIN, position, positions
from gensyn_py.train.data import batch_indices

CASES = 400


@pytest.fixture(scope="module")
def harness(w3: Web3, accounts: Any, artifacts: dict[str, dict[str, Any]]) -> Any:
    art = artifacts["BatchIndexHarness"]
    acct = accounts[0]
    tx = w3.eth.contract(abi=art["abi"], bytecode=art["bytecode"]).constructor().build_transaction(
        {"from": acct.address, "nonce": w3.eth.get_transaction_count(acct.address, "pending")}
    )
    tx_hash = w3.eth.send_raw_transaction(acct.sign_transaction(tx).raw_transaction)
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash)
    assert receipt.status == 1
    return w3.eth.contract(address=receipt.contractAddress, abi=art["abi"])


def random_cases(rng: np.random.Generator) -> list[list[int]]:
    """CASES rows of (seed, round, shard, step, i, shardSize); shard sizes from 1 to past the largest dataset."""
    sizes = [1, 2, 3, 7, 64, 1000, 10_000_000, 2**40]
    rows = []
    for k in range(CASES):
        size = sizes[k % len(sizes)] if k < 2 * len(sizes) else int(rng.integers(1, 10_000_001))
        rows.append(
            [
                int(rng.integers(0, 2**63)),
                int(rng.integers(0, 1 << 20)),
                int(rng.integers(0, 128)),
                int(rng.integers(0, 1 << 24)),
                int(rng.integers(0, 65_536)),
                size,
            ]
        )
    # The extremes of every field the spec allows.
    rows.append([2**63 - 1, 2**32 - 1, 127, 2**32 - 1, 65_535, 10_000_000])
    rows.append([0, 0, 0, 0, 0, 1])
    return rows


def test_contract_positions_equal_python_for_random_parameters(harness: Any) -> None:
    rows = random_cases(np.random.Generator(np.random.PCG64(13)))
    columns = [list(c) for c in zip(*rows, strict=True)]
    onchain = harness.functions.examples(*columns).call()
    python = [position(*row) for row in rows]
    assert onchain == python
    assert all(0 <= p < row[5] for p, row in zip(python, rows, strict=True))
    # The vectorized form (what the trainer runs) agrees with the scalar one case by case.
    for row in rows[:64]:
        seed, round_, shard, step, i, size = row
        i %= 128
        assert int(positions(seed, round_, shard, step, i + 1, size)[i]) == position(seed, round_, shard, step, i, size)


@pytest.mark.parametrize(("count", "size"), [(32, 1), (32, 5), (1024, 1437), (256, 10_000_000)])
def test_a_whole_batch_on_chain_is_the_trainers_batch(harness: Any, count: int, size: int) -> None:
    seed, round_, shard, step = 2**62 + 11, 3, 1, 4095
    onchain = harness.functions.batch(seed, round_, shard, step, count, size).call()
    assert onchain == positions(seed, round_, shard, step, count, size).tolist()
    # The trainer's examples are the shard's members at those positions.
    idx = np.arange(size, dtype=np.int64) * 3 + 1  # a shard's members: increasing example indices
    assert batch_indices(idx, count, seed, round_, shard, step).tolist() == [int(idx[p]) for p in onchain]


def test_domain_is_the_contracts_and_an_empty_shard_is_refused(
    harness: Any, artifacts: dict[str, dict[str, Any]]
) -> None:
    assert b"gensyn.batch-sampler.v2".ljust(32, b"\0") == DOMAIN
    errors = ErrorDecoder([artifacts["BatchIndexHarness"]["abi"]])
    try:
        harness.functions.batch(1, 0, 0, 0, 1, 0).call()
    except Exception as exc:  # web3 raises one of several types; the decoder digs the data out of any
        err = errors.from_exception(exc)
        assert err is not None and err.name == "EmptyShard", exc
    else:
        raise AssertionError("a shard of size 0 was sampled")


def test_gas_of_one_index_is_two_sha256_precompile_calls(harness: Any) -> None:
    used, pos = harness.functions.gasOfExample(7, 1, 2, 3, 4, 1000).call()
    assert pos == position(7, 1, 2, 3, 4, 1000)
    print(f"BatchIndex.example: {used} gas")
    assert used < 2_000  # two calls to the SHA-256 precompile and their memory: a rounding error in a game
