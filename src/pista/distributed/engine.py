"""Where the per-rank work runs: a local process pool (default), in this process, or a Dask cluster.

Every engine maps `summarize_rank` over the files and returns RankSummary objects in file order;
only those small summaries travel back, never a Trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from pista import forked
from pista.distributed.rank import RankSummary, summarize_rank
from pista.errors import UsageError

ENGINES = ("local", "inline", "dask")
# How long to wait for a Dask scheduler to answer: Dask's own default connect timeout.
SCHEDULER_TIMEOUT_S = 30


def run_ranks(paths: Sequence[str], engine: str = "local", workers: int | None = None,
              scheduler: str | None = None, rules: list[str] | None = None) -> list[RankSummary]:
    work = partial(summarize_rank, rules=rules)
    if engine == "dask":
        return _dask(paths, work, scheduler)
    if scheduler:
        raise UsageError("--scheduler goes with --engine dask")
    if engine == "inline":
        return [work(p) for p in paths]
    if engine != "local":
        raise UsageError(f"unknown engine '{engine}'; choose one of {', '.join(ENGINES)}")
    n = workers if workers is not None else min(len(paths), forked.usable_cores())
    if n < 1:
        raise UsageError("--workers must be at least 1")
    if n == 1 or len(paths) == 1:
        return [work(p) for p in paths]
    with ProcessPoolExecutor(max_workers=n, initializer=_no_forks) as pool:
        # a few files per task: thousands of small traces cost less in pickling round trips
        return list(pool.map(work, paths, chunksize=max(1, len(paths) // (4 * n))))


def _no_forks() -> None:
    """In a rank worker: the pool fills the cores already, so no worker forks a reader or a rule."""
    forked.DISABLED = True


def _dask(paths: Sequence[str], work: partial, scheduler: str | None) -> list[RankSummary]:
    if not scheduler:
        raise UsageError("--engine dask needs --scheduler ADDRESS (e.g. tcp://10.0.0.5:8786)")
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("--engine dask needs dask.distributed: pip install 'pista[distributed]'") from None
    try:
        client = Client(scheduler, timeout=SCHEDULER_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as err:  # ValueError: an address Dask cannot parse
        raise UsageError(f"cannot reach the Dask scheduler at {scheduler}: {err}") from None
    try:
        # pure=False: a file's content may change between runs under the same path
        futures = client.map(work, list(paths), pure=False)
        return client.gather(futures)
    finally:
        client.close()
