"""Parse the text table torch printed (`key_averages().table()`), to check pista's rebuild against."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_UNITS = {"s": 1e6, "ms": 1e3, "us": 1.0}
_TIME = re.compile(r"^([\d.]+)(s|ms|us)$")


def parse_time(text: str) -> float:
    m = _TIME.match(text)
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * _UNITS[m.group(2)]


@dataclass
class TorchRow:
    name: str
    self_cpu_us: float
    cpu_total_us: float
    self_device_us: float
    device_total_us: float
    calls: int
    memory: tuple[str, ...] = ()  # the memory cells as printed ("120.00 MB", "0 B"), profile_memory only


@dataclass
class TorchTable:
    rows: list[TorchRow]
    self_cpu_total_us: float
    self_device_total_us: float | None


def parse_table(path: Path) -> TorchTable:
    lines = Path(path).read_text().splitlines()
    header = lines[1]
    has_device = "Self CUDA" in header
    memory_columns = len(re.findall(r"\bMem\b", header))  # profile_memory: "0 B", "-144.01 MB", two tokens each
    rows = []
    for line in lines[3:]:
        if line.startswith("---"):
            break
        # the name column is only as wide as the longest name needs (at most 55): parse from the right
        cells = line.split()
        calls = int(cells[-1])
        mem_tokens = cells[len(cells) - 1 - 2 * memory_columns:-1]
        memory = tuple(" ".join(mem_tokens[k:k + 2]) for k in range(0, len(mem_tokens), 2))
        cells = cells[: len(cells) - 1 - 2 * memory_columns]
        count = 9 if has_device else 5
        name, rest = " ".join(cells[:-count]), cells[-count:]
        if has_device:
            rows.append(TorchRow(name, parse_time(rest[1]), parse_time(rest[3]), parse_time(rest[5]),
                                 parse_time(rest[7]), calls, memory))
        else:
            rows.append(TorchRow(name, parse_time(rest[1]), parse_time(rest[3]), 0.0, 0.0, calls, memory))
    cpu_total = device_total = None
    for line in lines:
        if line.startswith("Self CPU time total:"):
            cpu_total = parse_time(line.split(":")[1].strip())
        if line.startswith("Self CUDA time total:"):
            device_total = parse_time(line.split(":")[1].strip())
    assert cpu_total is not None
    return TorchTable(rows, cpu_total, device_total)
