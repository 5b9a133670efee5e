"""Fetch the foreign traces that tests/fixtures/foreign/ lists but does not hold (their repositories'
licences do not allow a copy, or they are big) from GitHub's raw URLs into a cache folder, checking
each file's sha256. tests/test_foreign.py reads them from there when they are present.

    python scripts/fetch_foreign.py [--cache DIR]

The cache is $PISTA_FOREIGN_CACHE, else ~/.cache/pista/foreign.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import urllib.request
from pathlib import Path

LIST = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "foreign" / "remote.json"
RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
TIMEOUT_S = 60


def cache_dir() -> Path:
    return Path(os.environ.get("PISTA_FOREIGN_CACHE") or Path.home() / ".cache" / "pista" / "foreign")


def fetch(entry: dict[str, str], cache: Path) -> str:
    dest = cache / entry["file"]
    if dest.exists() and hashlib.sha256(dest.read_bytes()).hexdigest() == entry["sha256"]:
        return "cached"
    url = RAW.format(**entry)
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer:  # noqa: S310 - a fixed https URL
        data = answer.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        return f"sha256 {digest[:12]} is not the listed {entry['sha256'][:12]}: not kept"
    tmp = dest.with_suffix(dest.suffix + ".part")
    tmp.write_bytes(data)
    tmp.replace(dest)
    return "fetched"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args(argv)
    cache = args.cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    failed = 0
    for entry in json.loads(LIST.read_text()):
        try:
            status = fetch(entry, cache)
        except OSError as err:
            status = f"failed: {err}"
        failed += not status.startswith(("cached", "fetched"))
        print(f"{entry['file']}: {status} ({entry['repo']}, {entry['licence']})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
