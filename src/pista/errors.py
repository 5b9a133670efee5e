"""The one place that decides how pista fails: a one-line message and an exit code."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1  # reserved for `--fail-on` style checks
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3  # a bug in pista, not in the input: reported in one line too
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM: what a shell reports for a process that signal ended


class PistaError(Exception):
    """An error the user can act on. `str(err)` is the whole message, one line."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class BadTrace(PistaError):
    """The input file is not a torch.profiler trace pista can read."""

    def __init__(self, path: object, what: str) -> None:
        super().__init__(f"{path}: {what}")
        self.path = path
        self.what = what


class UsageError(PistaError):
    """Arguments that cannot work together, a rule id that does not exist, an output onto an input."""


class CaptureError(PistaError):
    """The capture side failed: torch missing, a workload that cannot run here."""


class Terminated(BaseException):
    """SIGTERM arrived (cli.main raises it from the signal handler), so that `finally` blocks and the
    atomic writer's clean-up run as on Ctrl-C. A BaseException: `except Exception` must not catch it."""
