"""``joiner run``'s logs: one JSON object a line, as Karpenter's zap logger writes them,
or plain text (``--log-format``).

The JSON encoding is Karpenter's (sigs.k8s.io/karpenter pkg/operator/logging/logging.go
``DefaultZapConfig``): keys ``level`` (zap's ``CapitalLevelEncoder``: ``DEBUG``, ``INFO``,
``WARN``, ``ERROR``), ``time`` (``ISO8601TimeEncoder``, milliseconds; written in UTC
here), ``logger``, ``caller`` only at the debug level (``DisableCaller`` unless
``LogLevel == "debug"``; ``ShortCallerEncoder``'s ``dir/file:line``), ``message``; then the
line's structured keys (``joiner.api.logkeys``: ``NodeClaim``, ``NodePool``, ``Node``,
``Pod`` as ``{"name": ..., "namespace": ...}``); an exception adds ``error`` (go-logr/zapr
``Error``'s key) and ``stacktrace`` (zap's ``StacktraceKey``, the Python traceback, which
Karpenter leaves out with ``DisableStacktrace``), so a traceback is never printed as raw
lines between JSON lines. The time is the log record's (``LogRecord.created``): this is
the command line's layer, the simulation core keeps no wall clock.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import traceback
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import PurePath
from types import TracebackType
from typing import Any

from joiner.cli.safeconsole import CleanFormatter, clean

#: Python's level numbers as zap's ``CapitalLevelEncoder`` names them.
ZAP_LEVELS = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO",
    logging.WARNING: "WARN",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "ERROR",
}
#: The plain-text line of the other commands (``joiner.cli.common.configure_logging``).
TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"
#: ``LogRecord`` attributes that are not a line's own keys (``extra=`` adds the others).
_RECORD_ATTRS = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__.keys() | {"message", "asctime"}
)


class LogFormat(StrEnum):
    """``--log-format``: Karpenter's JSON lines, or Joiner's plain text."""

    json = "json"
    text = "text"


def zap_time(created_s: float) -> str:
    """A record time (seconds since the epoch) as zap's ISO 8601 encoder writes it, in
    UTC: ``2026-01-02T15:04:05.123Z``."""
    stamp = datetime.fromtimestamp(created_s, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def short_caller(pathname: str, lineno: int) -> str:
    """zap's ``ShortCallerEncoder``: the file's directory and name, and the line
    (``nodeclaim/lifecycle.py:86``)."""
    path = PurePath(pathname)
    return (
        f"{path.parent.name}/{path.name}:{lineno}" if path.parent.name else f"{path.name}:{lineno}"
    )


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON with Karpenter's keys (module docstring).

    ``caller`` adds the ``caller`` key (Karpenter writes it at the debug level only).
    Values that are not JSON (a Quantity, a set) are written as their ``str``; characters
    that are not printable are ``?``, as on every other output (``joiner.api.printable``).
    """

    def __init__(self, *, caller: bool = False) -> None:
        super().__init__()
        self.caller = caller

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "level": ZAP_LEVELS.get(record.levelno, record.levelname),
            "time": zap_time(record.created),
            "logger": record.name,
        }
        if self.caller:
            line["caller"] = short_caller(record.pathname, record.lineno)
        line["message"] = record.getMessage()
        stack = self._stacktrace(record)
        if stack:
            line["stacktrace"] = stack
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRS and key not in line:
                line[key] = value
        if record.exc_info and record.exc_info[1] is not None:
            line["error"] = "".join(traceback.format_exception_only(record.exc_info[1])).strip()
        return clean(json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str))

    def _stacktrace(self, record: logging.LogRecord) -> str:
        parts = []
        if record.exc_info:
            parts.append(self.formatException(record.exc_info))
        if record.stack_info:
            parts.append(self.formatStack(record.stack_info))
        return "\n".join(parts)


def configure_run_logging(fmt: LogFormat, *, level: int = logging.INFO) -> None:
    """Logs of ``joiner run`` on stderr at ``level``: JSON lines (``JsonFormatter``, with
    ``caller`` at the debug level) or ``TEXT_FORMAT`` lines. Python warnings become log
    lines (``py.warnings``), and an exception nothing caught, in any thread, is logged as
    one line (``log_uncaught``), so that stderr holds log lines only."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt is LogFormat.json:
        handler.setFormatter(JsonFormatter(caller=level <= logging.DEBUG))
    else:
        handler.setFormatter(CleanFormatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.captureWarnings(True)
    sys.excepthook = log_uncaught
    threading.excepthook = _log_thread


def log_uncaught(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    """``sys.excepthook``: an uncaught exception as one ERROR log line (logger
    ``joiner``) instead of a traceback printed raw."""
    logging.getLogger("joiner").error("uncaught exception", exc_info=(exc_type, exc, tb))


def _log_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is None or issubclass(args.exc_type, SystemExit):
        return
    thread = args.thread.name if args.thread is not None else "?"
    logging.getLogger("joiner").error(
        "uncaught exception in thread %s",
        thread,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )
