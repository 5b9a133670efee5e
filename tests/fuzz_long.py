"""The long fuzz run: tests/test_fuzz.py's strategies for as long as you give it.

    /work/venv/bin/python tests/fuzz_long.py --seconds 600 [--save DIR] [--streamed]

Every input is checked against the same property as the CI test (a Trace and an Analysis, or a
one-line PistaError); with --streamed, the streamed reader's (forced onto each input, in blocks of
61 bytes to 1 MB, one process or two) against the in-memory reader's: the same trace or error. Unlike the CI test it does not stop at the first failure: it counts the
examples, groups failures by where they were raised, keeps the smallest input of each group (under
--save) and prints a summary. Exit code 1 if anything failed.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_fuzz import STREAM_BLOCKS, fuzz_one, fuzz_streamed, json_values, mutated_traces  # noqa: E402


class _TimeUp(Exception):
    pass


def where(err: BaseException) -> str:
    """The innermost frame inside pista (else the innermost at all) that raised."""
    frames = traceback.extract_tb(err.__traceback__)
    inside = [f for f in frames if "/pista/" in f.filename] or frames
    frame = inside[-1]
    return f"{type(err).__name__} at {Path(frame.filename).name}:{frame.lineno} ({frame.name})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--save", type=Path, default=None, help="folder for one failing input per site")
    parser.add_argument("--streamed", action="store_true", help="the streamed reader against the in-memory one")
    args = parser.parse_args()

    deadline = time.monotonic() + args.seconds
    examples: Counter[str] = Counter()
    failures: dict[str, tuple[int, bytes, str]] = {}
    failure_count: Counter[str] = Counter()

    def check(kind: str, data: bytes, block: int = 0, parallel: bool = False) -> None:
        if time.monotonic() > deadline:
            raise _TimeUp
        examples[kind] += 1
        try:
            if args.streamed:
                fuzz_streamed(data, block, parallel)
            else:
                fuzz_one(data)
        except Exception as err:  # noqa: BLE001 - every kind of failure is what we are counting
            site = where(err)
            failure_count[site] += 1
            if site not in failures or len(data) < failures[site][0]:
                failures[site] = (len(data), data, f"{type(err).__name__}: {str(err)[:300]}")

    quick = settings(max_examples=10**9, deadline=None, database=None, phases=[Phase.generate],
                     suppress_health_check=list(HealthCheck))

    @quick
    @given(mutated_traces(), STREAM_BLOCKS, st.booleans())
    def mutated(data: bytes, block: int, parallel: bool) -> None:
        check("mutated real traces", data, block, parallel)

    @quick
    @given(st.binary(max_size=4096), STREAM_BLOCKS, st.booleans())
    def arbitrary(data: bytes, block: int, parallel: bool) -> None:
        check("arbitrary bytes", data, block, parallel)

    @quick
    @given(json_values, STREAM_BLOCKS, st.booleans())
    def documents(value: object, block: int, parallel: bool) -> None:
        import json

        check("arbitrary JSON", json.dumps({"traceEvents": value}, allow_nan=True).encode(), block, parallel)

    # most of the time on mutated real traces, the rest on the blind strategies
    share = {mutated: 0.8, arbitrary: 0.1, documents: 0.1}
    start = time.monotonic()
    for run, fraction in share.items():
        deadline = min(time.monotonic() + args.seconds * fraction, start + args.seconds)
        with contextlib.suppress(_TimeUp):
            run()
    elapsed = time.monotonic() - start

    total = sum(examples.values())
    print(f"fuzz_long: {total} examples in {elapsed:.0f} s "
          + ", ".join(f"{kind}: {count}" for kind, count in examples.items()))
    if not failures:
        print("fuzz_long: no failures")
        return 0
    print(f"fuzz_long: {sum(failure_count.values())} failing examples at {len(failures)} site(s):")
    for site, count in failure_count.most_common():
        size, data, message = failures[site]
        print(f"  {count:6d}  {site}: {message}")
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            name = site.replace(" ", "_").replace("/", "_").replace(":", "_").replace("(", "").replace(")", "")
            (args.save / f"{name}.bin").write_bytes(data)
    return 1


if __name__ == "__main__":
    sys.exit(main())
