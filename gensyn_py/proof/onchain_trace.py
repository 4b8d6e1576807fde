"""Calldata for ``contracts/libraries/TraceProofs.sol``: openings of a trace the contract can check.

A dispute about a traced step narrows to one op, one output element and, for a matmul / sum / index_sum
element, one integer multiply-add (docs/repro.md section 6).  The contract then recomputes from operands it
must know are the committed ones; this module builds the proofs of them from a ``Trace``:

- ``tensor_ref`` / ``open_element`` (``ref_of`` / ``opening_of`` for a bare array): a tensor's root and
  header, and one element's chunk and Merkle path (``tensor_commit.prove_element``); ``element_bits`` is
  what the contract returns for it;
- ``open_op``: an op leaf's preimage (index, code hash, attributes hash, input (id, root) list, output root)
  and its path in the trace root;
- ``dot_operands``: which input elements step k of a dot element reads (the mirror of the contract's
  ``matmulOperands`` / ``sumOperand`` / ``indexSumOperands``);
- ``open_dot_step``: everything ``TraceProofs.openDotStep`` checks for step k, with the prefix-sum openings of
  ``prefix_sums``.

Every ``as_arg`` is the tuple web3 encodes for the matching Solidity struct.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gensyn_py.crypto.hashing import keccak256, uint256
from gensyn_py.crypto.merkle import verify_proof
from gensyn_py.proof.prefix_sums import PartialOpening, open_partial, prefix_root
from gensyn_py.proof.tensor_commit import DTYPES, prove_element, tensor_root
from gensyn_py.proof.trace import Trace, TraceError, attrs_hash, bcast, recompute_element

DOT_OPS = ("matmul", "sum", "index_sum")
FLOAT32_ONE = 0x3F800000


@dataclass(frozen=True)
class TensorRef:
    """A tensor's root and the header it binds (calldata: `TensorRef`)."""

    root: bytes
    dtype: int
    shape: tuple[int, ...]

    def as_arg(self) -> tuple[bytes, int, list[int]]:
        return (self.root, self.dtype, list(self.shape))


@dataclass(frozen=True)
class ElementOpening:
    """One element's flat index, its 32-byte chunk and the chunk's path (calldata: `ElementOpening`)."""

    element: int
    chunk_index: int
    chunk: bytes
    proof: tuple[bytes, ...]

    def as_arg(self) -> tuple[int, int, bytes, list[bytes]]:
        return (self.element, self.chunk_index, self.chunk, list(self.proof))


NO_ELEMENT = ElementOpening(0, 0, bytes(32), ())  # the B opening of a sum step: its B is ones, never opened


@dataclass(frozen=True)
class OpOpening:
    """An op leaf's preimage and its path in the trace root (calldata: `OpOpening`)."""

    index: int
    code_hash: bytes
    attrs_hash: bytes
    inputs: tuple[tuple[int, bytes], ...]
    output_root: bytes
    proof: tuple[bytes, ...]

    def leaf(self) -> bytes:
        """The leaf as the contract rebuilds it; equals ``Trace.op_leaf(index)`` for an honest opening."""
        parts = [uint256(self.index), self.code_hash, self.attrs_hash]
        parts += [uint256(i) + r for i, r in self.inputs]
        return keccak256(b"".join([*parts, self.output_root]))

    def verify(self, trace_root: bytes) -> bool:
        return verify_proof(self.leaf(), self.proof, trace_root)

    def as_arg(self) -> tuple[int, bytes, bytes, list[tuple[int, bytes]], bytes, list[bytes]]:
        return (self.index, self.code_hash, self.attrs_hash, list(self.inputs), self.output_root, list(self.proof))


def ref_of(arr: np.ndarray[Any, Any], root: bytes | None = None) -> TensorRef:
    """The `TensorRef` of an array (its root computed unless given)."""
    shape = tuple(int(d) for d in arr.shape)
    return TensorRef(tensor_root(arr) if root is None else root, DTYPES[str(arr.dtype)], shape)


def opening_of(arr: np.ndarray[Any, Any], element: int) -> ElementOpening:
    """Element `element` (flat) of an array: its chunk and path (``tensor_commit.prove_element``)."""
    p = prove_element(arr, element)
    return ElementOpening(element, p.chunk_index, p.chunk, p.proof)


def tensor_ref(trace: Trace, tensor_id: int) -> TensorRef:
    return ref_of(trace.values[tensor_id], trace.tensor_roots[tensor_id])


