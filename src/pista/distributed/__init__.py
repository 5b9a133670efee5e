"""A folder of per-rank traces from one distributed job: per-rank verdicts and findings, the
communication of every rank (exposed vs overlapped), and the cross-rank checks (stragglers).

    from pista.distributed import analyze_ranks
    result = analyze_ranks("traces/", engine="local")      # or engine="dask", scheduler="tcp://..."
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pista.errors import BadTrace
from pista.i18n import localize_finding, localize_notices, note_text

if TYPE_CHECKING:  # the rank and cross-rank modules load with a folder's analysis, not with every rule
    from pista.distributed.rank import RankSummary
    from pista.distributed.straggler import CrossRank
    from pista.finding import Finding, Record
    from pista.isolation import RuleFailed
    from pista.notices import WorldSize

__all__ = ["DistributedAnalysis", "analyze_ranks"]


@dataclass
class DistributedAnalysis:
    source: str
    ranks: list[RankSummary]
    cross: CrossRank
    notices: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        """The cross-rank findings and each rank's own, by what fixing them saves (highest first)."""
        return [f for _, f in self._ranked()]

    def _ranked(self) -> list[tuple[int | None, Finding]]:
        """(rank, finding) pairs, cross-rank ones first among equals, sorted by impact, steady costs
        before one-time ones (as in a single trace's top fix)."""
        pairs = [(f.record.rank, f) for f in self.cross.findings]
        pairs += [(int(r.rank), f) for r in self.ranks for f in r.findings]  # type: ignore[arg-type]
        return sorted(pairs, key=lambda p: (p[1].impact.once, -p[1].impact.share, -p[1].impact.us))

    @property
    def top_fix(self) -> tuple[int | None, Finding] | None:
        """The finding to start with, and its rank: the one that saves most, if it saves enough."""
        # read when called: a setting may change policy's value
        from pista.policy import TOP_FIX_MIN_SHARE

        return next(((rank, f) for rank, f in self._ranked() if f.impact.share >= TOP_FIX_MIN_SHARE), None)

    @property
    def rules_fired(self) -> list[str]:
        return sorted({f.rule for f in self.findings})

    def rank(self, n: int) -> RankSummary:
        return next(r for r in self.ranks if r.rank == n)

    def ranks_firing(self, rule_id: str) -> list[int]:
        # every rank is numbered by now (rank.assign_ranks), as straggler and render read them
        return [int(r.rank) for r in self.ranks if any(f.rule == rule_id for f in r.findings)] + [  # type: ignore[arg-type]
            int(f.record.rank) for f in self.cross.findings if f.rule == rule_id]

    def overlap(self) -> dict[str, Any]:
        """Communication totals over all ranks, and per rank."""
        comm = sum(r.comm.comm for r in self.ranks if r.comm)
        exposed = sum(r.comm.exposed for r in self.ranks if r.comm)
        return {"comm_ms": comm / 1e6, "exposed_ms": exposed / 1e6,
                "overlap_share": 1.0 - exposed / comm if comm else None,
                "ranks": {str(r.rank): (r.comm.to_dict() if r.comm else None) for r in self.ranks}}

    def to_dict(self) -> dict[str, Any]:
        top = self.top_fix
        return {
            "source": self.source,
            "world_size": len(self.ranks),
            "top_fix": None if top is None else {"rule": top[1].rule, "rank": top[0], "text": top[1].fix},
            "ranks": [r.to_dict() for r in self.ranks],
            "overlap": self.overlap(),
            "cross_rank": self.cross.to_dict(),
            "findings": [dict(f.to_dict(), rank=rank) for rank, f in self._ranked()],
            "notices": self.notices,
        }


