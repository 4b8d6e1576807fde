"""A game decision reads one block whole (`chain/decision_block.py`): below anvil's head, never a block before this
side's own last move, and a dispute opened in a block it does not read yet is no failure (`node/game_player.py`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gensyn_py.chain.segment_game import Stage
from gensyn_py.errors import ContractRevert
from gensyn_py.node.game_player import GamePlayer

ME = "0x00000000000000000000000000000000000000aa"
DID = 3


class Chain:
    """The node's RPC as the player reads it: a head, and the client it names."""

    def __init__(self, head: int, version: str) -> None:
        self.eth = SimpleNamespace(block_number=head)
        self.client_version = version


class Game:
    """A segment game whose dispute DID opens at block `opened` and is decided from then on; records each read."""

    def __init__(self, opened: int) -> None:
        self.opened = opened
        self.reads: list[int] = []

    def dispute_of(self, did: int, *, block: int) -> tuple[int, int, int, int, str]:
        self.reads.append(block)
        if block < self.opened:
            raise ContractRevert("UnknownDispute", {"id": did})
        return Stage.DECIDED, 70, 0, 0, ME


class Node(SimpleNamespace):
    def unfollow(self, kind: str, key: int) -> None:
        self.unfollowed.append((kind, key))


def player(head: int, opened: int, version: str = "anvil/v1.7.1") -> tuple[GamePlayer, Chain, Game, Node]:
    chain, game = Chain(head, version), Game(opened)
    events: list[str] = []
    log = SimpleNamespace(info=lambda event, **_: events.append(event), warning=lambda event, **_: events.append(event))
    node = Node(protocol=SimpleNamespace(w3=chain, names=["SegmentGame"]), poll_interval=0.3, address=ME, log=log,
                unfollowed=[], events=events)
    p = GamePlayer(node)  # type: ignore[arg-type]
    p.__dict__["game"] = game  # the cached property, set
    return p, chain, game, node


UNIT: Any = SimpleNamespace(unit_id=70, job_id=7)


def test_on_anvil_a_dispute_opened_in_the_head_block_waits_for_the_next_block() -> None:
    p, chain, game, node = player(head=20, opened=20)
    p._play(DID, UNIT)  # reads block 19, where the dispute is not yet: not a failed tick
    assert game.reads == [19] and node.unfollowed == [] and node.events == []
    chain.eth.block_number = 21
    p._play(DID, UNIT)
    assert game.reads == [19, 20] and node.unfollowed == [("game", DID)] and node.events == ["game.decided"]


def test_a_decision_never_reads_a_block_before_this_sides_own_last_move() -> None:
    p, chain, game, node = player(head=30, opened=1)
    p._move(("segment", DID, 1, 0), lambda fn, *args: {"blockNumber": 30, "gasUsed": 50_000}, "contest")
    assert node.events == ["game.move"]
    p._play(DID, UNIT)  # the head holds the move; the block below it does not: nothing is read, nothing sent
    assert game.reads == []
    chain.eth.block_number = 31
    p._play(DID, UNIT)
    assert game.reads == [30]


def test_a_keeper_call_moves_the_floor_too() -> None:
    p, _, game, _ = player(head=40, opened=1)
    p._send("settle", lambda did: {"blockNumber": 40, "gasUsed": 30_000}, DID)
    p._play(DID, UNIT)
    assert game.reads == []


def test_another_client_reads_its_head() -> None:
    p, _, game, node = player(head=20, opened=20, version="Geth/v1.14.11-stable/linux-amd64/go1.22.5")
    p._play(DID, UNIT)
    assert game.reads == [20] and node.unfollowed == [("game", DID)]
