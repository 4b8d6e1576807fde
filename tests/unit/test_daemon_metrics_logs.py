"""Per-daemon Prometheus metrics on loopback, and one-JSON-object-per-line logs."""

from __future__ import annotations

import io
import json
import logging
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gensyn_py.node.logs import EventLogger, configure_logging, logging_options
from gensyn_py.node.metrics import DaemonMetrics


def test_each_daemon_has_its_own_registry() -> None:
    a, b = DaemonMetrics("solver-1"), DaemonMetrics("solver-1")
    a.unit_done()
    a.verdict("accept")
    a.dispute("opened")
    a.add_earnings(2.5)
    a.block_seen(17)
    assert a.value("gensyn_units_done_total") == 1
    assert a.value("gensyn_verdicts_total", verdict="accept") == 1
    assert a.value("gensyn_disputes_total", kind="opened") == 1
    assert a.value("gensyn_earnings_tokens") == 2.5
    assert b.value("gensyn_units_done_total") == 0  # a second daemon of the same name does not collide


def test_serve_on_a_free_port_answers_metrics() -> None:
    metrics = DaemonMetrics("validator")
    metrics.block_seen(123)
    metrics.cycle_error("retry", "ChainError")
    port = metrics.serve(0)
    try:
        assert port > 0 and metrics.port == port
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert 'gensyn_last_block_seen{daemon="validator"} 123.0' in body
        assert 'gensyn_cycle_errors_total{daemon="validator",kind="ChainError",triage="retry"} 1.0' in body
    finally:
        metrics.close()
    assert metrics.port is None


@pytest.fixture
def restore_root_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for h in root.handlers[:]:
        if h not in handlers:
            root.removeHandler(h)
            h.close()
    root.setLevel(level)


def test_logs_are_one_json_object_per_line(restore_root_logging: None) -> None:
    out = io.StringIO()
    configure_logging("solver-1", level="debug", stream=out)
    configure_logging("solver-1", level="debug", stream=out)  # configuring twice does not double lines
    log = EventLogger("solver-1")
    log.info("unit.committed", unit=7, tx=b"\x01\x02")
    logging.getLogger("gensyn_py.chain.tx").warning("resynced nonce %d", 5)
    try:
        raise ValueError("bad")
    except ValueError:
        log.exception("cycle.fatal", error="bad")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 3
    first = lines[0]
    assert set(first) == {"ts", "daemon", "level", "event", "fields"}
    assert (first["daemon"], first["level"], first["event"]) == ("solver-1", "info", "unit.committed")
    assert first["fields"] == {"unit": 7, "tx": "0x0102"}
    assert first["ts"].endswith("+00:00")
    assert lines[1]["event"] == "resynced nonce 5" and lines[1]["fields"] == {"logger": "gensyn_py.chain.tx"}
    assert "ValueError: bad" in lines[2]["fields"]["exc"]


def test_cli_options_configure_a_log_file(tmp_path: Path, restore_root_logging: None) -> None:
    @click.command()
    @logging_options
    def run(log_level: str, log_file: Path | None, log_format: str) -> None:
        configure_logging("challenger", level=log_level, file=log_file, fmt=log_format)
        EventLogger("challenger").warning("audit.skipped", unit=3)

    target = tmp_path / "logs" / "challenger.log"
    result = CliRunner().invoke(run, ["--log-file", str(target), "--log-level", "warning"])
    assert result.exit_code == 0, result.output
    for h in logging.getLogger().handlers:
        h.flush()
    entry = json.loads(target.read_text().splitlines()[-1])
    assert entry["event"] == "audit.skipped" and entry["fields"] == {"unit": 3}
