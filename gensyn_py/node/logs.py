"""Structured logs: one JSON object per line (`ts`, `daemon`, `level`, `event`, `fields`).

Daemons log through an `EventLogger`: a short dotted event name plus keyword
fields, e.g. `log.warning("cycle.retry", error="...", delay_s=2.0)`. Records
from elsewhere in the package (the chain layer's stdlib loggers) come out in
the same shape, their message as the event and the logger name as a field.

On a terminal, the daemons draw progress bars on stderr (`node/progress.py`);
log lines to stderr then go through the bars' console, which prints each one
whole above them. Anywhere else (a pipe, a file) no bar is drawn.

Nothing is configured at import time: the CLI calls `configure_logging()`
once (the `logging_options` decorator adds `--log-level`, `--log-file` and
`--log-format` to a click command).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, TypeVar

import click

_HANDLER_NAME = "gensyn-structured"
F = TypeVar("F", bound=Callable[..., Any])


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    return str(value)


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line."""

    def __init__(self, default_daemon: str | None = None) -> None:
        super().__init__()
        self.default_daemon = default_daemon

    def format(self, record: logging.LogRecord) -> str:
        fields = dict(getattr(record, "fields", None) or {})
        if not hasattr(record, "fields") and record.name:
            fields["logger"] = record.name
        if record.exc_info:
            fields["exc"] = self.formatException(record.exc_info)
        entry = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "daemon": getattr(record, "daemon", None) or self.default_daemon,
            "level": record.levelname.lower(),
            "event": record.getMessage(),
            "fields": _jsonable(fields),
        }
        return json.dumps(entry, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """A human-readable line with the same content, for a terminal."""

    def __init__(self, default_daemon: str | None = None) -> None:
        super().__init__()
        self.default_daemon = default_daemon

    def format(self, record: logging.LogRecord) -> str:
        ts = dt.datetime.fromtimestamp(record.created, dt.UTC).strftime("%H:%M:%S.%f")[:-3]
        daemon = getattr(record, "daemon", None) or self.default_daemon or record.name
        fields = getattr(record, "fields", None) or {}
        rendered = " ".join(f"{k}={_jsonable(v)}" for k, v in fields.items())
        line = f"{ts} {record.levelname:<7} [{daemon}] {record.getMessage()} {rendered}".rstrip()
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class EventLogger:
    """A logger for one daemon: `log.info("event.name", key=value, ...)`."""

    def __init__(self, daemon: str, logger: logging.Logger | None = None) -> None:
        self.daemon = daemon
        self.logger = logger or logging.getLogger(f"gensyn_py.node.{daemon}")

    def log(self, level: int, event: str, exc_info: bool = False, **fields: Any) -> None:
        if self.logger.isEnabledFor(level):
            extra = {"daemon": self.daemon, "fields": fields}
            self.logger.log(level, event, exc_info=exc_info, extra=extra, stacklevel=3)

    def debug(self, event: str, **fields: Any) -> None:
        self.log(logging.DEBUG, event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        self.log(logging.INFO, event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self.log(logging.WARNING, event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self.log(logging.ERROR, event, **fields)

    def exception(self, event: str, **fields: Any) -> None:
        """An error with the current exception's traceback in `fields.exc`."""
        self.log(logging.ERROR, event, exc_info=True, **fields)


def _stderr() -> TextIO:
    """stderr; while progress bars are drawn there, a stream that prints each line whole above them."""
    from gensyn_py.node.progress import board

    bars = board()
    return bars.stream() if bars.enabled else sys.stderr  # type: ignore[return-value]


def configure_logging(
    daemon: str | None = None,
    level: str | int = "INFO",
    file: Path | str | None = None,
    fmt: str = "json",
    stream: TextIO | None = None,
) -> logging.Handler:
    """Send the package's logs to `file` (appended) or stderr, one record per line.

    Replaces a handler installed by an earlier call, so calling it twice does not double lines.
    """
    if fmt not in ("json", "text"):
        raise ValueError(f"unknown log format {fmt!r}: use json or text")
    handler: logging.Handler
    if file is not None:
        path = Path(file)
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
    else:
        handler = logging.StreamHandler(stream or _stderr())
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter(daemon) if fmt == "json" else TextFormatter(daemon))
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    # web3 and urllib3 are chatty at DEBUG; keep them at WARNING unless asked for by name.
    for noisy in ("web3", "urllib3"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    return handler


def logging_options(fn: F) -> F:
    """Click options `--log-level`, `--log-file`, `--log-format`; pass them to `configure_logging`."""
    fn = click.option(
        "--log-format", type=click.Choice(["json", "text"]), default="json", show_default=True,
        help="One JSON object per line, or readable text.",
    )(fn)
    fn = click.option(
        "--log-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
        help="Append logs to this file instead of stderr.",
    )(fn)
    fn = click.option(
        "--log-level", type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
        default="info", show_default=True,
    )(fn)
    return fn
