"""The savings suite's table: per pair, the saving measured unprofiled against what pista predicts.

`python scripts/savings_table.py [DIR]` (default tests/fixtures/savings/h100) reads DIR/measured.json and
each pair's broken trace, analyses it with the engine (`replay=True`) and with the rules' own estimates,
and prints a Markdown table: cause, measured saving, the cause's predicted saving (replayed without the
profiler; the rules' own estimate), the cause's rank (1: the top fix), and the top fix. docs/savings.md
keeps its output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pista.analysis import analyze


def row(folder: Path, entry: dict) -> dict:
    path = folder / f"{entry['pair']}__broken.json.gz"
    out = {"pair": entry["pair"], "measured": entry["saving"], "rules": entry["rules"]}
    for mode, replay in (("replay", True), ("own", False)):
        a = analyze(str(path), replay=replay)
        mine = [f for f in a.findings if f.rule in entry["rules"]]
        top = a.top_fix
        out[mode] = {
            "named": bool(mine),
            "predicted": mine[0].impact.rank_share if mine else None,
            "rank": 1 + [f.rule for f in a.findings].index(mine[0].rule) if mine else None,
            "top": top.rule if top else None,
            "above_info": [f.rule for f in a.findings if f.severity.value != "info"],
            "replay_error": a.summary.replay_error,
        }
    return out


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/savings/h100")
    rows = [row(folder, e) for e in json.loads((folder / "measured.json").read_text()) if "saving" in e]
    print("| pair | cause's rules | measured | predicted (replay) | rank | top fix (replay) | predicted (rules) | top fix (rules) |")
    print("| --- | --- | ---: | ---: | ---: | --- | ---: | --- |")
    for r in rows:
        def pct(v):
            return "-" if v is None else f"{100 * v:.1f}%"
        print(f"| {r['pair']} | {', '.join(r['rules']) or 'healthy'} | {pct(r['measured'])} | {pct(r['replay']['predicted'])} | "
              f"{r['replay']['rank'] or '-'} | {r['replay']['top'] or '-'} | {pct(r['own']['predicted'])} | {r['own']['top'] or '-'} |")
    (folder / "predicted.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
