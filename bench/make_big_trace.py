"""Make a big, realistic torch.profiler trace from a real one: its steps again and again.

Each copy of the source's events is shifted in time by the source's span (plus a gap) and gets
fresh ids (External id, correlation, flow ids, Ev Idx, ProfilerStep#N numbers), so ops, kernels
and flows link up within each copy just as in the original. Metadata events and the profiler's
span come once, at the end, the span stretched over all copies. Events are written as they are
made: memory holds the source trace, never the output.

    python bench/make_big_trace.py tests/fixtures/big_gpt_eager_20steps.json.gz /tmp/big1g.json --size 1G
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path
from typing import Any

import orjson

STEP = re.compile(r"^ProfilerStep#(\d+)$")
# Idle time between two copies, in microseconds (a short pause, as between profiled steps).
GAP_US = 50.0
SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)B?", text.strip().upper())
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 50M, 1G, 5G)")
    return int(float(match.group(1)) * SIZE_UNITS[match.group(2)])


def read_source(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return orjson.loads(data)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Repeater:
    """The source's events, split into the per-step part that repeats and the part written once."""

    def __init__(self, doc: dict[str, Any]) -> None:
        events = doc["traceEvents"]
        self.repeated = [e for e in events if e.get("ph") != "M" and _int(e.get("pid")) is not None]
        self.once = [e for e in events if e.get("ph") == "M" or _int(e.get("pid")) is None]
        starts = [float(e.get("ts", 0.0)) for e in self.repeated]
        ends = [float(e.get("ts", 0.0)) + float(e.get("dur", 0.0)) for e in self.repeated]
        self.start_us, self.end_us = min(starts), max(ends)
        self.period_us = self.end_us - self.start_us + GAP_US

        def top(key: str, where: str = "args") -> int:
            values = [_int((e.get(where) or {}).get(key)) if where else _int(e.get(key)) for e in self.repeated]
            return max([v for v in values if v is not None], default=0) + 1

        self.external_span = top("External id")
        self.correlation_span = top("correlation")
        self.ev_idx_span = top("Ev Idx")
        self.flow_span = top("id", where="")
        steps = [int(m.group(1)) for e in self.repeated if (m := STEP.match(str(e.get("name", ""))))]
        self.step_span = (max(steps) - min(steps) + 1) if steps else 0

    def copy(self, k: int) -> Any:
        """Copy k of the repeated events, as JSON bytes, one event at a time."""
        shift = k * self.period_us
        for event in self.repeated:
            e = dict(event)
            e["ts"] = round(float(e.get("ts", 0.0)) + shift, 3)
            if _int(e.get("id")) is not None:
                e["id"] = e["id"] + k * self.flow_span
            if self.step_span and (m := STEP.match(str(e.get("name", "")))):
                e["name"] = f"ProfilerStep#{int(m.group(1)) + k * self.step_span}"
            args = e.get("args")
            if isinstance(args, dict):
                args = dict(args)
                for key, span in (("External id", self.external_span), ("correlation", self.correlation_span),
                                  ("Ev Idx", self.ev_idx_span)):
                    if _int(args.get(key)) is not None:
                        args[key] += k * span
                e["args"] = args
            yield orjson.dumps(e)

    def closing(self, copies: int) -> Any:
        for event in self.once:
            e = dict(event)
            if e.get("ph") == "X" and e.get("cat") == "Trace":  # the profiler's span: over every copy
                e["dur"] = round(float(e.get("dur", 0.0)) + (copies - 1) * self.period_us, 3)
            elif e.get("ph") == "i" and float(e.get("ts", 0.0)) > self.start_us:
                e["ts"] = round(float(e["ts"]) + (copies - 1) * self.period_us, 3)
            yield orjson.dumps(e)


def write(source: Path, target: Path, size: int, separator: bytes = b",\n  ") -> tuple[int, int]:
    """Write copies until the file reaches `size` bytes (unpacked); returns (copies, bytes)."""
    doc = read_source(source)
    repeater = Repeater(doc)
    header = {k: v for k, v in doc.items() if k not in ("traceEvents", "traceName")}
    head = orjson.dumps(header, option=orjson.OPT_INDENT_2)[:-2] + b',\n  "traceEvents": [\n  '
    tail = b'\n  ],\n  "traceName": ' + orjson.dumps(target.name) + b"\n}\n"
    opener = gzip.open if target.name.endswith(".gz") else open
    written = 0
    copies = 0
    with opener(target, "wb") as out:  # type: ignore[operator]
        def put(chunk: bytes) -> None:
            nonlocal written
            out.write(chunk)
            written += len(chunk)

        put(head)
        first = True
        while copies == 0 or written < size:
            for event in repeater.copy(copies):
                if not first:
                    put(separator)
                put(event)
                first = False
            copies += 1
        for event in repeater.closing(copies):
            put(separator)
            put(event)
        put(tail)
    return copies, written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a real trace (.json or .json.gz)")
    parser.add_argument("target", type=Path, help="where to write (.json, or .json.gz to compress)")
    parser.add_argument("--size", type=parse_size, default=parse_size("1G"),
                        help="stop once the JSON is at least this big (e.g. 50M, 1G, 5G; default 1G)")
    parser.add_argument("--compact", action="store_true", help="no whitespace between events")
    args = parser.parse_args(argv)
    copies, written = write(args.source, args.target, args.size, b"," if args.compact else b",\n  ")
    print(f"{args.target}: {copies} copies of {args.source.name}, {written / 2**20:.1f} MiB of JSON",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
