"""The dispute game played by the real role daemons: nobody acts by hand (real anvil, real daemon processes).

A market whose pool hands repro disputes to the game (`disputeGame: 1`): one solver that flips one bit of one op's
output in one step of its unit (`flipped_bit`, `gensyn_py/sim/cheats.py`), computes one element of one matmul from a
wrong partial sum (`wrong_partial_sum`: the game goes on to that element's one integer multiply-add), or takes a
row's second largest entry for its maximum (`wrong_row_max`: the claimant answers the row challenge with that entry,
the counter shows the larger one), and defends that work in the game from its own replay, two validators. The
validator drawn for the cheated segment rejects it; both daemons then play every move of the segment game and the
step game (`gensyn_py/node/game_player.py`). One side (the validator, or the cheating solver) is killed with SIGKILL
mid-game and restarted: it picks the game up from the chain and its replay. The contract convicts the solver; the
validator is paid; nobody honest is slashed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gensyn_py.chain.segment_game import Reason
from gensyn_py.chain.step_game import Reason as StepReason
from gensyn_py.sim.localnet import LocalNetwork, wait_until
from tests.integration.market_kit import (
    assert_conservation,
    first_new_block,
    protocol,
    slashes,
    start_market,
    submit,
    wait_log,
)

E18 = 10**18
COLLATERAL = 100 * E18
NODES = {"solver-1": ("solver", 2), "validator-1": ("validator", 4), "validator-2": ("validator", 5)}
SOLVER_FRAUD = 2  # Outcome
DECIDED_BY = {"flipped_bit": StepReason.WRONG_ELEMENT, "wrong_partial_sum": StepReason.WRONG_MULTIPLY_ADD,
              "wrong_row_max": StepReason.WRONG_ROW_MAX}


@pytest.fixture()
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNetwork]:
    net = start_market(tmp_path_factory.mktemp("game"), nodes=NODES, disputeGame=1)
    try:
        yield net
    finally:
        net.stop()


# Each cheat once, each side killed mid-game at least once (the claimant after its first move, the transcript's opening;
# the counter after its contest).
PLAYS = [("flipped_bit", "counter"), ("flipped_bit", "claimant"), ("wrong_partial_sum", "counter"),
         ("wrong_row_max", "claimant")]


@pytest.mark.parametrize(("cheat", "killed"), PLAYS)
def test_the_daemons_play_the_game_to_the_cheat_and_survive_a_kill_mid_game(market: LocalNetwork, cheat: str,
                                                                           killed: str) -> None:
    net = market
    p = protocol(net)
    game = p["SegmentGame"]
    start = first_new_block(net)
    cheater = net.nodes["solver-1"]
    net.restart("solver-1", "--cheat", cheat)
    job = submit(net, steps=40, seed=23)
    opened = wait_until(lambda: game.events.DisputeOpened().get_logs(from_block=start) or None, 180,
                        "the validator's reject to open a game", on_wait=net.check_alive)[0]["args"]
    assert opened["solver"] == cheater.account.address
    counter = next(n for n in ("validator-1", "validator-2") if net.nodes[n].account.address == opened["opener"])
    # Mid-game, once the side has made its first move: SIGKILL it and start it again (it keeps its flags).
    victim, first_move = (counter, "contest") if killed == "counter" else ("solver-1", "openTranscript")
    wait_log(net, victim, "game.move", timeout=120, move=first_move)
    net.kill(victim)
    net.restart(victim)
    decided = wait_until(lambda: game.events.GameDecided().get_logs(from_block=start) or None, 240,
                         "the game to be decided", on_wait=net.check_alive)[0]["args"]
    steps = p["StepGame"].events.GameDecided().get_logs(from_block=start)
    assert (decided["winner"], decided["reason"], decided["outcome"]) == (opened["opener"], Reason.STEP_GAME,
                                                                          SOLVER_FRAUD), _why(net, steps, counter)
    assert [e["args"]["winner"] for e in steps] == [opened["opener"]], _why(net, steps, counter)
    # decided by recomputing (an element, a multiply-add, a row entry), not on time
    assert steps[0]["args"]["reason"] == DECIDED_BY[cheat], _why(net, steps, counter)
    assert slashes(net, start) == [(cheater.account.address, COLLATERAL)]  # the cheater, nobody else
    moves = [r for r in net.log_lines(counter) if r.get("event") in ("game.move", "game.step_move")]
    assert moves, "the counter's daemon played"
    lines = net.log_lines(victim)
    restarted = max(i for i, r in enumerate(lines) if r.get("event") == "daemon.start")
    assert any(r.get("event") == "game.move" for r in lines[restarted:]), "the killed side played on after its restart"
    assert job >= 1
    assert_conservation(net)


def _why(net: LocalNetwork, steps: list[Any], counter: str) -> str:
    """What a lost game shows: the step game's decision and each side's warnings and moves, with their times."""
    lines = [f"step game decided: {[dict(e['args']) for e in steps]}"]
    for name in ("solver-1", counter):
        for r in net.log_lines(name):
            if r.get("level") in ("warning", "error") or str(r.get("event", "")).startswith(("game.", "daemon.")):
                lines.append(f"{name} {r.get('ts', '')} {r.get('event')} {r.get('fields', '')}")
    return "\n".join(lines)
