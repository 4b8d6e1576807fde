"""The program and the named inputs of one traced step, as ``contracts/StepGame.sol`` opens them.

- Program entry i binds what op i is, never what it computed: ``keccak256(uint256 i ++ keccak(code) ++
  attributes hash ++ uint256 input id...)``.  Output entry: ``keccak256(key hash ++ uint256 op id)`` for each
  named output (``state.key_hash``; the next state's tensors by key, and ``loss``), in key-hash order.  The
  program root is ``hash_pair(ops root, outputs root)``.  It is a pure function of the spec (the family, sizes,
  optimizer and batch size; the learning rate is the named input ``lr``), so every honest node derives it.
- A named-input entry binds a step input's name to its tensor: ``keccak256(attributes hash of the input op ++
  tensor root)``.

The ops and inputs roots are OpenZeppelin-compatible Merkle roots (``crypto.merkle``) over the entries in
trace order.
"""

from __future__ import annotations

from gensyn_py.crypto.hashing import keccak256, uint256
from gensyn_py.crypto.merkle import hash_pair, merkle_proof, merkle_root
from gensyn_py.proof.trace import Trace, TraceError, attrs_hash


def program_entry(trace: Trace, i: int) -> tuple[bytes, bytes, tuple[int, ...]]:
    """(code hash, attributes hash, input ids) of op i."""
    op = trace.ops[i]
    return keccak256(op.code.encode()), attrs_hash(op.attrs), op.inputs


def program_leaf(trace: Trace, i: int) -> bytes:
    code, attrs, ids = program_entry(trace, i)
    return keccak256(uint256(i) + code + attrs + b"".join(uint256(j) for j in ids))


def program_leaves(trace: Trace) -> list[bytes]:
    return [program_leaf(trace, i) for i in range(len(trace.ops))]


def output_leaf(key: str, op: int) -> bytes:
    """keccak256(key hash ++ uint256 op id): named output `key` is op `op`'s output."""
    return keccak256(attrs_hash((key,)) + uint256(op))


def outputs_root(trace: Trace) -> bytes:
    if not trace.outputs:
        raise TraceError("a step trace without named outputs")
    keys = sorted(trace.outputs, key=lambda k: attrs_hash((k,)))
    return merkle_root([output_leaf(k, trace.outputs[k]) for k in keys])


def ops_root(trace: Trace) -> bytes:
    return merkle_root(program_leaves(trace))


def program_root(trace: Trace) -> bytes:
    """hash_pair(ops root, outputs root): what the step runs and where its named outputs come from."""
    return hash_pair(ops_root(trace), outputs_root(trace))


def program_proof(trace: Trace, i: int) -> list[bytes]:
    """The path of program entry i up to ``program_root`` (its last sibling is the outputs root)."""
    return [*merkle_proof(program_leaves(trace), i), outputs_root(trace)]


def _input_ids(trace: Trace) -> list[int]:
    return [i for i, op in enumerate(trace.ops) if op.code == "input"]


def input_leaf(trace: Trace, i: int) -> bytes:
    """keccak256(attributes hash of input op i ++ its tensor root)."""
    return keccak256(attrs_hash(trace.ops[i].attrs) + trace.tensor_roots[i])


def inputs_root(trace: Trace) -> bytes:
    ids = _input_ids(trace)
    if not ids:
        raise TraceError("a step trace without named inputs")
    return merkle_root([input_leaf(trace, i) for i in ids])


def input_proof(trace: Trace, i: int) -> list[bytes]:
    """The path of input op i's entry in ``inputs_root``."""
    ids = _input_ids(trace)
    if i not in ids:
        raise TraceError(f"op {i} is not a named input")
    return merkle_proof([input_leaf(trace, j) for j in ids], ids.index(i))