def analyze_ranks(folder: str | os.PathLike[str], engine: str = "local", workers: int | None = None,
                  scheduler: str | None = None, rules: list[str] | None = None,
                  lang: str = "en") -> DistributedAnalysis:
    """Analyze every trace in `folder` as one rank of a job (engine: local | inline | dask), findings in `lang`."""
    # start-up: the engine (dask, workers) only when ranks are analysed
    from pista.distributed.engine import run_ranks
    from pista.distributed.rank import assign_ranks, trace_files

    typed: list[Record] = []  # the folder's and the pool's, then the ranks' own
    paths = [str(p) for p in trace_files(folder, typed)]
    summaries = run_ranks(paths, engine=engine, workers=workers, scheduler=scheduler, rules=rules, notices=typed)
    notices = [note_text(n, lang) for n in typed]
    ranks = _traces_only(summaries, notices)
    _refuse_bad(ranks)
    notices += [note_text(n, lang) for n in assign_ranks(ranks)]
    notices += _rank_notices(ranks, lang)
    notices += [note_text(n, lang) for n in _world_size_notice(ranks)]
    failures: list[RuleFailed] = []
    cross = _cross(ranks, rules, failures)
    notices += _failure_notices(failures, lang)
    if lang != "en":
        _localize(ranks, cross, lang)
    return DistributedAnalysis(str(folder), ranks, cross, notices)


def _rank_notices(ranks: list[RankSummary], lang: str) -> list[str]:
    """Each rank's notices in `lang`, each saying which rank it is of."""
    # start-up: the notices with the ranks' analysis
    from pista.notices import RankNotice

    return [note_text(RankNotice(int(r.rank), n), lang)  # type: ignore[arg-type]
            for r in ranks for n in _localized_notices(r, lang)]


def _traces_only(ranks: list[RankSummary], notices: list[str]) -> list[RankSummary]:
    """A JSON file that is no trace (run details, a memory timeline) beside the ranks is not a rank."""
    if any(not r.not_a_trace for r in ranks):
        notices += [f"skipped {r.error}" for r in ranks if r.not_a_trace]
        ranks = [r for r in ranks if not r.not_a_trace]
    return ranks


def _refuse_bad(ranks: list[RankSummary]) -> None:
    """One unreadable rank spoils the cross-rank picture: say which, like a single bad file."""
    bad = [r for r in ranks if r.error]
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise BadTrace(bad[0].path, f"{bad[0].error}{more}".replace(f"{bad[0].path}: ", "", 1))


def _world_size_notice(ranks: list[RankSummary]) -> list[WorldSize]:
    worlds = {r.world_size for r in ranks if r.world_size}
    if len(worlds) == 1 and (world := worlds.pop()) != len(ranks):
        from pista.notices import WorldSize  # start-up: the notices with the ranks' analysis

        return [WorldSize(world, len(ranks))]
    return []


def _cross(ranks: list[RankSummary], rules: list[str] | None, failures: list[RuleFailed]) -> CrossRank:
    """The cross-rank timings, with the straggler rule's findings where it is selected; what each rank waits
    for the straggler is folded into the straggler's finding."""
    # start-up: straggler loads the analysis (155 modules): only when ranks are compared
    from pista.distributed.straggler import cross_rank, fold_waits

    if rules is not None and "straggler" not in rules:
        return _no_cross(ranks)
    cross = cross_rank(ranks, failures)
    fold_waits(ranks, cross)
    return cross


def _localized_notices(r: RankSummary, lang: str) -> list[str]:
    """A rank's notices, those of the rules that failed on it in `lang` (in the rank's JSON too)."""
    if lang != "en":
        r.notices = localize_notices(r, lang)
    return r.notices


def _localize(ranks: list[RankSummary], cross: CrossRank, lang: str) -> None:
    """Each rank's findings and the cross-rank ones in `lang`."""
    for r in ranks:
        r.findings = [localize_finding(f, lang) for f in r.findings]
    cross.findings = [localize_finding(f, lang) for f in cross.findings]


def _failure_notices(failures: list[RuleFailed], lang: str) -> list[str]:
    return [note_text(f, lang) for f in failures]


def _no_cross(ranks: list[RankSummary]) -> CrossRank:
    # start-up: straggler loads the analysis (155 modules): only when ranks are compared
    from pista.distributed.straggler import cross_rank

    result = cross_rank(ranks, [])  # the rule is not selected: a bug of its is no matter here
    result.findings, result.waits = [], {}
    return result
