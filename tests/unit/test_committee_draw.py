"""The stake-weighted draws' odds (`draw_seats`, the Python twin of `DisputeCommittee._draw`, and `draw_validators`,
the twin of `Verdicts.draw`; contract tests check they seat the same members): proportional to stake up to the
cap, so splitting stake over sybils gains nothing; a seat needs a whole bond; joining or topping up after the
draw was frozen buys nothing."""

from __future__ import annotations

from collections import Counter

from gensyn_py.chain.draw import DRAW_WEIGHT_SCALE, ValidatorEntry, draw_seats, draw_validators, weight_of
from gensyn_py.crypto.hashing import keccak256

BOND = 50
CAP = BOND * 20
FROZEN = 100


def entries(stakes: dict[str, int], *, since: int = 1) -> list[ValidatorEntry]:
    return [ValidatorEntry(v, since, since, weight_of(b, CAP)) for v, b in stakes.items()]


def seats(stakes: dict[str, int], draws: int = 1500, want: int = 3) -> Counter[str]:
    es = entries(stakes)
    count: Counter[str] = Counter()
    for i in range(draws):
        count.update(draw_seats(keccak256(i.to_bytes(32, "big")), es, FROZEN, stakes, (), want, BOND))
    return count


def test_twenty_one_bond_sybils_sit_as_often_as_one_node_with_twenty_bonds() -> None:
    honest = {f"h{i}": CAP for i in range(10)}
    sybils = {f"s{i}": BOND for i in range(20)}
    count = seats({"whale": CAP, **sybils, **honest})
    whale, sybil_total = count["whale"], sum(count[s] for s in sybils)
    honest_mean = sum(count[h] for h in honest) / len(honest)
    # same stake, same seats (within sampling noise); the honest nodes, each holding the cap, sit like the whale
    assert abs(whale - sybil_total) < 0.25 * whale
    assert abs(whale - honest_mean) < 0.25 * whale


def test_stake_beyond_the_cap_buys_nothing_and_less_than_a_bond_never_sits() -> None:
    stakes = {"big": 100 * CAP, "capped": CAP, "dust": BOND - 1, **{f"h{i}": CAP for i in range(6)}}
    count = seats(stakes, draws=1000)
    assert count["dust"] == 0
    assert abs(count["big"] - count["capped"]) < 0.2 * count["capped"]


def test_a_small_set_still_fills_the_committee() -> None:
    stakes = dict.fromkeys(["a", "b", "c", "d"], CAP)
    es = entries(stakes)
    for i in range(200):
        assert len(draw_seats(keccak256(bytes([i % 256, i // 256])), es, FROZEN, stakes, ("d",), 3, BOND)) == 3


def test_weight_is_proportional_up_to_the_cap() -> None:
    assert weight_of(CAP, CAP) == weight_of(10 * CAP, CAP) == DRAW_WEIGHT_SCALE
    assert weight_of(CAP // 4, CAP) == DRAW_WEIGHT_SCALE // 4
    assert weight_of(0, CAP) == 0


def test_validator_draw_odds_follow_stake_not_addresses() -> None:
    """Twenty one-minimum sybils against ten honest validators at the cap: the sybils hold as much weight as one
    honest validator, so they fill about 1/11 of the seats, not 2/3 as a per-address draw would give them."""
    honest = {f"h{i}": CAP for i in range(10)}
    sybils = {f"s{i}": BOND for i in range(20)}
    es = entries({**sybils, **honest})
    count: Counter[str] = Counter()
    for i in range(1500):
        count.update(draw_validators(keccak256(i.to_bytes(32, "big")), es, FROZEN, "solver", 2, {e.node for e in es}))
    sybil_share = sum(count[s] for s in sybils) / sum(count.values())
    assert 0.04 < sybil_share < 0.15


def test_late_entrants_and_late_top_ups_are_never_drawn() -> None:
    """Members that joined, or whose weight changed, after the freeze are not candidates, however heavy."""
    es = [ValidatorEntry("early", 1, 1, DRAW_WEIGHT_SCALE), ValidatorEntry("joined", FROZEN + 1, FROZEN + 1,
          DRAW_WEIGHT_SCALE), ValidatorEntry("topped", 1, FROZEN + 1, DRAW_WEIGHT_SCALE)]
    for i in range(300):
        seed = keccak256(i.to_bytes(32, "big"))
        assert draw_validators(seed, es, FROZEN, "solver", 2, {"early", "joined", "topped"}) == ["early"]
        assert draw_seats(seed, es, FROZEN, dict.fromkeys(["early", "joined", "topped"], CAP), (), 2, BOND) == ["early"]
