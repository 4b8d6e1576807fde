"""Op-prefix roots: the commitment two traces of one step are bisected over (``contracts/StepGame.sol``).

The prefix of i ops is a complete binary tree of ``depth`` levels whose slots 0..i-1 hold the op leaves
(``Trace.op_leaf``) and whose later slots are zero, hashed as OpenZeppelin does (commutative keccak, so
``MerkleProof`` checks its paths).  Position i of the bisection is that root; both sides agree on the empty
prefix (``empty_root``).  Where the two sides' prefixes first differ at i + 1, one sibling path of slot i shows
both that slot i is empty in the agreed prefix of i ops and that it holds the claimant's leaf in its prefix of
i + 1: every sibling is either wholly before slot i (agreed) or wholly after it (empty).
"""

from __future__ import annotations

from collections.abc import Sequence

from gensyn_py.crypto.hashing import keccak_256
from gensyn_py.crypto.merkle import hash_pair

ZERO = bytes(32)
MAX_DEPTH = 24  # `StepGame.MAX_DEPTH`


def depth_for(n_ops: int) -> int:
    """`StepGame.depthFor`: ceil(log2 n_ops), at least 1."""
    if not 0 < n_ops <= 1 << MAX_DEPTH:
        raise ValueError(f"a prefix tree holds 1 to 2^{MAX_DEPTH} ops, not {n_ops}")
    return max(1, (n_ops - 1).bit_length())


def zero_roots(depth: int) -> list[bytes]:
    """The root of an empty subtree of each height 0..depth."""
    z = [ZERO]
    for _ in range(depth):
        z.append(hash_pair(z[-1], z[-1]))
    return z


def empty_root(depth: int) -> bytes:
    """`StepGame.emptyRoot`: the prefix of no ops."""
    return zero_roots(depth)[-1]


def prefix_roots(leaves: Sequence[bytes], depth: int) -> list[bytes]:
    """The roots of the prefixes of 0, 1, ..., len(leaves) ops (len(leaves) + 1 roots), one leaf set at a time."""
    zeros = zero_roots(depth)
    levels = [[zeros[h]] * (1 << (depth - h)) for h in range(depth + 1)]
    roots = [levels[depth][0]]
    for i, leaf in enumerate(leaves):
        levels[0][i] = leaf
        at = i
        for h in range(depth):
            at //= 2
            a, b = levels[h][2 * at], levels[h][2 * at + 1]
            levels[h + 1][at] = keccak_256(a + b if a < b else b + a).digest()  # hash_pair, inlined (n_ops x depth)
        roots.append(levels[depth][0])
    return roots


def prefix_levels(leaves: Sequence[bytes], filled: int, depth: int) -> list[list[bytes]]:
    """Every level of the prefix tree of `filled` ops (slots >= filled empty), leaves first: what ``path_of`` reads
    a slot's path from, so a side opening several ops in one prefix builds its tree once."""
    if not 0 <= filled <= len(leaves):
        raise ValueError(f"prefix {filled} out of range")
    zeros = zero_roots(depth)
    level = [*leaves[:filled], *[ZERO] * ((1 << depth) - filled)][:1 << depth]
    levels = [level]
    for h in range(depth):
        level = [zeros[h + 1] if left == right == zeros[h] else hash_pair(left, right)
                 for left, right in zip(level[0::2], level[1::2], strict=True)]
        levels.append(level)
    return levels


def path_of(levels: Sequence[Sequence[bytes]], slot: int) -> list[bytes]:
    """Sibling hashes from `slot` up to the root of the prefix tree with `levels` (``prefix_levels``)."""
    if not 0 <= slot < len(levels[0]):
        raise ValueError(f"slot {slot} out of range")
    return [level[(slot >> h) ^ 1] for h, level in enumerate(levels[:-1])]


def slot_path(leaves: Sequence[bytes], slot: int, filled: int, depth: int) -> list[bytes]:
    """Sibling hashes from `slot` up to the root of the prefix of `filled` ops (slots >= filled empty).

    With ``filled = slot`` (or ``slot + 1``) this is the path ``StepGame.openOp`` takes; with ``slot < filled``
    it opens op `slot` in the prefix of `filled` ops (``TraceProofs.verifyOp``)."""
    if not 0 <= slot < 1 << depth or not 0 <= filled <= len(leaves):
        raise ValueError(f"slot {slot} or prefix {filled} out of range")
    return path_of(prefix_levels(leaves, filled, depth), slot)
