"""Prometheus metrics of one daemon, in its own registry, served on loopback unless told another address.

Every series carries a `daemon` label (the daemon's name), so several
daemons scraped by one Prometheus stay apart. Each `DaemonMetrics` owns a
`CollectorRegistry`, so two daemons in one process (tests, the demo) never
collide on the global registry.

Besides what the daemon counts itself, it mirrors its node's standing on the chain (stake by state,
reputation, the slashes it took, claimable credit), refreshed by `gensyn_py/node/standing_gauges.py` every few
seconds. `dashboards/gensyn-node.json` is a Grafana dashboard over these names.
"""

from __future__ import annotations

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, start_http_server

STAKE_STATES = ("bonded", "locked", "unbonding")
REPUTATION_KINDS = ("completed", "missed", "frauds")


class DaemonMetrics:
    """The metrics every role shares; roles update them from their handlers."""

    def __init__(self, daemon: str, registry: CollectorRegistry | None = None) -> None:
        self.daemon = daemon
        self.registry = registry if registry is not None else CollectorRegistry()
        labels = ["daemon"]
        r = self.registry
        self._units_done = Counter("gensyn_units_done", "Work units this daemon finished", labels, registry=r)
        self._verdicts = Counter(
            "gensyn_verdicts", "Verdicts posted, by verdict", [*labels, "verdict"], registry=r
        )
        self._disputes = Counter(
            "gensyn_disputes", "Disputes this daemon took part in, by kind", [*labels, "kind"], registry=r
        )
        self._earnings = Gauge("gensyn_earnings_tokens", "Tokens earned (claimed credit)", labels, registry=r)
        self._last_block = Gauge("gensyn_last_block_seen", "Last confirmed block read", labels, registry=r)
        self._events = Counter("gensyn_events_handled", "Events handled", [*labels, "event"], registry=r)
        self._actions = Counter("gensyn_actions", "Idempotent actions run", [*labels, "kind"], registry=r)
        self._cycles = Counter("gensyn_cycles", "Cycles run", labels, registry=r)
        self._cycle_errors = Counter(
            "gensyn_cycle_errors", "Failed cycles, by triage and error class", [*labels, "triage", "kind"],
            registry=r,
        )
        self._cycle_seconds = Histogram("gensyn_cycle_seconds", "Duration of one cycle", labels, registry=r)
        self._backoff = Gauge("gensyn_backoff_seconds", "Wait before the next cycle", labels, registry=r)
        self._quarantined = Counter(
            "gensyn_quarantined", "Jobs quarantined, by error class", [*labels, "kind"], registry=r
        )
        self._quarantine_size = Gauge("gensyn_quarantine_jobs", "Jobs now in quarantine", labels, registry=r)
        self._stake = Gauge("gensyn_stake_tokens", "This node's stake on the chain, by state "
                            "(bonded includes locked)", [*labels, "state"], registry=r)
        self._reputation = Gauge("gensyn_reputation", "This node's reputation counters on the chain, by kind",
                                 [*labels, "kind"], registry=r)
        self._slashes = Gauge("gensyn_slashes", "Times this node was slashed (registry Slashed events)", labels,
                              registry=r)
        self._slashed = Gauge("gensyn_slashed_tokens", "Tokens slashed from this node in all", labels, registry=r)
        self._credit = Gauge("gensyn_credit_tokens", "Credit this node can claim from the pool now", labels,
                             registry=r)
        self._standing_block = Gauge("gensyn_standing_block", "Block the standing gauges were read at", labels,
                                     registry=r)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        # Touch the unlabelled-by-kind series so they show as 0 from the start.
        for metric in (self._units_done, self._earnings, self._last_block, self._cycles, self._backoff,
                       self._quarantine_size, self._slashes, self._slashed, self._credit, self._standing_block):
            metric.labels(daemon=daemon)
        for state in STAKE_STATES:
            self._stake.labels(daemon=daemon, state=state)
        for kind in REPUTATION_KINDS:
            self._reputation.labels(daemon=daemon, kind=kind)

    # -- updates -----------------------------------------------------------------------------

    def unit_done(self, n: int = 1) -> None:
        self._units_done.labels(daemon=self.daemon).inc(n)

    def verdict(self, verdict: str) -> None:
        self._verdicts.labels(daemon=self.daemon, verdict=verdict).inc()

    def dispute(self, kind: str) -> None:
        self._disputes.labels(daemon=self.daemon, kind=kind).inc()

    def set_earnings(self, tokens: float) -> None:
        self._earnings.labels(daemon=self.daemon).set(tokens)

    def add_earnings(self, tokens: float) -> None:
        self._earnings.labels(daemon=self.daemon).inc(tokens)

    def block_seen(self, block: int) -> None:
        self._last_block.labels(daemon=self.daemon).set(block)

    def event_handled(self, event: str) -> None:
        self._events.labels(daemon=self.daemon, event=event).inc()

    def action_run(self, kind: str) -> None:
        self._actions.labels(daemon=self.daemon, kind=kind).inc()

    def cycle_done(self, seconds: float) -> None:
        self._cycles.labels(daemon=self.daemon).inc()
        self._cycle_seconds.labels(daemon=self.daemon).observe(seconds)

    def cycle_error(self, triage: str, kind: str) -> None:
        self._cycle_errors.labels(daemon=self.daemon, triage=triage, kind=kind).inc()

    def quarantined(self, kind: str) -> None:
        self._quarantined.labels(daemon=self.daemon, kind=kind).inc()

    def set_quarantine_size(self, n: int) -> None:
        self._quarantine_size.labels(daemon=self.daemon).set(n)

    def set_backoff(self, seconds: float) -> None:
        self._backoff.labels(daemon=self.daemon).set(seconds)

    def set_standing(self, *, block: int, stake: dict[str, float], reputation: dict[str, int], slashes: int,
                     slashed: float, credit: float) -> None:
        """The node's standing on the chain at `block` (tokens as floats, counts as integers)."""
        for state in STAKE_STATES:
            self._stake.labels(daemon=self.daemon, state=state).set(stake[state])
        for kind in REPUTATION_KINDS:
            self._reputation.labels(daemon=self.daemon, kind=kind).set(reputation[kind])
        self._slashes.labels(daemon=self.daemon).set(slashes)
        self._slashed.labels(daemon=self.daemon).set(slashed)
        self._credit.labels(daemon=self.daemon).set(credit)
        self._standing_block.labels(daemon=self.daemon).set(block)

    # -- reading -----------------------------------------------------------------------------

    def value(self, name: str, **labels: str) -> float | None:
        """A sample's current value, e.g. `value("gensyn_units_done_total")`; None if absent."""
        return self.registry.get_sample_value(name, {"daemon": self.daemon, **labels})

    def render(self) -> bytes:
        """The text exposition format, as served on /metrics."""
        return generate_latest(self.registry)

    # -- serving -----------------------------------------------------------------------------

    def serve(self, port: int = 0, host: str = "127.0.0.1") -> int:
        """Serve /metrics on `host:port` in a background thread; port 0 picks a free one. Returns the port.

        Loopback by default: an operator opens it wider (`--metrics-host`) only on purpose."""
        if self._server is not None:
            return int(self._server.server_address[1])
        server, thread = start_http_server(port, addr=host, registry=self.registry)
        self._server, self._thread = server, thread
        return int(server.server_address[1])

    @property
    def port(self) -> int | None:
        return None if self._server is None else int(self._server.server_address[1])

    def close(self) -> None:
        """Stop serving (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
