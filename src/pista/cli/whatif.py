"""`pista whatif TRACE [EDITS]`: replay the profiled steps with edits a user names (pista.timeline) and
print each step before and after, and the saving; with no edit, the replay's error against the trace.

    pista whatif trace.json.gz --drop 'aten::item'             # these ops (and their kernels, syncs) gone
    pista whatif trace.json.gz --scale-kernels 'gemm|nvjet=0.5'  # kernels matching a pattern, 2x faster
    pista whatif trace.json.gz --no-syncs --no-profiler         # no waits; without the profiler's cost
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from pista.errors import UsageError
from pista.render.controls import sanitize, sanitize_line

EXAMPLES = __doc__.split("\n\n", 1)[1]



# `pista whatif --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista whatif trace.json.gz --drop 'aten::item'          # those ops, their kernels and syncs gone
  pista whatif trace.json.gz --scale-kernels 'gemm|nvjet=0.5'
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Replay the profiled steps with your edits: what would change save?"
    parser.epilog = "examples:\n" + EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("trace", help="a torch.profiler chrome trace (.json or .json.gz), - for stdin")
    parser.add_argument("--drop", action="append", default=[], metavar="REGEX",
                        help="remove host ops or regions whose name matches, with the calls and device work under them")
    parser.add_argument("--scale-kernels", action="append", default=[], metavar="REGEX=FACTOR",
                        help="multiply the time of device work whose name matches by FACTOR (0.5: twice as fast)")
    parser.add_argument("--scale-host", action="append", default=[], metavar="REGEX=FACTOR",
                        help="multiply the host time under ops or regions whose name matches by FACTOR")
    parser.add_argument("--no-syncs", action="store_true", help="no call waits for the GPU any more")
    parser.add_argument("--no-profiler", action="store_true", help="take the profiler's own host cost out")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def _pair(text: str, flag: str) -> tuple[re.Pattern[str], float]:
    pattern, sep, factor = text.rpartition("=")
    try:
        value = float(factor)
        if not sep or value < 0:
            raise ValueError
        return re.compile(pattern), value
    except (ValueError, re.error):
        raise UsageError(f"{flag} {text!r}: give REGEX=FACTOR with a factor of 0 or more") from None


def _regex(text: str, flag: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise UsageError(f"{flag} {text!r}: {exc}") from None


def build_edit(facts, args: argparse.Namespace):  # noqa: ANN001, ANN201 - the trace's facts, the parsed flags
    """The user's edits as one pista.timeline.Edit, and the number of events each flag matched."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    import numpy as np

    from pista.engine import profiler_edit
    from pista.timeline import NO_EDIT, Edit

    trace = facts.trace
    host = facts.is_host & facts.is_complete
    work = facts.is_device_work & facts.is_complete
    matched: dict[str, int] = {}
    edit = NO_EDIT
    for text in args.drop:
        hit = _named_events(trace, host, _regex(text, "--drop"))
        matched[f"--drop {text}"] = int(hit.size)
        edit = edit + Edit(remove=hit.astype(np.int64))
    for text in args.scale_kernels:
        rx, factor = _pair(text, "--scale-kernels")
        hit = _named_events(trace, work, rx)
        matched[f"--scale-kernels {text}"] = int(hit.size)
        edit = edit + Edit(device_dur=(hit.astype(np.int64), trace.dur[hit] * factor))
    for text in args.scale_host:
        rx, factor = _pair(text, "--scale-host")
        hit = _named_events(trace, host, rx)
        matched[f"--scale-host {text}"] = int(hit.size)
        edit = edit + Edit(host_scale=((hit.astype(np.int64), min(factor, 1.0)),))
    if args.no_syncs:
        edit = edit + Edit(unblock=np.flatnonzero(facts.is_launch & facts.is_complete).astype(np.int64))
    if args.no_profiler:
        edit = edit + profiler_edit(facts)
    return edit, matched


def _named_events(trace, among, rx: re.Pattern[str]):  # noqa: ANN001, ANN202 - the trace, bool array; rows
    """The rows of `among` whose event's name `rx` finds."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    import numpy as np

    return np.flatnonzero(among & np.array([bool(rx.search(n)) for n in trace.name_array], bool)[trace.name])


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.common import open_trace
    from pista.timeline import timeline

    facts = open_trace(args.trace)
    tl = timeline(facts)
    if tl is None or not tl.baseline.ends.size:
        raise UsageError(f"{args.trace}: no host or device events to replay")
    edit, matched = build_edit(facts, args)
    observed, before, after = tl.observed, tl.baseline, tl.replay(edit)
    steps = [s.number for s in facts.steps] or [0]
    rows = [{"step": n, "observed_us": o / 1e3, "replayed_us": b / 1e3, "after_us": a / 1e3}
            for n, o, b, a in zip(steps, observed.step_ns, before.step_ns, after.step_ns, strict=False)]
    saved = (before.median_ns - after.median_ns) / 1e3  # the median step, as pista analyze's impacts
    lanes = _lanes(tl, before, after, max(len(rows), 1))
    result = {"source": facts.trace.source, "replay_error": tl.error, "matched": matched, "steps": rows,
              "lanes": lanes, "step_us": before.median_ns / 1e3, "after_us": after.median_ns / 1e3,
              "saved_us": saved, "saved_share": saved * 1e3 / max(before.median_ns, 1.0)}
    if args.format == "json":
        json.dump(result, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    sys.stdout.write(sanitize(_text(result, rows, lanes, matched, tl.error, saved)))
    return 0


def _lanes(tl, before, after, k: int) -> list[dict]:  # noqa: ANN001 - the timeline, its replays
    """Per lane, per step (of `k`): the host's waiting and each stream's busy time, before and after."""
    lanes = [{"lane": "host", "what": "waiting", "before_us": before.waited_ns / k / 1e3,
              "after_us": after.waited_ns / k / 1e3}]
    lanes += [{"lane": tl.stream_label(s), "what": "busy", "before_us": before.stream_busy_ns.get(s, 0.0) / k / 1e3,
               "after_us": after.stream_busy_ns.get(s, 0.0) / k / 1e3}
              for s in sorted(set(before.stream_busy_ns) | set(after.stream_busy_ns))]
    return lanes


def _text(result: dict, rows: list[dict], lanes: list[dict], matched: dict, error: float, saved: float) -> str:
    """The replay for people: figures in three significant digits (the JSON keeps every digit)."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n._fmt import pct, short_figures, t

    with short_figures():
        out = [f"replay of {len(rows)} step(s), {pct(error)} from the trace unchanged"]
        out += [f"  {flag}: {n} event(s)" for flag, n in matched.items()]
        out.append(f"{'step':>6} {'observed':>12} {'replayed':>12} {'after':>12}")
        out += [f"{r['step']:>6} {t(r['observed_us']):>12} {t(r['replayed_us']):>12} {t(r['after_us']):>12}" for r in rows]
        out.append("per lane, per step:")
        out += [f"  {sanitize_line(x['lane'])} {x['what']}: {t(x['before_us'])} -> {t(x['after_us'])}" for x in lanes]
        out.append(f"median step: {t(result['step_us'])} -> {t(result['after_us'])}, saves {t(saved)} "
                   f"({pct(result['saved_share'])})")
    return "\n".join(out) + "\n"
