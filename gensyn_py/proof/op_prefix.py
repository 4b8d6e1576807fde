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
            levels[h + 1][at] = hash_pair(levels[h][2 * at], levels[h][2 * at + 1])
        roots.append(levels[depth][0])
    return roots


def slot_path(leaves: Sequence[bytes], slot: int, filled: int, depth: int) -> list[bytes]:
    """Sibling hashes from `slot` up to the root of the prefix of `filled` ops (slots >= filled empty).

    With ``filled = slot`` (or ``slot + 1``) this is the path ``StepGame.openOp`` takes; with ``slot < filled``
    it opens op `slot` in the prefix of `filled` ops (``TraceProofs.verifyOp``)."""
    if not 0 <= slot < 1 << depth or not 0 <= filled <= len(leaves):
        raise ValueError(f"slot {slot} or prefix {filled} out of range")
    zeros = zero_roots(depth)
    level = [leaves[j] if j < filled else ZERO for j in range(1 << depth)]
    path: list[bytes] = []
    at = slot
    for h in range(depth):
        path.append(level[at ^ 1])
        nxt = []
        for j in range(len(level) // 2):
            left, right = level[2 * j], level[2 * j + 1]
            nxt.append(zeros[h + 1] if left == right == zeros[h] else hash_pair(left, right))
        level = nxt
        at //= 2
    return path
