"""The packed calldata of the step game's deciding moves (``contracts/libraries/PackedMoves.sol``).

A deciding move (``refuteElement``, ``refuteDotStep``) is one ``bytes`` argument of 32-byte words in sequence: no
ABI offsets, and nothing said twice (an input's root is the op leaf's, a chunk's index follows from its element).
This module writes it from the struct tuples ``onchain_trace`` builds (``element_check``, ``dot_move``), so the
proofs are made once and the two encodings cannot drift apart:

- op leaf: ``index, codeHash, attrsHash, (id, root) per input, outputRoot``, then its path ``depth, sibling...``;
- tensor header: ``dtype, ndim, dim...``; element opening: ``element, chunk, depth, sibling...``;
- ``refuteElement``: op leaf and path, clamp's bounds (``lo << 64 | hi``), the output header and element, then
  each input's header and element;
- ``refuteDotStep``: ``element, k, blockA, blockB, partial[k-1], partial[k], rows``, op leaf and path, then
  input 0's header with a_k, and input 1's with b_k (a sum has no B).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gensyn_py.crypto.hashing import uint256
from gensyn_py.proof.prefix_sums import int256

ArgTuple = Sequence[Any]  # a struct tuple as ``onchain_trace``'s ``as_arg()`` writes it


def _path(proof: Sequence[bytes]) -> bytes:
    return uint256(len(proof)) + b"".join(bytes(p) for p in proof)


def _op(op: ArgTuple) -> bytes:
    index, code, attrs, inputs, output_root, proof = op
    pairs = b"".join(uint256(int(i)) + bytes(root) for i, root in inputs)
    return uint256(int(index)) + bytes(code) + bytes(attrs) + pairs + bytes(output_root) + _path(proof)


def _tensor(ref: ArgTuple, opening: ArgTuple) -> bytes:
    """A tensor header (its root is the op leaf's) and one element's opening (its chunk index is implied)."""
    _, dtype, shape = ref
    element, _, chunk, proof = opening
    header = uint256(int(dtype)) + uint256(len(shape)) + b"".join(uint256(int(d)) for d in shape)
    return header + uint256(int(element)) + bytes(chunk) + _path(proof)


def pack_element_check(check: ArgTuple) -> bytes:
    """``refuteElement``'s move from an ``ElementCheck`` tuple (op, ins, inEls, out, outEl, (lo, hi))."""
    op, ins, in_els, out, out_el, bounds = check
    lo, hi = (int(b) for b in bounds)
    inputs = b"".join(_tensor(ref, el) for ref, el in zip(ins, in_els, strict=True))
    return _op(op) + uint256(lo << 64 | hi) + _tensor(out, out_el) + inputs


def pack_dot_step(op: ArgTuple, ins: Sequence[ArgTuple], rows: int, element: int, k: int, a: ArgTuple,
                  b: ArgTuple | None, sums: tuple[int, int], blocks: tuple[int, int]) -> bytes:
    """``refuteDotStep``'s move for multiply-add k of output element `element` of the dot op leaf `op` (inputs'
    headers `ins`; `rows` index_sum's attribute, else 0): a_k and b_k opened (`b` None for a sum), the sums
    (partial[k-1], 0 when k = 0, and partial[k]) and the block exponents, which the game holds (no witnesses or
    prefix-sum paths are sent)."""
    prev, cur = sums
    head = (b"".join(uint256(int(v)) for v in (element, k, blocks[0], blocks[1])) + int256(prev if k else 0)
            + int256(cur) + uint256(rows))
    operands = _tensor(ins[0], a) + (_tensor(ins[1], b) if b is not None else b"")
    return head + _op(op) + operands
