"""Where the per-rank work runs: a local process pool (default), in this process, or a Dask cluster.

Every engine maps `summarize_rank` over the files and returns RankSummary objects in file order;
only those small summaries travel back, never a Trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any

from pista import forked
from pista.distributed.rank import RankSummary, summarize_rank
from pista.errors import UsageError
from pista.finding import Record
from pista.notices import WorkersCapped

ENGINES = ("local", "inline", "dask")
# How long a TCP connect to the scheduler may take: a scheduler answers in milliseconds on any
# network a cluster runs on; past this the address is wrong or firewalled.
CONNECT_TIMEOUT_S = 5.0
# How long Dask's handshake with it may take once the TCP connect succeeded (milliseconds for a
# scheduler; a server that accepts and stays silent would otherwise hold Dask's connect forever).
SCHEDULER_TIMEOUT_S = 5
# How long closing the client may take: on an interrupt the user is waiting for the prompt.
CLOSE_TIMEOUT_S = 5


def run_ranks(paths: Sequence[str], engine: str = "local", workers: int | None = None,
              scheduler: str | None = None, rules: list[str] | None = None,
              notices: list[Record] | None = None) -> list[RankSummary]:
    """The ranks' summaries in file order; what the caller should tell the user goes to `notices`."""
    work = partial(summarize_rank, rules=rules)
    if engine == "dask":
        return _dask(paths, work, scheduler)
    if scheduler:
        raise UsageError("--scheduler goes with --engine dask")
    if engine not in ("inline", "local"):
        raise UsageError(f"unknown engine '{engine}'; choose one of {', '.join(ENGINES)}")
    n = 1 if engine == "inline" else pool_size(workers, len(paths), notices if notices is not None else [])
    return [work(p) for p in paths] if n == 1 else _pooled(paths, work, n)


def pool_size(workers: int | None, ranks: int, notices: list[Record]) -> int:
    """How many local processes: one per usable core, never more than the ranks. More than the
    cores only makes the parses take turns (each is CPU-bound), and `--workers 100000` would start
    a process per rank before the first one finished."""
    if workers is not None and workers < 1:
        raise UsageError("--workers must be at least 1")
    cores = forked.usable_cores()
    if workers is not None and workers > cores:
        notices.append(WorkersCapped(workers, cores, min(cores, ranks)))
    return max(1, min(workers or cores, cores, ranks))


def _pooled(paths: Sequence[str], work: partial, n: int) -> list[RankSummary]:
    pool = ProcessPoolExecutor(max_workers=n, initializer=_worker_start, initargs=(os.getpid(),))
    try:
        with forked.signals_held():  # map() forks the workers, then queues every task
            # a few files per task: thousands of small traces cost less in pickling round trips
            results = pool.map(work, paths, chunksize=max(1, len(paths) // (4 * n)))
        summaries = list(results)
    except BaseException:  # Ctrl-C, SIGTERM (cli raises Terminated): stop the workers now
        _stop(pool)
        raise
    pool.shutdown()
    return summaries


def _worker_start(parent: int) -> None:
    """In a rank worker: no forks of its own (the pool fills the cores already), Ctrl-C left to the
    parent (which stops the pool; a worker's own KeyboardInterrupt would print a traceback), and
    an end with the parent however it ends (a SIGKILLed parent runs no clean-up)."""
    forked.DISABLED = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    forked.die_with_parent(parent)
    forked.release_signals()


def _stop(pool: ProcessPoolExecutor) -> None:
    """End the workers at once: shutdown() alone lets them parse every rank still queued first."""
    # the pool's own list of its processes: the public terminate_workers() came in Python 3.14
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(forked.JOIN_TIMEOUT_S)
        if worker.is_alive():
            worker.kill()
            worker.join(forked.JOIN_TIMEOUT_S)


def _dask(paths: Sequence[str], work: partial, scheduler: str | None) -> list[RankSummary]:
    if not scheduler:
        raise UsageError("--engine dask needs --scheduler ADDRESS (e.g. tcp://10.0.0.5:8786)")
    try:
        # dask: the distributed extra, only with --scheduler
        import distributed
    except ImportError:
        raise UsageError("--engine dask needs dask.distributed: pip install 'pista[distributed]'") from None
    _probe(scheduler)
    client = _connect(distributed, scheduler)
    try:
        # pure=False: a file's content may change between runs under the same path
        return client.gather(client.map(work, list(paths), pure=False))
    except BaseException:  # Ctrl-C, SIGTERM: the caller says so in one line
        _quiet_dask()
        raise
    finally:
        with contextlib.suppress(Exception):  # the results are in, or the run is over: a slow close is no error
            client.close(timeout=CLOSE_TIMEOUT_S)


def _probe(scheduler: str) -> None:
    """Fail fast, in one line, where no Dask scheduler answers: Dask retries a refused connection
    until its timeout, and waits forever for the handshake of a server that accepts and says
    nothing. Only for TCP addresses: inproc:// and the like have no socket to try."""
    # dask: the distributed extra, only with --scheduler
    from distributed.comm.addressing import get_address_host_port, parse_address

    try:
        protocol, _ = parse_address(scheduler, strict=False)
        if protocol not in ("tcp", "tls"):
            return
        address = scheduler if "://" in scheduler else f"tcp://{scheduler}"
        socket.create_connection(get_address_host_port(address), timeout=CONNECT_TIMEOUT_S).close()
    except (OSError, ValueError) as err:  # ValueError: an address Dask cannot parse
        raise UsageError(f"cannot reach the Dask scheduler at {scheduler}: {_reason(err)}") from None
    if protocol == "tcp":  # tls needs the user's certificates: Client's own connect tries it
        _handshake(scheduler, address)


def _handshake(scheduler: str, address: str) -> None:
    # dask: the distributed extra, only with --scheduler
    from distributed.comm import connect

    async def greet() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=SCHEDULER_TIMEOUT_S), SCHEDULER_TIMEOUT_S)
        await comm.close()

    try:
        asyncio.run(greet())
    except Exception as err:  # noqa: BLE001 - whatever answered there, it is no scheduler we can use
        raise UsageError(f"cannot use the Dask scheduler at {scheduler}: {_reason(err)} "
                         "(is a Dask scheduler listening there?)") from None


def _connect(distributed: Any, scheduler: str) -> Any:
    class Client(distributed.Client):
        def start(self, **kwargs: Any) -> None:
            try:
                super().start(**kwargs)
            except BaseException:
                # nothing to close: without this, the half-made client's __del__ waits twice the
                # timeout for a scheduler that never answered, then prints a traceback
                self.status = "closed"
                raise

    try:
        return Client(scheduler, timeout=SCHEDULER_TIMEOUT_S, set_as_default=False)
    except Exception as err:  # noqa: BLE001 - whatever answered there, it is no scheduler we can use
        raise UsageError(f"cannot use the Dask scheduler at {scheduler}: {_reason(err)} "
                         "(is a Dask scheduler listening there?)") from None


def _reason(err: BaseException) -> str:
    if isinstance(err, MemoryError):  # a stranger's bytes read as a Dask frame length
        return "it does not speak Dask's protocol"
    if isinstance(err, TimeoutError):
        return f"no Dask handshake within {SCHEDULER_TIMEOUT_S} s"
    return str(err) or type(err).__name__


def _quiet_dask() -> None:
    """On an interrupt: the client's event loop logs each gather it abandons ('Task exception was
    never retrieved', with a traceback); the caller's one line is the whole story."""
    for name in ("asyncio", "distributed", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
