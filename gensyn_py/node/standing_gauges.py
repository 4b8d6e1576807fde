"""Keeps a daemon's standing gauges (stake, reputation, slashes, credit) in step with the chain, cheaply.

`maybe_refresh()` runs after every cycle but reads the chain at most every `interval` seconds (a cycle can be
sub-second), with the same registry and pool views `gensyn node status` uses (`gensyn_py/node/operator.py`)
minus its scan of the units. The slashes are counted from the registry's `Slashed` events for this node,
scanned incrementally: each refresh reads only the blocks after the last one it read. A failed read is logged
and leaves the gauges as they were; it never fails the daemon's cycle.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.node.metrics import DaemonMetrics

E18 = 10**18  # token base units (18 decimals); the node layer may not import requester.amounts

log = logging.getLogger(__name__)


class StandingGauges:
    def __init__(self, protocol: ProtocolContracts, address: str, metrics: DaemonMetrics, *,
                 interval: float = 15.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.protocol = protocol
        self.address = address
        self.metrics = metrics
        self.interval = interval
        self.clock = clock
        self.refreshes = 0
        self._last: float | None = None
        self._scanned = int(protocol.deployment.get("block", 0)) - 1  # last block scanned for Slashed
        self._slashes = 0
        self._slashed = 0
        self._read_at: int | None = None  # the block the gauges were last read at

    def maybe_refresh(self) -> bool:
        """Refresh when `interval` has passed since the last attempt; True if it read the chain."""
        now = self.clock()
        if self._last is not None and now - self._last < self.interval:
            return False
        self._last = now
        try:
            self.refresh()
        except Exception as exc:  # a gauge is not worth a failed cycle; the next refresh tries again
            log.warning("standing gauges not refreshed: %s: %s", type(exc).__name__, exc)
            return False
        return True

    def refresh(self) -> None:
        """Read the standing at the latest block and set the gauges."""
        block = int(self.protocol.w3.eth.block_number)
        if block == self._read_at:
            return  # no new block: the standing the gauges show is still the chain's
        registry, pool, node = self.protocol.registry(), self.protocol.pool(), self.address
        bonded = registry.bonded_of(node, block=block)
        locked = registry.locked_of(node, block=block)
        unbonding = registry.unbonding_of(node, block=block)
        rep = registry.reputation_of(node, block=block)
        credit = pool.credit(node, block=block)
        if block > self._scanned:
            logs = self.protocol["NodeRegistry"].events.Slashed().get_logs(
                argument_filters={"node": node}, from_block=self._scanned + 1, to_block=block)
            self._slashes += len(logs)
            self._slashed += sum(int(e["args"]["amount"]) for e in logs)
            self._scanned = block
        self.metrics.set_standing(
            block=block, stake={"bonded": bonded / E18, "locked": locked / E18, "unbonding": unbonding.amount / E18},
            reputation={"completed": rep.completed, "missed": rep.missed, "frauds": rep.frauds},
            slashes=self._slashes, slashed=self._slashed / E18, credit=credit / E18)
        self._read_at = block
        self.refreshes += 1
