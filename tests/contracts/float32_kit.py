"""Driving contracts/test/Float32Harness.sol from Python: deploy it, call a batch with fast ABI encoding, and
build float32 inputs (uniform bit patterns, structured ones, the explicit edge list).

Shared by tests/contracts/test_float32_referee.py and bench/referee_gas.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from eth_abi import decode
from eth_account.signers.local import LocalAccount
from numpy.typing import NDArray

U32 = NDArray[np.uint32]
# eth_call gas for one batch: anvil runs calls above the block gas limit, so a batch of 8192 fits.
CALL_GAS = 2_000_000_000
BATCH = 8192

# The explicit edge list: every special value the rule distinguishes, and the boundaries around them.
EDGES: dict[str, int] = {
    "+0": 0x00000000,
    "-0": 0x80000000,
    "+inf": 0x7F800000,
    "-inf": 0xFF800000,
    "qnan": 0x7FC00000,
    "-qnan": 0xFFC00000,
    "snan": 0x7F800001,
    "nan_payload": 0x7FFFFFFF,
    "min_subnormal": 0x00000001,
    "-min_subnormal": 0x80000001,
    "2*min_subnormal": 0x00000002,
    "3*min_subnormal": 0x00000003,
    "max_subnormal": 0x007FFFFF,
    "-max_subnormal": 0x807FFFFF,
    "min_normal": 0x00800000,
    "-min_normal": 0x80800000,
    "min_normal+ulp": 0x00800001,
    "max_finite": 0x7F7FFFFF,
    "-max_finite": 0xFF7FFFFF,
    "max_finite-ulp": 0x7F7FFFFE,
    "2^127": 0x7F000000,
    "1": 0x3F800000,
    "-1": 0xBF800000,
    "1+ulp": 0x3F800001,
    "1-ulp": 0x3F7FFFFF,
    "2": 0x40000000,
    "0.5": 0x3F000000,
    "-0.5": 0xBF000000,
    "1.5": 0x3FC00000,
    "-1.5": 0xBFC00000,
    "2.5": 0x40200000,
    "-2.5": 0xC0200000,
    "3": 0x40400000,
    "2^23": 0x4B000000,
    "2^23+1": 0x4B000001,
    "2^24": 0x4B800000,
    "2^24+2": 0x4B800001,
    "2^31": 0x4F000000,
    "-2^31": 0xCF000000,
    "2^31-128": 0x4EFFFFFF,
    "-(2^31-128)": 0xCEFFFFFF,
    "2^32": 0x4F800000,
    "2^-24": 0x33800000,
    "2^-25": 0x33000000,
    "2^-126": 0x00800000,
    "2^-149": 0x00000001,
    "0.1": 0x3DCCCCCD,
    "pi": 0x40490FDB,
    "-pi": 0xC0490FDB,
    "1e-40": 0x000116C2,
    "3e38": 0x7F61B1E6,
}
EDGE_BITS = np.array(sorted(set(EDGES.values())), dtype=np.uint32)


# ---- deployment and calls ------------------------------------------------------------------------------


def deploy_harness(w3: Any, acct: LocalAccount, artifacts: dict[str, dict[str, Any]]) -> Any:
    art = artifacts["Float32Harness"]
    factory = w3.eth.contract(abi=art["abi"], bytecode=art["bytecode"])
    tx = factory.constructor().build_transaction(
        {"from": acct.address, "nonce": w3.eth.get_transaction_count(acct.address, "pending")}
    )
    tx_hash = w3.eth.send_raw_transaction(acct.sign_transaction(tx).raw_transaction)
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash)
    assert receipt.status == 1
    return w3.eth.contract(address=receipt.contractAddress, abi=art["abi"])


def _word(v: int | bool) -> bytes:
    return int(v).to_bytes(32, "big", signed=True)


def encode_args(args: Sequence[Any]) -> bytes:
    """ABI encoding of scalars (ints, bools) and one-dimensional int/bool arrays; much faster than web3's."""
    head: list[bytes] = []
    tail: list[bytes] = []
    offset = 32 * len(args)
    for a in args:
        if isinstance(a, list | tuple | np.ndarray):
            head.append(_word(offset))
            body = _word(len(a)) + b"".join(_word(int(x)) for x in a)
            tail.append(body)
            offset += len(body)
        else:
            head.append(_word(a))
    return b"".join(head + tail)


def call(harness: Any, fn: str, args: Sequence[Any], out_types: list[str]) -> tuple[Any, ...]:
    """One eth_call of harness.fn(args), decoded as out_types."""
    data = _selector(harness, fn) + encode_args(args)
    raw = harness.w3.eth.call({"to": harness.address, "data": data, "gas": CALL_GAS})
    return tuple(decode(out_types, raw))


_SELECTORS: dict[tuple[str, str], bytes] = {}


def _selector(harness: Any, fn: str) -> bytes:
    key = (harness.address, fn)
    if key not in _SELECTORS:
        abi = next(e for e in harness.abi if e.get("type") == "function" and e["name"] == fn)
        sig = f"{fn}({','.join(i['type'] for i in abi['inputs'])})"
        _SELECTORS[key] = bytes(harness.w3.keccak(text=sig)[:4])
    return _SELECTORS[key]


