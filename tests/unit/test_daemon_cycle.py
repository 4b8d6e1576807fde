"""The daemon base with a fake event reader: dispatch, once(), triage, backoff, signals."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from web3 import Web3

from gensyn_py.chain.events import Cursor, EventRecord
from gensyn_py.errors import ChainError, ContentNotFound
from gensyn_py.node.daemon import Daemon, Handler, Triage
from gensyn_py.node.state import DaemonState

ADDR = Web3.to_checksum_address("0x" + "11" * 20)


def rec(block: int, index: int, event: str = "Ticked", **args: object) -> EventRecord:
    return EventRecord("Ticker", event, dict(args), ADDR, block, f"0x{block:064x}", f"0x{index:064x}", index)


class FakeReader:
    """Batches of `chunk` blocks from a fixed list, with the EventReader's cursor semantics."""

    def __init__(self, cursor: Cursor, events: list[EventRecord], chunk: int = 2) -> None:
        self.cursor, self.events, self.chunk = cursor, events, chunk
        self.head = max((e.block_number for e in events), default=0)
        self.failures: list[Exception] = []  # raised by the next calls to batches(), one each

    def batches(self) -> Iterator[list[EventRecord]]:
        if self.failures:
            raise self.failures.pop(0)
        start = self.cursor.load() or 0
        while start <= self.head:
            end = start + self.chunk - 1
            yield [e for e in self.events if start <= e.block_number <= end]
            self.cursor.save(end + 1)
            start = end + 1


class Recorder(Daemon):
    """Records what it handled; `on_event` lets a test hook into each handler call."""

    def __init__(self, state: DaemonState, events: list[EventRecord], **kwargs: object) -> None:
        self.fake = FakeReader(state.cursor, events)
        super().__init__("rec", Web3(), {}, state, reader=self.fake, **kwargs)  # type: ignore[arg-type]
        self.seen: list[tuple[str, int, int]] = []
        self.ticks = 0
        self.on_event: Callable[[EventRecord], None] = lambda r: None
        self.on_tick: Callable[[], None] = lambda: None

    def handlers(self) -> dict[str, Handler]:
        return {"Ticked": self._handle, "Other": self._handle}

    def _handle(self, record: EventRecord) -> None:
        self.on_event(record)
        self.seen.append((record.event, record.block_number, record.log_index))

    def tick(self) -> None:
        self.ticks += 1
        self.on_tick()


@pytest.fixture
def state(tmp_path: Path) -> Iterator[DaemonState]:
    with DaemonState(tmp_path / "state.sqlite") as s:
        yield s


EVENTS = [rec(1, 0), rec(1, 1, "Other"), rec(2, 0, "Ignored"), rec(3, 4), rec(3, 2), rec(5, 0)]


def test_events_dispatched_in_chain_order_then_tick(state: DaemonState) -> None:
    events = sorted(EVENTS, key=lambda r: r.position)
    daemon = Recorder(state, events)
    order: list[str] = []
    daemon.on_event = lambda r: order.append("event")
    daemon.on_tick = lambda: order.append("tick")
    assert daemon.run_cycle() == 5
    assert daemon.seen == [
        ("Ticked", 1, 0), ("Other", 1, 1), ("Ticked", 3, 2), ("Ticked", 3, 4), ("Ticked", 5, 0),
    ]
    assert order == ["event"] * 5 + ["tick"]
    assert state.next_block == 6 and state.last_position == (5, 0)
    assert daemon.metrics.value("gensyn_last_block_seen") == 5
    assert daemon.metrics.value("gensyn_events_handled_total", event="Ticked") == 4
    assert daemon.run_cycle() == 0 and daemon.ticks == 2  # nothing new, but tick still runs


def test_once_runs_an_action_once_even_when_events_replay(tmp_path: Path) -> None:
    calls: list[int] = []

    def make(state: DaemonState) -> Recorder:
        d = Recorder(state, [rec(1, 0, n=1), rec(2, 0, n=2)])

        def ack(r: EventRecord) -> None:
            def send() -> str:
                calls.append(r.args["n"])
                return "0xfeed"

            d.once(("ack", r.args["n"]), send)

        d.on_event = ack
        return d

    with DaemonState(tmp_path / "s.sqlite") as state:
        make(state).run_cycle()
    assert calls == [1, 2]
    with DaemonState(tmp_path / "s.sqlite") as state:  # a restart that lost its cursor replays everything
        state.cursor.save(0)
        state.set_last_position((0, 0))
        again = make(state)
        again.run_cycle()
        assert again.seen == [("Ticked", 1, 0), ("Ticked", 2, 0)]  # handlers ran again...
        assert calls == [1, 2]  # ...but the actions did not
        stored = state.action(("ack", 2))
        assert stored is not None and stored.tx_hash == "0xfeed"


def test_pending_action_asks_the_chain_before_running_again(state: DaemonState) -> None:
    daemon = Recorder(state, [])
    ran: list[str] = []
    state.mark_pending(("commit", 1))  # a crash cut these two off after they started
    state.mark_pending(("commit", 2))
    assert daemon.once(("commit", 1), lambda: ran.append("c1"), already_done=lambda: True) is False
    assert daemon.once(("commit", 2), lambda: ran.append("c2"), already_done=lambda: False) is True
    assert ran == ["c2"]
    assert state.is_done(("commit", 1)) and state.is_done(("commit", 2))
    assert daemon.once(("commit", 2), lambda: ran.append("again")) is False
    assert ran == ["c2"]