def open_element(trace: Trace, tensor_id: int, element: int) -> ElementOpening:
    p = prove_element(trace.values[tensor_id], element, trace.data_levels(tensor_id))
    return ElementOpening(element, p.chunk_index, p.chunk, p.proof)


def element_bits(arr: np.ndarray[Any, Any], element: int) -> int:
    """The element's little-endian bytes as an unsigned integer: what ``TraceProofs.elementBits`` returns."""
    one = np.ascontiguousarray(arr.reshape(-1)[element : element + 1])
    return int.from_bytes(one.astype(one.dtype.newbyteorder("<")).tobytes(), "little")


def double_bits(v: float) -> int:
    """The IEEE-754 binary64 bits of `v` (how a float attribute reaches the contract)."""
    return int(struct.unpack("<Q", struct.pack("<d", v))[0])


def element_check(trace: Trace, i: int, element: int) -> tuple[Any, ...]:
    """The `ElementCheck` calldata (`contracts/types/Trace.sol`) of output element `element` of elementwise op `i`:
    the op leaf, its inputs' headers and the input elements that element reads (numpy broadcasting, as
    `trace.bcast`), the output header and element, and clamp's bounds as doubles."""
    op = trace.ops[i]
    out_shape = trace.values[i].shape
    pos = np.unravel_index(element, out_shape) if out_shape else ()
    in_els = []
    for j in op.inputs:
        shape = trace.values[j].shape
        at = int(np.ravel_multi_index(bcast(pos, shape), shape)) if shape else 0
        in_els.append(open_element(trace, j, at).as_arg())
    bounds = [double_bits(op.attrs[0]), double_bits(op.attrs[1])] if op.code == "clamp" else [0, 0]
    return (open_op(trace, i).as_arg(), [tensor_ref(trace, j).as_arg() for j in op.inputs], in_els,
            tensor_ref(trace, i).as_arg(), open_element(trace, i, element).as_arg(), bounds)


def open_op(trace: Trace, i: int) -> OpOpening:
    op, roots = trace.ops[i], trace.tensor_roots
    return OpOpening(i, keccak256(op.code.encode()), attrs_hash(op.attrs), tuple((j, roots[j]) for j in op.inputs),
                     roots[i], tuple(trace.op_proof(i)))


@dataclass(frozen=True)
class DotOperands:
    """Step k of a dot element reads element `a_index` of tensor `a_tensor` and, unless the op is a sum (whose B
    is ones), element `b_index` of tensor `b_tensor`; the sum has `length` steps."""

    a_tensor: int
    a_index: int
    b_tensor: int | None
    b_index: int | None
    length: int


def dot_operands(trace: Trace, op_index: int, element: int, k: int) -> DotOperands:
    """The mirror of the contract's operand maps (``_dot_operands`` in trace.py, as flat indices)."""
    op = trace.ops[op_index]
    if not 0 <= element < trace.values[op_index].size:
        raise TraceError(f"element {element} out of range for op {op_index}'s output")
    shapes = [trace.values[j].shape for j in op.inputs]
    if op.code == "matmul":
        (ai, bi), (*_, rows, length), cols = op.inputs, shapes[0], shapes[1][-1]
        n, i, j = element // (rows * cols), element // cols % rows, element % cols
        return _checked(DotOperands(ai, (n * rows + i) * length + k, bi, (n * length + k) * cols + j, length), k)
    if op.code == "sum":
        (xi,), (_, c), dim = op.inputs, shapes[0], op.attrs[0]
        idx = element * c + k if dim == 1 else k * c + element
        return _checked(DotOperands(xi, idx, None, None, shapes[0][dim]), k)
    if op.code == "index_sum":
        (ii, gi), (length, cols) = op.inputs, shapes[1]
        return _checked(DotOperands(ii, k, gi, k * cols + element % cols, length), k)
    raise TraceError(f"op {op_index} ({op.code}) is not a dot op; dot ops are {DOT_OPS}")


def _checked(d: DotOperands, k: int) -> DotOperands:
    if not 0 <= k < d.length:
        raise TraceError(f"step {k} out of range for a dot element of length {d.length}")
    return d


@dataclass(frozen=True)
class DotStep:
    """Everything ``TraceProofs.openDotStep`` checks for step k (calldata: `DotStep`)."""

    k: int
    a: ElementOpening
    b: ElementOpening
    prefix_root: bytes
    prev: PartialOpening
    cur: PartialOpening

    def as_arg(self) -> tuple[Any, ...]:
        return (self.k, self.a.as_arg(), self.b.as_arg(), self.prefix_root, self.prev.as_arg(), self.cur.as_arg())


