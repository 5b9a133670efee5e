"""The terminal report in a real pseudo-terminal: its width, NO_COLOR, and clean pipes."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

from conftest import fixture

PISTA = [sys.executable, "-m", "pista"]


def _in_pty(args: list[str], columns: int, env: dict[str, str]) -> str:
    """Run in a pseudo-terminal of `columns` columns; what it printed, as text."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in {**os.environ, **env}.items() if k not in ("COLUMNS", "LINES") or k in env}
    proc = subprocess.Popen(args, stdin=child, stdout=child, stderr=child, env=env, close_fds=True)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


def test_eighty_columns_and_no_color():
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR",)}
    out = _in_pty([*PISTA, "analyze", str(fixture("big_gpt_eager_20steps")), "--no-table"], 80,
                  {**env, "NO_COLOR": "1"})
    lines = out.replace("\r\n", "\n").splitlines()
    assert len(lines) > 10
    assert max(len(line) for line in lines) <= 80
    assert "\x1b" not in out


def test_color_in_a_terminal_unless_no_color():
    args = [*PISTA, "analyze", str(fixture("gpu/host_sync_item")), "--no-table"]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    assert "\x1b[" in _in_pty(args, 100, env)
    forced = subprocess.run(args, capture_output=True, text=True, env={**env, "FORCE_COLOR": "1"}, check=True)
    assert "\x1b[" in forced.stdout


def test_redirected_json_starts_with_the_data():
    out = subprocess.run([*PISTA, "analyze", str(fixture("gpu/host_sync_item")), "--format", "json"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.startswith("{")