def batched(harness: Any, fn: str, scalars_before: Sequence[Any], arrays: Sequence[Sequence[Any]],
            out_types: list[str], scalars_after: Sequence[Any] = ()) -> list[list[Any]]:
    """Call fn over `arrays` (all the same length) in batches of BATCH; one concatenated list per output."""
    n = len(arrays[0])
    outs: list[list[Any]] = [[] for _ in out_types]
    for lo in range(0, n, BATCH):
        chunk = [list(a[lo : lo + BATCH]) for a in arrays]
        res = call(harness, fn, [*scalars_before, *chunk, *scalars_after], out_types)
        for o, r in zip(outs, res, strict=True):
            o.extend(r)
    return outs


# ---- inputs --------------------------------------------------------------------------------------------


def uniform(rng: np.random.Generator, n: int) -> U32:
    """Uniform random 32-bit patterns (about 0.4% are NaN, 25% have |x| < 2^-64 or > 2^64)."""
    return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)


def pack(sign: NDArray[Any], field: NDArray[Any], frac: NDArray[Any]) -> U32:
    return ((sign.astype(np.uint64) << 31) | (field.astype(np.uint64) << 23) | frac.astype(np.uint64)).astype(
        np.uint32)


def structured(rng: np.random.Generator, n: int) -> U32:
    """Values from the regions where rounding has special cases, in equal parts: near and in the subnormal
    range, near overflow, small integers and halves (floor, toInt32, ties), the middle range with short
    fractions (exact-tie constructions), edges, and the middle range at random."""
    kind = rng.integers(0, 6, n)
    sign = rng.integers(0, 2, n)
    frac = rng.integers(0, 1 << 23, n)
    short = frac & ~((1 << int(rng.integers(12, 23))) - 1)  # few significant bits: products/sums tie often
    field = np.select(
        [kind == 0, kind == 1, kind == 2, kind == 3],
        [rng.integers(0, 4, n), rng.integers(250, 256, n), rng.integers(120, 160, n), rng.integers(100, 155, n)],
        rng.integers(1, 255, n),
    )
    frac = np.where(kind == 3, short, frac)
    small = rng.integers(-(1 << 11), 1 << 11, n).astype(np.float32) * np.float32(0.5)
    out = pack(sign, field, frac)
    out = np.where(kind == 4, small.view(np.uint32), out)
    return np.where(kind == 5, rng.choice(EDGE_BITS, n), out).astype(np.uint32)


def close_pairs(rng: np.random.Generator, n: int) -> tuple[U32, U32]:
    """Pairs whose exponents differ by 0 to 26 with random signs: add/sub cancel, carry and round at ties."""
    a = structured(rng, n)
    shift = rng.integers(0, 27, n)
    field_a = (a.astype(np.int64) >> 23) & 0xFF
    field_b = np.clip(field_a - shift, 0, 254)
    keep = rng.integers(0, 2, n) == 1
    frac_b = np.where(keep, a & 0x7FFFFF, rng.integers(0, 1 << 23, n))  # often equal fractions: exact cancellation
    b = pack(rng.integers(0, 2, n), field_b, frac_b)
    return a, b


def tie_products(rng: np.random.Generator, n: int) -> tuple[U32, U32]:
    """mul pairs whose exact product has 25 significant bits with the last one set: an exact RNE tie (at random
    exponents, so also in the subnormal range)."""
    i = rng.integers(1 << 11, 1 << 13, n) | 1
    want = 25 - np.floor(np.log2(i.astype(np.float64))).astype(np.int64) - 1
    j = (rng.integers(0, 1 << 30, n) % (np.int64(1) << want)) | (np.int64(1) << (want - 1)) | 1
    prod_bits = np.floor(np.log2(i.astype(np.float64) * j.astype(np.float64))).astype(np.int64) + 1
    j = np.where(prod_bits > 25, j >> 1 | 1, j)
    ea = rng.integers(-80, 40, n)
    eb = rng.integers(-80, 40, n)
    a = np.ldexp(i.astype(np.float64), ea).astype(np.float32) * np.where(rng.integers(0, 2, n) == 1, -1, 1).astype(
        np.float32)
    b = np.ldexp(j.astype(np.float64), eb).astype(np.float32)
    return a.view(np.uint32), b.view(np.uint32)


def edge_pairs() -> tuple[U32, U32]:
    """Every ordered pair of edge values."""
    a, b = np.meshgrid(EDGE_BITS, EDGE_BITS, indexing="ij")
    return a.reshape(-1).astype(np.uint32), b.reshape(-1).astype(np.uint32)


def f32(bits: U32) -> NDArray[np.float32]:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def bits_of(x: Any) -> U32:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def mismatches(got: U32, want: U32) -> NDArray[np.intp]:
    """Indices where two float32 bit arrays differ, a NaN matching any NaN (payloads are not defined)."""
    got = np.asarray(got, np.uint32)
    want = np.asarray(want, np.uint32)
    nan_g = (got & 0x7FFFFFFF) > 0x7F800000
    nan_w = (want & 0x7FFFFFFF) > 0x7F800000
    same = (got == want) | (nan_g & nan_w)
    return np.flatnonzero(~same)