def dot_partials(trace: Trace, op_index: int, element: int) -> tuple[int, ...]:
    """The honest prefix sums of a dot element (``recompute_element``'s ``DotElement.partial``)."""
    d = recompute_element(trace, op_index, element).detail
    if d is None:
        raise TraceError(f"op {op_index} ({trace.ops[op_index].code}) is not a dot op")
    return d.partial


def open_dot_step(trace: Trace, op_index: int, element: int, k: int,
                  partial: Sequence[int] | None = None) -> DotStep:
    """Step k of output element `element` of dot op `op_index`, against the prefix sums `partial` (the honest
    ones by default; a party opens its own committed sequence)."""
    sums = tuple(partial) if partial is not None else dot_partials(trace, op_index, element)
    ops = dot_operands(trace, op_index, element, k)
    a = open_element(trace, ops.a_tensor, ops.a_index)
    b = NO_ELEMENT if ops.b_tensor is None or ops.b_index is None else open_element(trace, ops.b_tensor, ops.b_index)
    prev = open_partial(sums, k - 1) if k > 0 else PartialOpening(0, 0, ())
    return DotStep(k, a, b, prefix_root(sums), prev, open_partial(sums, k))


def dot_step_args(trace: Trace, op_index: int, element: int, step: DotStep) -> tuple[Any, ...]:
    """The arguments of ``openDotStep(traceRoot, op, ins, rows, element, step)``."""
    op = trace.ops[op_index]
    rows = int(op.attrs[0]) if op.code == "index_sum" else 0
    ins = [tensor_ref(trace, j).as_arg() for j in op.inputs]
    return (trace.root, open_op(trace, op_index).as_arg(), ins, rows, element, step.as_arg())


def exponent_field(bits: int) -> int:
    """`ExactDot.exponentField`: max(biased exponent field, 1), a non-finite entry counting as 0 (so 1)."""
    field = (bits >> 23) & 0xFF
    return 1 if field in (0, 0xFF) else field


ONE_BLOCK = 127  # the block exponent of float32 1.0: a sum's ones, an index_sum's one-hot rows


def _witness(trace: Trace, tensor: int | None, indices: list[int]) -> tuple[int, tuple[Any, ...]]:
    """(k, opening) of the entry with the largest exponent field among `indices` of `tensor`: the witness of a
    block exponent; a zero witness where none is needed (`tensor` None)."""
    if tensor is None:
        return (0, NO_ELEMENT.as_arg())
    flat = trace.values[tensor].reshape(-1)
    fields = [exponent_field(element_bits(flat, i)) for i in indices]
    k = max(range(len(indices)), key=lambda j: fields[j])
    return (k, open_element(trace, tensor, indices[k]).as_arg())


def dot_move(trace: Trace, op_index: int, element: int, k: int, partial: Sequence[int] | None = None,
             blocks: tuple[int, int] | None = None) -> tuple[Any, ...]:
    """The `DotMove` calldata (`contracts/types/Trace.sol`) of step k of output element `element` of dot op
    `op_index`, against the prefix sums `partial` (the honest ones by default) and the block exponents `blocks`
    (the rule's by default), with a witness entry for each block exponent the rule does not fix."""
    op = trace.ops[op_index]
    d = recompute_element(trace, op_index, element).detail
    if d is None:
        raise TraceError(f"op {op_index} ({op.code}) is not a dot op")
    block_a, block_b = blocks if blocks is not None else (d.block_a, d.block_b)
    steps = [dot_operands(trace, op_index, element, j) for j in range(len(d.a))]
    a_wit = _witness(trace, None if op.code == "index_sum" else steps[0].a_tensor, [s.a_index for s in steps])
    b_wit = _witness(trace, None if op.code == "sum" else steps[0].b_tensor,
                     [s.b_index for s in steps if s.b_index is not None])
    step = open_dot_step(trace, op_index, element, k, partial)
    rows = int(op.attrs[0]) if op.code == "index_sum" else 0
    ins = [tensor_ref(trace, j).as_arg() for j in op.inputs]
    return (open_op(trace, op_index).as_arg(), ins, rows, element, step.as_arg(), block_a, block_b, a_wit, b_wit)
