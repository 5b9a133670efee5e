"""Pieces several verbs share: opening a trace with its notices, writing outputs safely."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from pista.errors import UsageError
from pista.trace.facts import Facts, derive
from pista.trace.load import load_trace


def open_trace(path: str, quiet: bool = False) -> Facts:
    """Load and derive; notices (skipped events, salvage) go to stderr, one line each."""
    trace = load_trace(path)
    if not quiet:
        for notice in trace.notices:
            print(f"pista: notice: {path}: {notice}", file=sys.stderr)
    return derive(trace)


def write_output(path: str | os.PathLike[str], data: str | bytes, inputs: tuple[str, ...] = ()) -> Path:
    """Write atomically (temp file + rename) and never onto one of the inputs."""
    target = Path(path)
    for source in inputs:
        try:
            if Path(source).exists() and target.exists() and os.path.samefile(source, target):
                raise UsageError(f"{target}: refusing to overwrite the input trace; choose another -o")
        except OSError:
            continue
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
