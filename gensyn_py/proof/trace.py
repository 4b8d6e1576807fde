"""The trace of a repro computation: its op sequence, a Merkle root per tensor and one over the sequence.

``TracingBackend(inner)`` is a backend that runs every op on `inner` and records it as
``TraceOp(code, input tensor ids, attributes)``; the op's output is tensor id = its own index, so every
tensor is the output of exactly one op (named inputs are ops with code ``"input"``).  A tensor's root
binds its dtype, shape and bytes (32-byte chunks as keccak leaves); an op's leaf binds its index, code,
attributes, input ids and roots, and output root (``tensor_commit``); the trace root is the Merkle root
of the op leaves (``crypto.merkle``, OpenZeppelin-compatible).  ``recompute_element`` recomputes one output element of
one op from that op's input tensors alone; for a matmul/sum element it also returns the rule's
internal steps (block exponents, aligned integers, 12-bit slices, partial integer sums), so a
disagreement narrows to one integer multiply-add or one float32 primitive.  This module imports no
torch; the NumPy reference (``reference``) does the recomputation and the full re-execution.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

import numpy as np

from gensyn_py.crypto.hashing import keccak256, uint256
from gensyn_py.crypto.merkle import levels_proof, merkle_levels, verify_proof
from gensyn_py.errors import VerificationError
from gensyn_py.proof.tensor_commit import (
    DataRoots,
    ElementProof,
    prove_element,
    tensor_levels,
    tensor_root,
    tensor_roots,
    verify_element,
)
from gensyn_py.repro import reference as R
from gensyn_py.repro.opset import CONSTANT, ELEMENTWISE, MOVEMENT, OP_ARGS

__all__ = ["DotElement", "ElementProof", "Recomputed", "Trace", "TraceError", "TraceOp", "TracingBackend",
           "attrs_hash",
           "check_element", "dot_element", "prove_element", "recompute_element", "tensor_root", "verify_element"]

SLICE_BITS = 12


class TraceError(VerificationError):
    """A trace that is malformed or incomplete."""


@dataclass(frozen=True)
class TraceOp:
    code: str
    inputs: tuple[int, ...]
    attrs: tuple[Any, ...] = ()


# ---- attributes: canonical form for hashing and storage ----


def _norm(a: Any) -> Any:
    if isinstance(a, bool | str) or a is None:
        return a
    if isinstance(a, int | np.integer):
        return int(a)
    if isinstance(a, float | np.floating):
        return {"f": float(a).hex()}
    if isinstance(a, tuple | list):
        return [_norm(x) for x in a]
    raise TraceError(f"unsupported op attribute {a!r}")


def _denorm(a: Any) -> Any:
    if isinstance(a, dict):
        return float.fromhex(a["f"])
    if isinstance(a, list):
        return tuple(_denorm(x) for x in a)
    return a


# json.dumps(obj, separators=(",", ":"), sort_keys=True) is this encoder's encode(obj); made once, not per call
_JSON = json.JSONEncoder(separators=(",", ":"), sort_keys=True)


def _attrs_json(attrs: tuple[Any, ...]) -> bytes:
    return _JSON.encode(_norm(attrs)).encode()


def attrs_hash(attrs: tuple[Any, ...]) -> bytes:
    """keccak256 of an op's attributes as canonical JSON (floats as hex): the op leaf's attribute word."""
    return keccak256(_attrs_json(attrs))


# ---- the trace ----


@dataclass
class Trace:
    """Ops, the recorded value of every tensor (tensor i is the output of op i), and named outputs.

    Its commitments (tensor roots, op leaves, the root's tree) are computed once, when first asked for, and kept:
    a trace is not changed once recorded. `data_roots` is where its tensors' data roots are looked up and kept
    (``tensor_commit.DataRoots``): a side that hashes states too passes its own, so bytes a state and the trace
    share are hashed once."""

    ops: list[TraceOp]
    values: list[np.ndarray[Any, Any]]
    outputs: dict[str, int] = field(default_factory=dict)
    data_roots: DataRoots = field(default_factory=dict, repr=False, compare=False)

    @property
    def inputs(self) -> dict[str, int]:
        return {op.attrs[0]: i for i, op in enumerate(self.ops) if op.code == "input"}

    def value(self, name: str) -> np.ndarray[Any, Any]:
        """A named input or output."""
        ids = {**self.inputs, **self.outputs}
        return self.values[ids[name]]

    @property
    def size_bytes(self) -> int:
        """Bytes of every recorded tensor."""
        return sum(v.nbytes for v in self.values)

    @cached_property
    def tensor_roots(self) -> list[bytes]:
        return tensor_roots(self.values, self.data_roots)

    @cached_property
    def op_leaves(self) -> list[bytes]:
        """Every op's leaf (``op_leaf``), built once: a dispute opens several ops, and each leaf's attributes hash
        (canonical JSON) costs more than its keccak."""
        roots = self.tensor_roots
        leaves = []
        for i, op in enumerate(self.ops):
            parts = [uint256(i), keccak256(op.code.encode()), attrs_hash(op.attrs)]
            parts += [uint256(j) + roots[j] for j in op.inputs]
            leaves.append(keccak256(b"".join([*parts, roots[i]])))
        return leaves

    def op_leaf(self, i: int) -> bytes:
        """keccak256(uint256 i ++ keccak(code) ++ keccak(attrs JSON) ++ (uint256 id ++ root) per input ++ root i)."""
        if not 0 <= i < len(self.ops):
            raise IndexError(f"op {i} out of range for a trace of {len(self.ops)} ops")
        return self.op_leaves[i]

    @cached_property
    def _op_levels(self) -> list[list[bytes]]:
        """The tree over the op leaves (``crypto.merkle``), kept for ``op_proof``."""
        return merkle_levels(self.op_leaves)

    @cached_property
    def root(self) -> bytes:
        return self._op_levels[-1][0]

    def op_proof(self, i: int) -> list[bytes]:
        return levels_proof(self._op_levels, i)

    def data_levels(self, i: int) -> list[list[bytes]]:
        """The levels of tensor i's data tree (``tensor_commit.tensor_levels``), built when first asked for and kept:
        a move opens elements of a few tensors, several of them more than once."""
        levels = self._data_levels.get(i)
        if levels is None:
            levels = self._data_levels[i] = tensor_levels(self.values[i])
        return levels

    @cached_property
    def _data_levels(self) -> dict[int, list[list[bytes]]]:
        return {}

    def verify_op(self, i: int) -> bool:
        return verify_proof(self.op_leaf(i), self.op_proof(i), self.root)

    def check(self) -> int | None:
        """Re-execute every op with the NumPy reference from the named inputs alone; the index of the first
        op whose output differs from the recorded one, or None when all agree."""
        return R.run_trace([op.code for op in self.ops], [op.inputs for op in self.ops],
                           [op.attrs for op in self.ops], self.values)

    def to_bytes(self) -> bytes:
        """npz without pickle: every tensor, plus the ops and outputs as JSON."""
        meta = {"ops": [[op.code, list(op.inputs), _norm(op.attrs)] for op in self.ops], "outputs": self.outputs}
        buf = io.BytesIO()
        arrays: dict[str, Any] = {f"t{i}": v for i, v in enumerate(self.values)}
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        np.savez(buf, **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Trace:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            values = [z[f"t{i}"] for i in range(len(meta["ops"]))]
        ops = [TraceOp(c, tuple(ins), cast(tuple[Any, ...], _denorm(a))) for c, ins, a in meta["ops"]]
        return cls(ops, values, dict(meta["outputs"]))


class TracingBackend:
    """A backend that runs each op on `inner` and records it; use ``.backend`` where a Backend is expected.

    Every tensor an op consumes must have been recorded (an input or an earlier op's output): anything
    computed outside the backend is refused, so a trace is complete by construction.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.ops: list[TraceOp] = []
        self.values: list[np.ndarray[Any, Any]] = []
        self.outputs: dict[str, int] = {}
        self._ids: dict[int, int] = {}
        self._alive: list[Any] = []  # keeps every recorded object alive, so no id() is reused

    @property
    def backend(self) -> Any:
        return self

    def input(self, name: str, value: Any) -> Any:
        return self._record("input", [], (name,), value)

    def output(self, name: str, value: Any) -> None:
        self.outputs[name] = self._id(value)

    def trace(self) -> Trace:
        return Trace(list(self.ops), list(self.values), dict(self.outputs))

    def _id(self, x: Any) -> int:
        i = self._ids.get(id(x))
        if i is None:
            raise TraceError(f"an op consumed a tensor of shape {tuple(np.shape(x))} that no traced op produced")
        return i

    def _record(self, code: str, inputs: list[int], attrs: tuple[Any, ...], out: Any) -> Any:
        if id(out) in self._ids or not hasattr(out, "shape") or isinstance(out, np.generic):
            out = out.view_as(out) if hasattr(out, "view_as") else np.array(out)
        self._ids[id(out)] = len(self.ops)
        self._alive.append(out)
        self.ops.append(TraceOp(code, tuple(inputs), attrs))
        self.values.append(_to_numpy(out))
        return out

    def __getattr__(self, name: str) -> Any:
        if name not in OP_ARGS:
            raise AttributeError(name)
        kinds = OP_ARGS[name]
        fn = getattr(self.inner, name)

        def call(*args: Any) -> Any:
            inputs: list[int] = []
            attrs: list[Any] = []
            for kind, a in zip(kinds, args, strict=True):
                if kind == "t":
                    inputs.append(self._id(a))
                elif kind == "ts":
                    inputs.extend(self._id(x) for x in a)
                elif kind == "a":
                    attrs.append(_denorm(_norm(a)))
            out = fn(*args)
            if name == "frexp":
                return (self._record("frexp_m", inputs, tuple(attrs), out[0]),
                        self._record("frexp_e", inputs, tuple(attrs), out[1]))
            return self._record(name, inputs, tuple(attrs), out)

        return call


def _to_numpy(x: Any) -> np.ndarray[Any, Any]:
    if hasattr(x, "detach"):
        return cast(np.ndarray[Any, Any], x.detach().cpu().numpy().copy())
    return np.array(x, copy=True)


# ---- recomputing one element ----


@dataclass(frozen=True)
class DotElement:
    """One element of the matmul rule (a sum is a matmul against ones), step by step; all integers exact.

    N = sum_k a[k] * b[k] = s_hi * 2**12 + s_lo, with a[k] = a_hi[k] * 2**12 + a_lo[k]; partial[k] is the
    prefix sum through k, so two parties bisect on it to the first integer multiply-add they disagree on.
    value = RNE_float32(N * 2**scale), or the non-finite rule when `special`.
    """

    block_a: int
    block_b: int
    a: tuple[int, ...]
    b: tuple[int, ...]
    a_hi: tuple[int, ...]
    a_lo: tuple[int, ...]
    s_hi: int
    s_lo: int
    partial: tuple[int, ...]
    n: int
    scale: int
    special: bool
    value: float


def dot_element(row: np.ndarray[Any, Any], col: np.ndarray[Any, Any]) -> DotElement:
    """The matmul rule for one output element from its row of A and column of B (float32, length K)."""
    a2 = np.asarray(row, np.float32).reshape(1, -1)
    b2 = np.asarray(col, np.float32).reshape(-1, 1)
    fa, fb = np.isfinite(a2), np.isfinite(b2)
    qa, ea = R.aligned(np.where(fa, a2, np.float32(0)), 1)
    qb, eb = R.aligned(np.where(fb, b2, np.float32(0)), 0)
    a = [int(v) for v in qa[0]]
    b = [int(v) for v in qb[:, 0]]
    hi = [v >> SLICE_BITS for v in a]  # floor division by 2**12
    lo = [v - (h << SLICE_BITS) for v, h in zip(a, hi, strict=True)]
    partial: list[int] = []
    acc = 0
    for x, y in zip(a, b, strict=True):
        acc += x * y
        partial.append(acc)
    s_hi = sum(h * y for h, y in zip(hi, b, strict=True))
    s_lo = sum(v * y for v, y in zip(lo, b, strict=True))
    scale = int(ea[0, 0]) + int(eb[0, 0]) - 300
    return DotElement(int(ea[0, 0]), int(eb[0, 0]), tuple(a), tuple(b), tuple(hi), tuple(lo), s_hi, s_lo,
                      tuple(partial), acc, scale, not (fa.all() and fb.all()), float(R.matmul(a2, b2)[0, 0]))


@dataclass(frozen=True)
class Recomputed:
    value: np.ndarray[Any, Any]  # 0-dim, the output's dtype
    detail: DotElement | None = None


def recompute_element(trace: Trace, op_index: int, element: int) -> Recomputed:
    """Output element `element` (flat, row-major) of op `op_index`, from that op's input tensors, its
    attributes and its output shape only (never its recorded output values)."""
    op = trace.ops[op_index]
    ins = [trace.values[j] for j in op.inputs]
    shape = trace.values[op_index].shape
    pos = np.unravel_index(element, shape) if shape else ()
    if op.code == "input":
        raise TraceError("a named input is not computed by the trace")
    if op.code in CONSTANT:
        return Recomputed(np.asarray(R.execute(op.code, [], op.attrs)).reshape(-1)[element])
    if op.code in ELEMENTWISE:
        scalars = [x[bcast(pos, x.shape)] for x in ins]
        return Recomputed(np.asarray(R.execute(op.code, [np.asarray(s) for s in scalars], op.attrs)).reshape(()))
    if op.code in MOVEMENT:
        return Recomputed(_moved(op, ins, shape, element))
    if op.code in ("matmul", "sum", "index_sum"):
        row, col = _dot_operands(op, ins, pos)
        d = dot_element(row, col)
        return Recomputed(np.asarray(np.float32(d.value)), d)
    if op.code == "rowmax":
        return Recomputed(R.execute("rowmax", [ins[0][pos[:-1]]], ())[0])
    if op.code == "first_max":
        i, c = pos
        return Recomputed(R.execute("first_max", [ins[0][i:i + 1], ins[1][i:i + 1]], ())[0, c])
    if op.code == "onehot":
        i, c = pos
        return Recomputed(R.execute("onehot", [ins[0].reshape(-1)[i:i + 1]], op.attrs)[0, c])
    raise TraceError(f"no element rule for op {op.code!r}")


def check_element(trace: Trace, op_index: int, element: int) -> bool:
    """Does the recorded output element equal its recomputation (NaN equals any NaN)?"""
    got = recompute_element(trace, op_index, element).value
    want = trace.values[op_index].reshape(-1)[element]
    return R.same_bits(np.asarray(got, dtype=want.dtype), np.asarray(want))


def bcast(pos: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index into an input of `shape` broadcast against an output position."""
    tail = pos[len(pos) - len(shape):] if shape else ()
    return tuple(0 if d == 1 else int(i) for i, d in zip(tail, shape, strict=True))


def _moved(op: TraceOp, ins: list[np.ndarray[Any, Any]], shape: tuple[int, ...], element: int) -> Any:
    """Which input element lands at `element`: run the op on arrays of (1-based, offset) positions.

    Inputs that steer the movement (take's and embed's index, gather's labels) are used as they are."""
    if op.code == "append_ones":
        i, j = np.unravel_index(element, shape)
        x = ins[0]
        return x[i, j] if j < x.shape[1] else np.float32(1.0)
    steering = {"take": {1}, "embed": {1}, "gather": {1}}.get(op.code, set())
    carried: list[Any] = []
    offsets: list[int] = []
    off = 1
    for k, x in enumerate(ins):
        if k in steering:
            carried.append(x)
            continue
        offsets.append(off)
        carried.append(np.arange(off, off + x.size, dtype=np.int64).reshape(x.shape))
        off += x.size
    where = int(np.asarray(R.execute(op.code, carried, op.attrs)).reshape(-1)[element])
    src = [x for k, x in enumerate(ins) if k not in steering]
    if where == 0:
        return np.zeros((), dtype=src[0].dtype)
    for x, o in zip(src, offsets, strict=True):
        if o <= where < o + x.size:
            return x.reshape(-1)[where - o]
    raise TraceError("movement index out of range")


def _dot_operands(op: TraceOp, ins: list[np.ndarray[Any, Any]], pos: tuple[Any, ...]) -> tuple[Any, Any]:
    if op.code == "matmul":
        a, b = ins
        if a.ndim == 3:
            n, i, j = pos
            return a[n, i, :], b[n, :, j]
        i, j = pos
        return a[i, :], b[:, j]
    if op.code == "sum":
        (x,), dim = ins, op.attrs[0]
        line = x[pos[0], :] if dim == 1 else x[:, pos[1]]
        return line, np.ones(line.shape[0], np.float32)
    idx, g = ins
    v, j = pos
    return (np.asarray(idx).reshape(-1) == v).astype(np.float32), g[:, j]
