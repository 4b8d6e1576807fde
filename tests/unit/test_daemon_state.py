"""DaemonState: cursor, actions and role data survive a reopen; one writer at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from gensyn_py.chain.events import Cursor
from gensyn_py.node.state import DONE, PENDING, DaemonState, StateError, action_key


def test_cursor_and_position_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    with DaemonState(path) as state:
        cursor: Cursor = state.cursor
        assert cursor.load() is None and state.last_position is None
        cursor.save(42)
        state.set_last_position((41, 3))
    with DaemonState(path) as state:
        assert state.cursor.load() == 42
        assert state.next_block == 42
        assert state.last_position == (41, 3)


def test_actions_go_pending_then_done_and_keep_tx_hash(tmp_path: Path) -> None:
    with DaemonState(tmp_path / "d.sqlite") as state:
        assert state.action(("commit", 7)) is None
        first = state.mark_pending(("commit", 7))
        assert (first.status, first.attempts) == (PENDING, 1)
        assert state.mark_pending("commit:7").attempts == 2
        assert not state.is_done(("commit", 7))
        state.mark_done(("commit", 7), tx_hash="0xabc")
        done = state.action("commit:7")
        assert done is not None and done.status == DONE and done.tx_hash == "0xabc" and done.attempts == 2
        assert state.is_done(("commit", 7))
        state.mark_pending(("claim", 1))
        assert [a.key for a in state.actions(status=DONE)] == ["commit:7"]
        assert [a.key for a in state.actions(prefix="cla")] == ["claim:1"]
        assert state.count_actions(DONE) == 1 and state.count_actions(PENDING) == 1


def test_action_key_joins_parts() -> None:
    assert action_key(("verdict", 3, "0xab")) == "verdict:3:0xab"
    assert action_key("x") == "x"
    with pytest.raises(ValueError):
        action_key(())


def test_key_value_store_round_trips_json(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    with DaemonState(path) as state:
        assert state.get("hw", "none") == "none"
        state.put("hw", {"device": "cpu", "mem": [1, 2]})
        state.put("unit.3.ckpt", "bafy")
        assert state.keys("unit.") == ["unit.3.ckpt"]
        state.delete("unit.3.ckpt")
    with DaemonState(path) as state:
        assert state.get("hw") == {"device": "cpu", "mem": [1, 2]}
        assert state.keys("unit.") == []


def test_second_writer_is_refused_but_readers_see_progress(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    with DaemonState(path) as writer:
        with pytest.raises(StateError, match="in use"):
            DaemonState(path)
        writer.cursor.save(5)
        with DaemonState(path, readonly=True) as reader:
            assert reader.next_block == 5
            writer.mark_done(("a", 1))
            assert reader.is_done(("a", 1))
            with pytest.raises(StateError, match="read-only"):
                reader.put("k", 1)
    with DaemonState(path) as again:  # the lock went with the first writer
        assert again.next_block == 5
