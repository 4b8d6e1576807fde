"""The base of every role daemon: one timed cycle over confirmed events.

A cycle reads the confirmed events after the saved cursor in batches of
blocks, dispatches each to the handler named after its event, and then calls
`tick()` for time-based work (timeouts, claiming credit). Between cycles the
daemon waits on a `threading.Event`, so `stop()` (SIGTERM, SIGINT) takes
effect at once; a handler already running is allowed to finish.

Error triage. An exception out of a cycle is either *retryable* (the chain
or the content store is having trouble: `ChainError`, `StorageError`, a
transient RPC failure) or *fatal* (anything else: a bug, a bad setting).
A retryable error is logged and the cycle runs again after an exponential
backoff capped at `max_backoff`; the cursor has not moved past the failing
batch, so the failing event is dispatched again (those before it finished
and are skipped). A fatal error stops the daemon
and `run_forever()` returns a non-zero exit code. A `ContractRevert` is a
`ChainError`, so an unexpected revert is retried too (state may change, a
deadline may pass); handlers catch the reverts they expect (a unit already
claimed by someone else) and move on.

Exactly once. The cursor only knows blocks; the state also keeps the chain
position of the last event whose handler finished, and a replayed batch
skips events at or before it. A crash between a handler's on-chain action
and that bookkeeping is covered by `once()`: each action has an idempotency
key, is recorded `pending` before it runs and `done` after, and an action
found `pending` on restart is first checked on-chain (`already_done`)
before it is run again.
"""

from __future__ import annotations

import signal
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from enum import Enum
from types import FrameType
from typing import Any, Protocol

from web3 import Web3
from web3.contract import Contract

from gensyn_py.chain.client import is_transient
from gensyn_py.chain.events import EventReader, EventRecord
from gensyn_py.errors import ChainError, StorageError
from gensyn_py.node.logs import EventLogger
from gensyn_py.node.metrics import DaemonMetrics
from gensyn_py.node.state import ActionKey, DaemonState, action_key

Handler = Callable[[EventRecord], None]


class EventSource(Protocol):
    """What the daemon needs of an `EventReader` (tests pass a fake)."""

    def batches(self) -> Iterator[list[EventRecord]]: ...


class Triage(Enum):
    RETRY = "retry"
    FATAL = "fatal"


