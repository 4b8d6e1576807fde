"""`gensyn_py/chain/scoring.py` against the contract: `TaskPool.claimScore` for several prices, throughputs,
job bounds and reputations gives what the Python mirror computes from the registry's own numbers."""

from __future__ import annotations

from gensyn_py.chain import scoring
from gensyn_py.types import Hardware, Reputation
from tests.contracts.helpers import E18, Protocol


def _mirror(p: Protocol, node: str, max_price: int, min_throughput: int) -> int:
    hw = Hardware.from_abi(p.registry.functions.hardwareOf(node).call())
    rep = Reputation.from_abi(p.registry.functions.reputationOf(node).call())
    return scoring.of_node(rep, hw, max_price, min_throughput)


def test_the_python_score_is_the_contracts_for_prices_throughputs_and_reputations(proto: Protocol) -> None:
    p, r, s = proto, proto.accounts[1], proto.accounts[2]
    jobs = [(200 * E18, 50), (150 * E18, 0), (1, 100), (7 * E18 + 3, 33)]  # (maxPricePerUnit, minThroughput)
    units = []
    for max_price, min_tp in jobs:
        p.submit(r, maxPricePerUnit=max_price, minThroughput=min_tp)
        units.append(int(p.pool.functions.nextUnitId().call()) - 1)
    for price, throughput in [(0, 100), (50 * E18, 75), (200 * E18, 50), (300 * E18, 1000), (7 * E18, 34)]:
        p.tx(s, p.registry.functions.updateHardware((1, 16000, throughput, price)))
        for unit_id, (max_price, min_tp) in zip(units, jobs, strict=True):
            score, _ = p.pool.functions.claimScore(s.address, unit_id).call()
            assert score == _mirror(p, s.address, max_price, min_tp), (price, throughput, max_price, min_tp)
    # A missed unit (a claim that timed out) changes the reliability term; the mirror follows.
    p.tx(s, p.registry.functions.updateHardware((1, 16000, 100, 100 * E18)))
    p.advance(p.params["claimWindow"])
    p.tx(s, p.pool.functions.claim(units[0]))
    p.advance(61)
    p.tx(p.accounts[9], p.pool.functions.timeoutClaim(units[0]))
    assert p.registry.functions.reputationOf(s.address).call() == [0, 1, 0]
    for unit_id, (max_price, min_tp) in zip(units, jobs, strict=True):
        score, _ = p.pool.functions.claimScore(s.address, unit_id).call()
        assert score == _mirror(p, s.address, max_price, min_tp)
    p.check_conservation()


def test_the_python_required_score_is_the_contracts(proto: Protocol) -> None:
    p = proto
    p.submit(p.accounts[1])
    window, opened = p.params["claimWindow"], p.unit(1)["openedAt"]
    for step in (0, 10, 25, window):
        if step:
            p.advance(step)
            p.mine()
        _, required = p.pool.functions.claimScore(p.accounts[2].address, 1).call()
        now = p.now()
        # An eth_call runs in the latest block's context or the next one's, depending on the node.
        assert required in {scoring.required(opened, window, now), scoring.required(opened, window, now + 1)}
