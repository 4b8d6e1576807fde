"""The program and the named inputs of one traced step, as ``contracts/StepGame.sol`` opens them.

- Program entry i binds what op i is, never what it computed: ``keccak256(uint256 i ++ keccak(code) ++
  attributes hash ++ uint256 input id...)``.  Output entry: ``keccak256(key hash ++ uint256 op id)`` for each
  named output (``state.key_hash``; the next state's tensors by key, and ``loss``), in key-hash order.  The
  program root is ``hash_pair(ops root, outputs root)``.  It is a pure function of the spec (the family, sizes,
  optimizer and batch size; the learning rate is the named input ``lr``), so every honest node derives it.
- A named-input entry binds a step input's name to its tensor: ``keccak256(attributes hash of the input op ++
  tensor root)``, which is the state tree's entry of the same key (``state.state_entry``).  The named-inputs
  root is ``hash_pair(state root, batch root)``: the whole state the step starts from, and its ``lr``, ``x``
  and ``y``, each tree in key-hash order, so the segment game binds a step to the agreed state and the job's
  step table without any other commitment.

The ops root is an OpenZeppelin-compatible Merkle root (``crypto.merkle``) over the entries in trace order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gensyn_py.crypto.hashing import keccak256, uint256
from gensyn_py.crypto.merkle import hash_pair, merkle_proof, merkle_root
from gensyn_py.proof.state import key_hash, state_entry
from gensyn_py.proof.trace import Trace, TraceError, attrs_hash

if TYPE_CHECKING:
    import numpy as np


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


BATCH_KEYS = ("lr", "x", "y")  # a step's named inputs that are not state: its batch and its learning rate


def _input_ids(trace: Trace) -> list[int]:
    return [i for i, op in enumerate(trace.ops) if op.code == "input"]


def input_leaf(trace: Trace, i: int) -> bytes:
    """keccak256(attributes hash of input op i ++ its tensor root)."""
    return keccak256(attrs_hash(trace.ops[i].attrs) + trace.tensor_roots[i])


def _name(trace: Trace, i: int) -> str:
    return str(trace.ops[i].attrs[0])


def _halves(trace: Trace, state: Mapping[str, np.ndarray[Any, Any]] | None) -> tuple[list[bytes], list[bytes]]:
    """(state entries, batch entries), each in key-hash order: the state's, or the trace's non-batch inputs'."""
    ids = _input_ids(trace)
    if not ids:
        raise TraceError("a step trace without named inputs")
    batch = {_name(trace, i): input_leaf(trace, i) for i in ids if _name(trace, i) in BATCH_KEYS}
    if state is None:
        held = {_name(trace, i): input_leaf(trace, i) for i in ids if _name(trace, i) not in BATCH_KEYS}
    else:
        held = {k: state_entry(k, v) for k, v in state.items()}
    if not held or not batch:
        raise TraceError(f"a step reads both state and batch inputs ({', '.join(BATCH_KEYS)})")
    return [held[k] for k in sorted(held, key=key_hash)], [batch[k] for k in sorted(batch, key=key_hash)]


def inputs_root(trace: Trace, state: Mapping[str, np.ndarray[Any, Any]] | None = None) -> bytes:
    """The step's named-inputs root: ``hash_pair(state root, batch root)``.

    The state root is that of `state`, the whole state the step starts from (what the segment game agreed on at
    step t), or, without it, of the trace's named inputs that are not batch inputs; the batch root is that of its
    ``lr``, ``x`` and ``y`` (``step_table.batch_root``)."""
    held, batch = _halves(trace, state)
    return hash_pair(merkle_root(held), merkle_root(batch))


def input_proof(trace: Trace, i: int, state: Mapping[str, np.ndarray[Any, Any]] | None = None) -> list[bytes]:
    """The path of input op i's entry up to ``inputs_root(trace, state)``: its path in its half, then the other
    half's root."""
    ids = _input_ids(trace)
    if i not in ids:
        raise TraceError(f"op {i} is not a named input")
    held, batch = _halves(trace, state)
    leaf = input_leaf(trace, i)
    mine, other = (batch, held) if _name(trace, i) in BATCH_KEYS else (held, batch)
    if leaf not in mine:
        raise TraceError(f"input {_name(trace, i)!r} of the trace is not the state's")
    return [*merkle_proof(mine, mine.index(leaf)), merkle_root(other)]
