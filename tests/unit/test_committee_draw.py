"""The committee draw's odds (`draw_seats`, the Python twin of `DisputeCommittee._draw`; a contract test checks
they seat the same members): proportional to stake up to the cap, so splitting stake over sybils gains nothing,
and a seat needs a whole bond."""

from __future__ import annotations

from collections import Counter

from gensyn_py.chain.committee import STAKE_CAP_BONDS, draw_seats
from gensyn_py.crypto.hashing import keccak256

BOND = 50
CAP = BOND * STAKE_CAP_BONDS


def seats(validators: list[str], free: dict[str, int], draws: int = 1500, want: int = 3) -> Counter[str]:
    count: Counter[str] = Counter()
    for i in range(draws):
        count.update(draw_seats(keccak256(i.to_bytes(32, "big")), validators, free, (), want, BOND))
    return count


def test_twenty_one_bond_sybils_sit_as_often_as_one_node_with_twenty_bonds() -> None:
    honest = [f"h{i}" for i in range(10)]
    sybils = [f"s{i}" for i in range(20)]
    validators = ["whale", *sybils, *honest]
    free = {"whale": CAP, **dict.fromkeys(sybils, BOND), **dict.fromkeys(honest, CAP)}
    count = seats(validators, free)
    whale, sybil_total = count["whale"], sum(count[s] for s in sybils)
    honest_mean = sum(count[h] for h in honest) / len(honest)
    # same stake, same seats (within sampling noise); the honest nodes, each holding the cap, sit like the whale
    assert abs(whale - sybil_total) < 0.25 * whale
    assert abs(whale - honest_mean) < 0.25 * whale


def test_stake_beyond_the_cap_buys_nothing_and_less_than_a_bond_never_sits() -> None:
    validators = ["big", "capped", "dust", *[f"h{i}" for i in range(6)]]
    free = {"big": 100 * CAP, "capped": CAP, "dust": BOND - 1, **{f"h{i}": CAP for i in range(6)}}
    count = seats(validators, free, draws=1000)
    assert count["dust"] == 0
    assert abs(count["big"] - count["capped"]) < 0.2 * count["capped"]


def test_a_small_set_still_fills_the_committee() -> None:
    validators = ["a", "b", "c", "d"]
    free = dict.fromkeys(validators, CAP)
    for i in range(200):
        assert len(draw_seats(keccak256(bytes([i % 256, i // 256])), validators, free, ("d",), 3, BOND)) == 3
