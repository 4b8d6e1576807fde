"""The standing gauges (stake, reputation, slashes, credit), their refresh rate, the metrics endpoint's bind
address, and the Grafana dashboard: every metric it queries is one a daemon exports."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

from gensyn_py.node.metrics import DaemonMetrics
from gensyn_py.node.standing_gauges import StandingGauges

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboards" / "gensyn-node.json"
PROMQL_FUNCTIONS = {"sum", "by", "rate", "increase", "histogram_quantile", "le", "without", "avg", "max", "min"}


def _standing(m: DaemonMetrics) -> None:
    m.set_standing(block=42, stake={"bonded": 1000.0, "locked": 300.0, "unbonding": 50.0},
                   reputation={"completed": 7, "missed": 1, "frauds": 0}, slashes=2, slashed=3.5, credit=12.25)


def test_the_standing_gauges_carry_the_numbers_they_are_given() -> None:
    m = DaemonMetrics("solver-ab")
    assert m.value("gensyn_stake_tokens", state="bonded") == 0  # present from the start
    _standing(m)
    assert [m.value("gensyn_stake_tokens", state=s) for s in ("bonded", "locked", "unbonding")] == [1000, 300, 50]
    assert [m.value("gensyn_reputation", kind=k) for k in ("completed", "missed", "frauds")] == [7, 1, 0]
    assert (m.value("gensyn_slashes"), m.value("gensyn_slashed_tokens")) == (2, 3.5)
    assert (m.value("gensyn_credit_tokens"), m.value("gensyn_standing_block")) == (12.25, 42)


def _exported_names(m: DaemonMetrics) -> set[str]:
    lines = m.render().decode().splitlines()
    return {re.split(r"[{ ]", line, maxsplit=1)[0] for line in lines if line and not line.startswith("#")}


def _queried_names(dashboard: dict[str, Any]) -> set[str]:
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    names: set[str] = set()
    for expr in exprs:
        bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\"[^\"]*\"", "", expr)  # drop selectors, ranges, strings
        names |= {w for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", bare) if w.startswith("gensyn_")}
        names |= {w for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", bare)
                  if not w.startswith("gensyn_") and w not in PROMQL_FUNCTIONS and not w.startswith("label_values")
                  and w not in {"daemon", "verdict", "kind", "triage", "event", "state"}}
    return names


def test_every_metric_the_dashboard_queries_is_exported() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    m = DaemonMetrics("validator-cd")
    _standing(m)
    m.unit_done()
    m.verdict("accept")
    m.dispute("opened")
    m.cycle_done(0.1)
    m.cycle_error("retry", "ChainError")
    m.event_handled("UnitClaimed")
    queried = _queried_names(dashboard)
    assert {"gensyn_stake_tokens", "gensyn_reputation", "gensyn_slashes", "gensyn_slashed_tokens",
            "gensyn_credit_tokens"} <= queried
    assert queried <= _exported_names(m), queried - _exported_names(m)
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert "label_values(gensyn_cycles_total, daemon)" in variables["daemon"]["definition"]
    assert all('daemon=~"$daemon"' in t["expr"] for p in dashboard["panels"] for t in p["targets"])


def test_the_endpoint_listens_on_the_address_it_is_given() -> None:
    m = DaemonMetrics("challenger-ef")
    _standing(m)
    port = m.serve(0, "127.0.0.1")
    try:
        assert m._server is not None and m._server.server_address[0] == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            body = response.read().decode()
        assert 'gensyn_credit_tokens{daemon="challenger-ef"} 12.25' in body
    finally:
        m.close()


def test_the_cli_binds_loopback_unless_told_otherwise() -> None:
    from click.testing import CliRunner

    from gensyn_py.cli.main import cli

    out = CliRunner().invoke(cli, ["solver", "run", "--help"])
    assert "--metrics-host" in out.output and "127.0.0.1" in out.output


class _Counting(StandingGauges):
    """The throttle alone: `refresh` counts, or fails when told to."""

    def __init__(self, clock: list[float]) -> None:
        self.fail = False
        chain: Any = _NoChain()
        super().__init__(chain, "0xnode", DaemonMetrics("solver-gh"), interval=5.0, clock=lambda: clock[0])

    def refresh(self) -> None:
        if self.fail:
            raise ConnectionError("rpc down")
        self.refreshes += 1


class _NoChain:
    def __init__(self) -> None:
        self.deployment = {"block": 0}


def test_the_gauges_read_the_chain_at_most_every_interval_and_survive_a_failed_read() -> None:
    clock = [100.0]
    g = _Counting(clock)
    assert g.maybe_refresh() and g.refreshes == 1
    for t in (100.2, 101.0, 104.9):  # sub-second cycles: no reads in between
        clock[0] = t
        assert not g.maybe_refresh()
    clock[0] = 105.0
    assert g.maybe_refresh() and g.refreshes == 2
    g.fail, clock[0] = True, 110.0
    assert not g.maybe_refresh() and g.refreshes == 2  # logged, not raised: the cycle goes on
    g.fail, clock[0] = False, 115.0
    assert g.maybe_refresh() and g.refreshes == 3
