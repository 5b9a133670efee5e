"""Parse the text table torch printed (`key_averages().table()`), to check pista's rebuild against."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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
    input_shapes: str = ""  # group_by_input_shape only
    stack: list[str] = field(default_factory=list)  # group_by_stack_n only: the Source Location lines


@dataclass
class TorchTable:
    rows: list[TorchRow]
    self_cpu_total_us: float
    self_device_total_us: float | None


def parse_table(path: Path) -> TorchTable:
    lines = Path(path).read_text().splitlines()
    # the columns are the runs of dashes of the rule above the header
    spans = [m.span() for m in re.finditer(r"-+", lines[0])]
    # a header longer than its column ("CUDA time avg" in 12) pushes the rest right: split on the gaps
    headers = re.split(r"\s{2,}", lines[1].strip())
    assert len(headers) == len(spans), headers
    col = {h: k for k, h in enumerate(headers)}
    has_device = "Self CUDA" in col
    memory_cols = [k for k, h in enumerate(headers) if h.endswith("Mem")]
    rows: list[TorchRow] = []
    for line in lines[3:]:
        if line.startswith("---"):
            break
        cells = [line[a:b].strip() for a, b in spans]
        source = cells[col["Source Location"]] if "Source Location" in col else ""
        if not cells[0] and rows:  # a Source Location continuation, or the blank line after a row
            if source:
                rows[-1].stack.append(source)
            continue

        def t(h: str, cells: list[str] = cells) -> float:
            return parse_time(cells[col[h]]) if h in col else 0.0

        rows.append(TorchRow(cells[0], t("Self CPU"), t("CPU total"), t("Self CUDA"), t("CUDA total"),
                             int(cells[col["# of Calls"]]), tuple(cells[k] for k in memory_cols),
                             cells[col["Input Shapes"]] if "Input Shapes" in col else "",
                             [source] if source else []))
    cpu_total = device_total = None
    for line in lines:
        if line.startswith("Self CPU time total:"):
            cpu_total = parse_time(line.split(":")[1].strip())
        if line.startswith("Self CUDA time total:"):
            device_total = parse_time(line.split(":")[1].strip())
    assert cpu_total is not None
    assert has_device == (device_total is not None)
    return TorchTable(rows, cpu_total, device_total)
