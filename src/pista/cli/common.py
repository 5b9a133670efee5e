"""Pieces several verbs share: opening a trace with its notices, writing outputs safely."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from pista.allocator import map_big_arrays
from pista.errors import BadTrace, UsageError
from pista.render.controls import sanitize_line
from pista.trace.facts import Facts, derive
from pista.trace.load import load_trace, max_unpacked, read_bytes, refuse_non_json_start
from pista.trace.model import Trace

STDIN = "-"


def apply_peaks(path: str | None) -> None:
    """--peaks FILE: rate every kernel against that card (cli.main puts the table back after the verb)."""
    if path:
        # only with --peaks
        from pista import efficiency

        efficiency.use_peaks(efficiency.load_peaks(path))


def open_trace(path: str, quiet: bool = False, sql: bool = False, events_view: bool = False) -> Facts:
    """Load and derive; notices (skipped events, salvage) go to stderr, one line each. `-` reads the
    trace from standard input (plain or gzipped). Columns no rule reads are let go: the correlation
    ids once derived unless for `sql`'s views, the flow events' columns and the args stream and
    device ids unless for its `events_view` (a query that names it)."""
    map_big_arrays()  # the command line's process is pista's own: after a capture, if any
    if path == STDIN:
        trace = _from_stdin(quiet, events_view)
    else:
        trace = load_trace(path, events_view=events_view)
        if not quiet:
            print_notices(path, trace.notices)
    if not events_view:
        trace.drop_events_view_columns()
    facts = derive(trace)
    if not sql:
        trace.drop_link_ids()
    return facts


def print_notices(source: str, notices: list[str]) -> None:
    """`pista: notice: SOURCE: ...` on stderr, one line each; the name and the text (which may quote
    the file) with their control characters, newlines included, written out."""
    for notice in notices:
        print(f"pista: notice: {sanitize_line(source)}: {sanitize_line(notice)}", file=sys.stderr)


# Standard input is copied to a file this many bytes at a time: never held whole in memory.
STDIN_BLOCK = 1 << 20
# The copy leaves this much of its disk free: past it, the input is refused rather than filling it.
STDIN_DISK_RESERVE = 1 << 30


def _stdin_file(folder: str) -> Path:
    """Standard input, whole, in a file of `folder` (named .json.gz when it is gzipped), copied a
    block at a time: read whole, `cat /dev/zero | pista table -` took 2.9 GiB in 5 s and went on.
    Bytes that cannot start a trace are refused at the first block; a stream longer than
    PISTA_MAX_UNPACKED, or than the disk holds, when it passes that."""
    source = sys.stdin.buffer
    head = source.read(STDIN_BLOCK)
    if not head:
        raise UsageError("-: standard input is empty; pipe a trace in (`zcat t.json.gz | pista analyze -`)")
    refuse_non_json_start(head, STDIN)
    path = Path(folder) / ("stdin.json.gz" if head[:2] == b"\x1f\x8b" else "stdin.json")
    limit, why = _stdin_limit(folder)
    size = 0
    with open(path, "wb") as copy:
        block = head
        while block:
            size += len(block)
            if size > limit:
                raise BadTrace(STDIN, f"standard input passes {limit:,} bytes: {why}")
            _write_copy(copy, block, folder)
            block = source.read(STDIN_BLOCK)
    return path


def _write_copy(copy: BinaryIO, block: bytes, folder: str) -> None:
    """A block of standard input into its copy; a disk that takes no more is a BadTrace."""
    try:
        copy.write(block)
    except OSError as err:
        raise BadTrace(STDIN, f"cannot keep a copy of standard input in {folder}: {err.strerror or err}") from None


def _stdin_limit(folder: str) -> tuple[int, str]:
    """How many bytes standard input may bring, and why that many."""
    limit = max_unpacked()
    try:
        free = os.statvfs(folder)
        room = free.f_bavail * free.f_frsize - STDIN_DISK_RESERVE
    except (OSError, AttributeError):
        room = limit
    if room < limit:
        return max(room, 0), f"more than the disk of {folder} can hold (a trace piped in is kept there)"
    return limit, "more than pista reads (PISTA_MAX_UNPACKED sets the limit)"


def read_stdin() -> tuple[bytes, list[str]]:
    """The trace's bytes from standard input, unpacked, with the reader's notices (like read_bytes)."""
    # start-up: tempfile (11 modules) only for a trace on standard input
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pista-stdin-") as folder, _named_stdin():
        return read_bytes(_stdin_file(folder))


@contextlib.contextmanager
def _named_stdin() -> Iterator[None]:
    """A trace error about the copy of standard input names `-`, not the temporary file."""
    try:
        yield
    except BadTrace as err:
        if err.path == STDIN:
            raise
        raise BadTrace(STDIN, err.what) from None


def _from_stdin(quiet: bool, events_view: bool) -> Trace:
    # start-up: tempfile (11 modules) only for a trace on standard input
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pista-stdin-") as folder, _named_stdin():
        trace = load_trace(_stdin_file(folder), events_view=events_view)
        hold = getattr(trace.raw_args, "hold", None)  # a big trace's args are read back from the copy
        if hold is not None:
            hold()
    trace.source = "<stdin>"
    if not quiet:
        print_notices("<stdin>", trace.notices)
    return trace


def capture_table(session, analysis) -> str:
    """The op table a capture prints: torch's own, as it printed it; but with Python stacks recorded
    (with_stack) torch lists every Python frame as a row, pista's and the profiler's own among them,
    with negative Self CPU where frames and ops overlap without nesting: then pista's rebuilt table
    of the same trace, which leaves the frames out (table.txt keeps torch's)."""
    text = session.table_text or ""
    if not (session.with_stack and analysis is not None):
        return text
    # start-up: `pista sql --schema` loads this module, not the table
    from pista.table import render_text

    rebuilt = render_text(analysis.table, session.sort_by, session.row_limit, has_device=analysis.facts.has_gpu)
    return (rebuilt.rstrip("\n") + "\n(the ops' table rebuilt by pista, without the Python frames torch lists as "
            "rows under with_stack; torch's own is in table.txt)\n")


# Trace names every capture shares (pista's own OUT/trace.json.gz and its later cycles'
# trace.cycleN.json.gz): an output named after one of them would be the same for every run.
_GENERIC_STEM = re.compile(r"trace(\.cycle\d+)?\Z")


def default_output(trace: str, suffix: str) -> Path:
    """An output beside where the user is (the current folder), named after the run: the trace's own
    name, or where that is a name every capture has (trace.json.gz) its folder's, so the reports of
    runs/a/trace.json.gz and runs/b/trace.json.gz are a.report.html and b.report.html, not one file."""
    if trace == STDIN:
        return Path.cwd() / ("stdin" + suffix)
    path = Path(trace)
    stem = path.name.removesuffix(".gz").removesuffix(".json")
    if _GENERIC_STEM.match(stem):
        folder = path.resolve().parent.name or "trace"  # the root folder has no name
        stem = folder + stem.removeprefix("trace")  # trace.cycle2 in runs/a: a.cycle2
    return Path.cwd() / (stem + suffix)


def replaced_note(path: Path) -> str:
    """What the 'wrote' line adds when the output was already there: nothing is replaced unsaid."""
    return " (replaced the file that was there)" if path.exists() else ""


def _utf8(text: str) -> bytes:
    """UTF-8; a file name that is not UTF-8 (Python holds its bytes as lone surrogates) shows U+FFFD."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]", "\ufffd", text).encode()


# A piece of output as write_output takes it: bytes, or a view of them (annotate's copy of the trace)
Piece = bytes | bytearray | memoryview


def write_output(path: str | os.PathLike[str], data: str | Piece | Iterable[Piece],
                 inputs: tuple[str, ...] = ()) -> Path:
    """Write atomically and never onto one of the inputs; `-` is standard output. `data` may be an
    iterable of byte pieces, written as they come (an output bigger than the memory); an exception
    it raises removes the temp file and goes on up.

    The bytes go to a temp file beside the target, are flushed to disk, and only then renamed over
    it: a reader, or a crash, sees the old file or the new one, never half of one. The new file
    gets the old one's permissions, or the usual ones (umask) if there was none. A symlink is
    written through (its target is replaced, in the target's folder, and the link stays); a device,
    pipe or socket is refused, since the rename would put a file in its place.
    """
    payload = _utf8(data) if isinstance(data, str) else data
    if str(path) == STDIN:
        _write_stdout(payload)
        return Path(STDIN)
    target = Path(path)
    _refuse_inputs(target, inputs)
    real = _regular_target(target)
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{real.parent}: cannot create the output folder: {err.strerror or err}") from None
    _replace_atomically(target, real, payload)
    return target


def _write_stdout(payload: Piece | Iterable[Piece]) -> None:
    """The payload on standard output, after what was written there as text."""
    sys.stdout.flush()
    for piece in _pieces(payload):
        sys.stdout.buffer.write(piece)
    sys.stdout.buffer.flush()


def _refuse_inputs(target: Path, inputs: tuple[str, ...]) -> None:
    for source in inputs:
        refuse_input(target, source, "trace")


def refuse_input(target: str | os.PathLike[str], source: str | None, what: str) -> None:
    """UsageError where the output `target` is the input `source` (a `what`: a trace, a peaks
    file), by path, link or hard link: inputs of every kind are never written."""
    if source is None or str(target) == STDIN:
        return
    if _same_file(source, target) or Path(source).absolute() == Path(target).absolute() \
            or os.path.realpath(source) == os.path.realpath(target):
        raise UsageError(f"{target}: refusing to overwrite the input {what}; choose another -o")


def _same_file(source: str, target: str | os.PathLike[str]) -> bool:
    """Whether both paths exist and are one file (a link, a hard link)."""
    try:
        return os.path.samefile(source, target)
    except OSError:
        return False  # one of them does not exist (yet)


def _regular_target(target: Path) -> Path:
    """Where the bytes go: the path with its symlinks followed; refused unless that is a regular
    file or nothing yet."""
    mode = _mode_to_replace(target)
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{target}: is a directory; give a file name for the output")
    if mode is not None and not stat.S_ISREG(mode):
        raise UsageError(f"{target}: not a regular file (a device, pipe or socket); give a file name, "
                         f"or -o {STDIN} for standard output")
    return Path(os.path.realpath(target))


def _mode_to_replace(target: Path) -> int | None:
    """The mode of what writing `target` would replace, its links followed; None where nothing is there yet."""
    try:
        return target.stat().st_mode
    except FileNotFoundError:
        return None  # a new file, or a link to where one will be
    except OSError as err:  # a symlink loop, a path through a file
        if err.errno == errno.ENOTDIR:
            return None  # mkdir words it: the output's folder is a file
        raise UsageError(f"{target}: cannot write: {err.strerror or err}") from None


def _pieces(payload: Piece | Iterable[Piece]) -> Iterable[Piece]:
    return (payload,) if isinstance(payload, bytes | bytearray | memoryview) else payload


# Longest file name most file systems take, in bytes: the temp file's name is cut to fit it (the
# target's name and a suffix, where a target of 231-255 bytes made it too long to create).
NAME_MAX = 255
# A temp file of ours is named .TARGET.pista-PID-RANDOM.tmp; one whose process is gone and that has
# not been written for this long was left by a SIGKILL or a power loss: the next write there removes it.
_TEMP_NAME = re.compile(r"\..*\.pista-(\d+)-[0-9a-f]{8}\.tmp\Z", re.S)
STALE_TEMP_S = 600


def _temp_name(real: Path) -> str:
    suffix = f".pista-{os.getpid()}-{os.urandom(4).hex()}.tmp"
    # cut by bytes (a name's limit is in bytes); a cut inside a character stays bytes (surrogateescape)
    stem = os.fsencode(real.name)[: NAME_MAX - 1 - len(suffix)]
    return "." + os.fsdecode(stem) + suffix


def _replace_atomically(target: Path, real: Path, payload: Piece | Iterable[Piece]) -> None:
    _remove_stale_temps(real.parent)
    tmp = real.parent / _temp_name(real)
    # Ctrl-C and SIGTERM are held from the temp file's creation into the `try` that removes it: one
    # landing in between (a test sent it the moment the file showed) left the file behind
    held = _hold_signals()
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # 0o666 less the umask, like open()
    except OSError as err:
        _release_signals(held)
        raise UsageError(f"{target}: cannot write: {err.strerror or err}") from None
    try:
        _release_signals(held)  # a signal held till now is handled here, and the temp file removed below
        _write_synced(fd, payload)
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(real.stat().st_mode))
        os.replace(tmp, real)
    except BaseException as err:  # an interrupt or SIGTERM (cli.main raises for it) too: no temp left
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise UsageError(f"{target}: cannot write: {err.strerror or err}") from None
        raise


def _write_synced(fd: int, payload: Piece | Iterable[Piece]) -> None:
    """The payload into the open file `fd`, flushed to disk, and the file closed."""
    with os.fdopen(fd, "wb") as handle:
        for piece in _pieces(payload):
            handle.write(piece)
        handle.flush()
        os.fsync(handle.fileno())


_HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _hold_signals() -> set[int] | None:
    """Block SIGINT and SIGTERM (their handlers run once released); the mask to go back to, or None
    where signals cannot be held (Windows)."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)


def _release_signals(held: set[int] | None) -> None:
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _remove_stale_temps(folder: Path) -> None:
    """Remove the temp files of writes that died in `folder` (their process gone, their file not
    written for STALE_TEMP_S): none is left behind for good."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return  # a folder that does not exist yet, or cannot be listed: writing words the error
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match is None or _alive(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            if _stale_file(entry):
                os.unlink(entry.path)


def _stale_file(entry: os.DirEntry[str]) -> bool:
    """A file (no link, no folder) not written for STALE_TEMP_S."""
    return entry.is_file(follow_symlinks=False) and \
        time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_S


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # someone else's process, or no pid at all (then the name is not ours to judge)
    return True


# The widest text pista lays out: rich pads every line of a panel to the width, so COLUMNS=1000000000
# ran out of memory.
MAX_WIDTH = 1000


def output_style(color: bool | None, stream=None) -> tuple[bool, int | None]:
    """(color, width) for text written to `stream` (stdout): --color/--no-color first, then NO_COLOR
    and FORCE_COLOR (https://no-color.org, force-color.org), then whether it is a terminal; the width
    is the terminal's (COLUMNS where set), from 40 to MAX_WIDTH. Off a terminal with no COLUMNS it is
    None: one logical line per line, unwrapped and unpadded (pista.render.layout), as ruff, pytest
    and git write into a pipe."""
    # start-up: shutil (5 modules) only where the output's width is asked
    import shutil

    stream = stream or sys.stdout
    tty = bool(getattr(stream, "isatty", lambda: False)())
    if color is None:
        color = _environment_color(tty)
    if not tty and not os.environ.get("COLUMNS"):
        return color, None
    width = shutil.get_terminal_size((100, 24)).columns
    return color, min(MAX_WIDTH, max(40, width))


def _environment_color(tty: bool) -> bool:
    """Color where neither --color nor --no-color is given: NO_COLOR, then FORCE_COLOR, then a terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return tty