class Daemon(ABC):
    """Subclass, implement `handlers()`, optionally `tick()`, then `run_forever()`."""

    #: Exceptions worth another cycle; roles may widen or narrow this, or override `triage()`.
    retryable: tuple[type[BaseException], ...] = (ChainError, StorageError)

    def __init__(
        self,
        name: str,
        w3: Web3,
        contracts: Mapping[str, Contract],
        state: DaemonState,
        *,
        confirmations: int = 0,
        poll_interval: float = 2.0,
        batch_blocks: int = 1000,
        start_block: int = 0,
        base_backoff: float | None = None,
        max_backoff: float = 60.0,
        metrics: DaemonMetrics | None = None,
        reader: EventSource | None = None,
    ) -> None:
        if poll_interval < 0 or max_backoff < 0:
            raise ValueError("poll_interval and max_backoff must be >= 0")
        self.name = name
        self.w3 = w3
        self.contracts = dict(contracts)
        self.state = state
        self.confirmations = confirmations
        self.poll_interval = poll_interval
        self.base_backoff = poll_interval if base_backoff is None else base_backoff
        self.max_backoff = max_backoff
        self.metrics = metrics if metrics is not None else DaemonMetrics(name)
        self.log = EventLogger(name)
        self.reader: EventSource = reader if reader is not None else EventReader(
            w3, self.contracts, state.cursor, confirmations=confirmations,
            chunk_size=batch_blocks, start_block=start_block,
        )
        self.failures = 0  # consecutive failed cycles
        self.exit_code: int | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()  # ends the wait between cycles early: set by stop() and wake()
        self._signalled = False  # set synchronously by the signal handler
        self._started = False
        self._handlers: dict[str, Handler] | None = None

    # -- what roles implement ----------------------------------------------------------------

    @abstractmethod
    def handlers(self) -> dict[str, Handler]:
        """Event name -> handler, asked once. Events without a handler are skipped."""

    def dispatch_table(self) -> dict[str, Handler]:
        """What the cycle dispatches to: `handlers()`, plus what a base class handles for every subclass."""
        return self.handlers()

    def tick(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Time-based work after the events of a cycle: deadlines, claims. Must be idempotent."""

    def on_start(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Runs before the first cycle (register, stake, ...); retried like a cycle until it succeeds."""

    def after_cycle(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Runs after each successful cycle (refresh gauges); must not raise: it is outside the triage."""

    def on_stop(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Called once by `run_forever()` on the way out, fatal or not."""

    # -- idempotent actions ------------------------------------------------------------------

    def once(
        self,
        key: ActionKey,
        fn: Callable[[], Any],
        *,
        already_done: Callable[[], bool] | None = None,
    ) -> bool:
        """Run `fn` unless the action `key` is recorded done; record it done afterwards.

        Returns True if `fn` ran now. If an earlier attempt was cut off between
        starting and being recorded (a crash), `already_done` is asked first:
        True means the earlier attempt did reach the chain, so it is recorded
        done without running `fn` again. Without `already_done`, such an action
        is run again. If `fn` raises, the action stays pending and the error
        propagates (to the cycle's triage). A receipt or tx hash returned by
        `fn` is stored with the record.
        """
        stored = action_key(key)
        kind = stored.split(":", 1)[0]
        previous = self.state.action(stored)
        if previous is not None and previous.done:
            self.log.debug("action.skip", key=stored, reason="done", tx=previous.tx_hash)
            return False
        if previous is not None:  # pending: an earlier attempt's outcome is unknown
            if already_done is not None and already_done():
                self.state.mark_done(stored, detail="recovered: found done on-chain")
                self.log.info("action.recovered", key=stored, attempts=previous.attempts)
                return False
            self.log.warning("action.rerun", key=stored, attempts=previous.attempts)
        self.state.mark_pending(stored)
        result = fn()
        tx_hash = _tx_hash_of(result)
        self.state.mark_done(stored, tx_hash=tx_hash)
        self.metrics.action_run(kind)
        self.log.info("action.done", key=stored, tx=tx_hash)
        return True

    # -- one cycle ---------------------------------------------------------------------------

    def run_cycle(self) -> int:
        """Dispatch every new confirmed event, then `tick()`. Returns how many events were handled.

        Raises whatever a handler, the reader or `tick()` raised; the cursor
        stays before the batch that failed.
        """
        if self._handlers is None:
            self._handlers = self.dispatch_table()
        handled = 0
        last = self.state.last_position
        batches = self.reader.batches()
        try:
            for batch in batches:  # resuming the generator saves the cursor past the previous batch
                if self.stopping:
                    break
                for record in batch:
                    if self.stopping:
                        return handled  # the cursor stays before this batch; `last` skips what was done
                    if last is not None and record.position <= last:
                        continue
                    handled += self._dispatch(record)
                    last = record.position
                    self.state.set_last_position(last)
                if batch:
                    self.metrics.block_seen(batch[-1].block_number)
        finally:
            if hasattr(batches, "close"):
                batches.close()
        self._note_cursor()
        if not self.stopping:
            self.tick()
        return handled

    def _dispatch(self, record: EventRecord) -> bool:
        """Run the record's handler; False if its event has none."""
        assert self._handlers is not None
        handler = self._handlers.get(record.event)
        if handler is None:
            self.log.debug("event.unhandled", event_name=record.event, block=record.block_number)
            return False
        self.log.debug("event", event_name=record.event, block=record.block_number, index=record.log_index)
        handler(record)
        self.metrics.event_handled(record.event)
        return True

    def _note_cursor(self) -> None:
        next_block = self.state.next_block
        if next_block is not None and next_block > 0:
            self.metrics.block_seen(next_block - 1)

    # -- triage and the loop -----------------------------------------------------------------

    def triage(self, exc: BaseException) -> Triage:
        """Retry for the chain or the content store having trouble; stop for anything else."""
        if isinstance(exc, self.retryable) or is_transient(exc):
            return Triage.RETRY
        return Triage.FATAL

    def backoff_delay(self, failures: int) -> float:
        """Wait after `failures` consecutive failed cycles: base * 2^(failures-1), capped."""
        if failures <= 0:
            return self.poll_interval
        return float(min(self.max_backoff, self.base_backoff * 2 ** min(failures - 1, 32)))

    def step(self) -> float | None:
        """Run one cycle with triage. Returns the seconds to wait before the next, or None to stop."""
        started = time.monotonic()
        try:
            if not self._started:
                self.on_start()
                self._started = True
            handled = self.run_cycle()
        except Exception as exc:
            kind = type(exc).__name__
            if self.triage(exc) is Triage.FATAL:
                self.metrics.cycle_error("fatal", kind)
                self.log.exception("cycle.fatal", error=f"{kind}: {exc}")
                self.exit_code = 1
                return None
            self.failures += 1
            delay = self.backoff_delay(self.failures)
            self.metrics.cycle_error("retry", kind)
            self.metrics.set_backoff(delay)
            self.log.warning(
                "cycle.retry", error=f"{kind}: {_first_line(exc)}", failures=self.failures, delay_s=delay,
            )
            return delay
        self.metrics.cycle_done(time.monotonic() - started)
        self.after_cycle()
        if self.failures:
            self.log.info("cycle.recovered", after_failures=self.failures)
        self.failures = 0
        self.metrics.set_backoff(0)
        if handled:
            self.log.info("cycle", handled=handled, next_block=self.state.next_block)
        return self.poll_interval

    def run_forever(self, *, install_signals: bool = True) -> int:
        """Cycle until stopped or a fatal error. Returns the exit code: 0 after stop(), 1 after fatal."""
        previous = self._install_signals() if install_signals else {}
        self.log.info("daemon.start", next_block=self.state.next_block, poll_interval_s=self.poll_interval)
        try:
            while not self.stopping:
                began = time.monotonic()
                delay = self.step()
                if delay is None:
                    break
                if self.failures == 0:  # a poll, not a backoff: cycles start every poll_interval
                    delay = max(0.0, delay - (time.monotonic() - began))
                self._wake.wait(delay)
                self._wake.clear()
        finally:
            try:
                self.on_stop()
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        if self.exit_code is None:
            self.exit_code = 0
        self.log.info("daemon.stop", exit_code=self.exit_code, next_block=self.state.next_block)
        return self.exit_code

    def stop(self) -> None:
        """Ask the loop to end after the handler now running (safe from any thread)."""
        self._stop.set()
        self._wake.set()

    def wake(self) -> None:
        """Start the next cycle now rather than after the poll interval (safe from any thread): work done off
        the cycle has something to send."""
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._signalled or self._stop.is_set()

    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, self._on_signal)
        return previous

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stopping:  # asked twice: stop now
            raise SystemExit(128 + signum)
        self._signalled = True
        self.log.info("daemon.signal", signal=signal.Signals(signum).name)
        # Set the event from another thread: Event.set() takes a lock the interrupted
        # main thread may be holding inside Event.wait(), and locks are not reentrant.
        threading.Thread(target=self.stop, name=f"{self.name}-stop", daemon=True).start()


def _tx_hash_of(result: Any) -> str | None:
    """The tx hash in what an action returned: a receipt, HexBytes, or a 0x string."""
    if isinstance(result, Mapping) and "transactionHash" in result:
        result = result["transactionHash"]
    if isinstance(result, (bytes, bytearray)):
        return "0x" + bytes(result).hex()
    if isinstance(result, str) and result.startswith("0x"):
        return result
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return text if len(text) <= 300 else text[:297] + "..."


def is_retryable(exc: BaseException) -> bool:
    """The default triage as a predicate, for code outside a daemon."""
    return isinstance(exc, (ChainError, StorageError)) or is_transient(exc)