def test_failed_action_stays_pending(state: DaemonState) -> None:
    daemon = Recorder(state, [])

    def boom() -> None:
        raise ChainError("node went away")

    with pytest.raises(ChainError):
        daemon.once("claim:9", boom)
    found = state.action("claim:9")
    assert found is not None and not found.done


def test_retryable_handler_error_keeps_batch_and_retries_next_cycle(state: DaemonState) -> None:
    daemon = Recorder(state, [rec(1, 0), rec(1, 1), rec(3, 0)], poll_interval=0.5, base_backoff=1.0)
    failures = [ContentNotFound("checkpoint not there yet")]

    def flaky(r: EventRecord) -> None:
        if r.position == (1, 1) and failures:
            raise failures.pop()

    daemon.on_event = flaky
    assert daemon.step() == 1.0  # backoff, not the poll interval
    assert daemon.seen == [("Ticked", 1, 0)]
    assert state.next_block is None  # the cursor did not move past the failing batch
    assert daemon.ticks == 0
    assert daemon.metrics.value("gensyn_cycle_errors_total", triage="retry", kind="ContentNotFound") == 1
    assert daemon.step() == 0.5
    assert daemon.seen == [("Ticked", 1, 0), ("Ticked", 1, 1), ("Ticked", 3, 0)]  # (1, 0) not handled twice
    assert state.next_block == 4 and daemon.failures == 0


def test_transient_rpc_failure_of_the_reader_is_retried(state: DaemonState) -> None:
    daemon = Recorder(state, [rec(1, 0)])
    daemon.fake.failures = [requests.ConnectionError("connection refused")]
    assert daemon.triage(requests.ConnectionError()) is Triage.RETRY
    assert daemon.step() == daemon.backoff_delay(1)
    assert daemon.seen == [] and daemon.failures == 1
    assert daemon.step() == daemon.poll_interval
    assert daemon.seen == [("Ticked", 1, 0)]


def test_fatal_error_stops_the_daemon_with_nonzero_exit(state: DaemonState) -> None:
    daemon = Recorder(state, [rec(1, 0), rec(4, 0)], poll_interval=0)

    def bug(r: EventRecord) -> None:
        if r.block_number == 4:
            raise KeyError("a bug")

    daemon.on_event = bug
    assert daemon.run_forever(install_signals=False) == 1
    assert daemon.seen == [("Ticked", 1, 0)]
    assert state.next_block == 4  # the failing batch (blocks 4-5) stays unread
    assert daemon.metrics.value("gensyn_cycle_errors_total", triage="fatal", kind="KeyError") == 1


def test_backoff_doubles_and_is_capped(state: DaemonState) -> None:
    daemon = Recorder(state, [rec(1, 0)], poll_interval=0.1, base_backoff=0.5, max_backoff=3.0)
    daemon.fake.failures = [ChainError("down")] * 6
    delays = [daemon.step() for _ in range(7)]
    assert delays == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0, 0.1]
    assert daemon.backoff_delay(10_000) == 3.0
    assert daemon.metrics.value("gensyn_backoff_seconds") == 0


def test_sigterm_finishes_the_current_handler_and_exits_zero(state: DaemonState) -> None:
    daemon = Recorder(state, [rec(1, 0), rec(1, 1), rec(2, 0)], poll_interval=3600)
    finished: list[bool] = []

    def terminate_during_first(r: EventRecord) -> None:
        if r.position == (1, 0):
            os.kill(os.getpid(), signal.SIGTERM)
            finished.append(True)  # the handler runs to its end after the signal

    daemon.on_event = terminate_during_first
    before = signal.getsignal(signal.SIGTERM)
    assert daemon.run_forever() == 0
    assert finished == [True]
    assert daemon.seen == [("Ticked", 1, 0)]
    assert state.last_position == (1, 0)  # saved: a restart skips it
    assert signal.getsignal(signal.SIGTERM) is before
    resumed = Recorder(state, [rec(1, 0), rec(1, 1), rec(2, 0)])
    resumed.run_cycle()
    assert resumed.seen == [("Ticked", 1, 1), ("Ticked", 2, 0)]


def test_signal_while_waiting_stops_at_once(state: DaemonState) -> None:
    daemon = Recorder(state, [rec(1, 0)], poll_interval=3600)
    daemon.on_tick = lambda: os.kill(os.getpid(), signal.SIGINT)
    started = time.monotonic()
    assert daemon.run_forever() == 0
    assert time.monotonic() - started < 10  # not the hour-long poll interval
    assert daemon.ticks == 1 and state.next_block == 2


def test_stop_from_another_thread_ends_the_wait(state: DaemonState) -> None:
    import threading

    daemon = Recorder(state, [], poll_interval=3600)
    daemon.on_tick = lambda: threading.Thread(target=daemon.stop).start()
    started = time.monotonic()
    assert daemon.run_forever(install_signals=False) == 0
    assert time.monotonic() - started < 10


def test_after_cycle_runs_after_each_successful_cycle_only(state: DaemonState) -> None:
    """The hook the role daemons refresh their standing gauges from (`NodeDaemon.after_cycle`)."""
    daemon = Recorder(state, [rec(1, 0), rec(2, 0)])
    calls: list[int] = []
    daemon.after_cycle = lambda: calls.append(len(daemon.seen))  # type: ignore[method-assign]
    failures = [ChainError("rpc hiccup")]

    def flaky(r: EventRecord) -> None:
        if r.position == (2, 0) and failures:
            raise failures.pop()

    daemon.on_event = flaky
    daemon.step()  # fails on (2, 0): no refresh
    assert calls == []
    daemon.step()
    assert calls == [2]
