"""Pieces several verbs share: opening a trace with its notices, writing outputs safely."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path

from pista.errors import UsageError
from pista.trace.facts import Facts, derive
from pista.trace.load import load_trace

STDIN = "-"


def apply_peaks(path: str | None) -> None:
    """--peaks FILE: rate every kernel against that card (cli.main puts the table back after the verb)."""
    if path:
        from pista import efficiency

        efficiency.use_peaks(efficiency.load_peaks(path))


def open_trace(path: str, quiet: bool = False) -> Facts:
    """Load and derive; notices (skipped events, salvage) go to stderr, one line each. `-` reads the
    trace from standard input (plain or gzipped)."""
    if path == STDIN:
        return _from_stdin(quiet)
    trace = load_trace(path)
    if not quiet:
        for notice in trace.notices:
            print(f"pista: notice: {path}: {notice}", file=sys.stderr)
    return derive(trace)


def _stdin_file(folder: str) -> Path:
    """Standard input, whole, in a file of `folder` (named .json.gz when it is gzipped)."""
    data = sys.stdin.buffer.read()
    if not data:
        raise UsageError("-: standard input is empty; pipe a trace in (`zcat t.json.gz | pista analyze -`)")
    path = Path(folder) / ("stdin.json.gz" if data[:2] == b"\x1f\x8b" else "stdin.json")
    path.write_bytes(data)
    return path


def read_stdin() -> tuple[bytes, list[str]]:
    """The trace's bytes from standard input, unpacked, with the reader's notices (like read_bytes)."""
    import tempfile

    from pista.trace.load import read_bytes

    with tempfile.TemporaryDirectory(prefix="pista-stdin-") as folder:
        return read_bytes(_stdin_file(folder))


def _from_stdin(quiet: bool) -> Facts:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pista-stdin-") as folder:
        trace = load_trace(_stdin_file(folder))
    trace.source = "<stdin>"
    if not quiet:
        for notice in trace.notices:
            print(f"pista: notice: <stdin>: {notice}", file=sys.stderr)
    return derive(trace)


def default_output(trace: str, suffix: str) -> Path:
    """An output beside where the user is (the current folder), named after the trace."""
    stem = "stdin" if trace == STDIN else Path(trace).name.removesuffix(".gz").removesuffix(".json")
    return Path.cwd() / (stem + suffix)


def write_output(path: str | os.PathLike[str], data: str | bytes, inputs: tuple[str, ...] = ()) -> Path:
    """Write atomically and never onto one of the inputs.

    The bytes go to a temp file beside the target, are flushed to disk, and only then renamed over
    it: a reader, or a crash, sees the old file or the new one, never half of one. The new file
    gets the old one's permissions, or the usual ones (umask) if there was none.
    """
    target = Path(path)
    for source in inputs:
        try:
            same = os.path.samefile(source, target)
        except OSError:
            same = False  # one of them does not exist (yet)
        if same or Path(source).absolute() == target.absolute():
            raise UsageError(f"{target}: refusing to overwrite the input trace; choose another -o")
    if target.is_dir():
        raise UsageError(f"{target}: is a directory; give a file name for the output")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{target.parent}: cannot create the output folder: {err.strerror or err}") from None
    payload = data.encode() if isinstance(data, str) else data
    tmp = target.parent / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # 0o666 less the umask, like open()
    except OSError as err:
        raise UsageError(f"{target}: cannot write: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise UsageError(f"{target}: cannot write: {err.strerror or err}") from None
        raise
    return target


# Width for output that goes to a pipe or file (no terminal to ask): wide enough for torch's table.
PIPE_WIDTH = 110


def output_style(color: bool | None, stream=None) -> tuple[bool, int]:
    """(color, width) for text written to `stream` (stdout): --color/--no-color first, then NO_COLOR
    and FORCE_COLOR (https://no-color.org, force-color.org), then whether it is a terminal; the width
    is the terminal's (COLUMNS where set), else PIPE_WIDTH."""
    import shutil

    stream = stream or sys.stdout
    tty = bool(getattr(stream, "isatty", lambda: False)())
    if color is None:
        if os.environ.get("NO_COLOR"):
            color = False
        elif os.environ.get("FORCE_COLOR"):
            color = True
        else:
            color = tty
    width = shutil.get_terminal_size((PIPE_WIDTH, 24)).columns if tty or os.environ.get("COLUMNS") else PIPE_WIDTH
    return color, max(40, width)
