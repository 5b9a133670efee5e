"""pista: the detective for PyTorch profiler traces.

Analysis (`pista.analyze`, `pista.load`) never imports torch; capture (`pista.profile`) does, lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pista._version import __version__

if TYPE_CHECKING:
    from pista.analysis import Analysis
    from pista.trace.model import Trace


def load(path: str) -> Trace:
    """Read a torch.profiler chrome trace (plain or .gz) into the columnar model."""
    # start-up: `import pista` loads this file and pista._version alone; the API imports on use
    from pista.trace.load import load_trace

    return load_trace(path)


def analyze(source: Any, rules: list[str] | None = None) -> Analysis:
    """Diagnose a trace: a path, a loaded Trace, or a finished `pista.profile` session; `rules`
    limits the catalogue to those ids."""
    # start-up: `import pista` loads this file and pista._version alone; the API imports on use
    from pista.analysis import analyze as _analyze

    return _analyze(source, rules=rules)


def profile(*args: Any, **kwargs: Any) -> Any:
    """A torch.profiler session with sane defaults; see pista.capture.session.profile."""
    # start-up: `import pista` loads this file and pista._version alone; the API imports on use
    from pista.capture.session import profile as _profile

    return _profile(*args, **kwargs)


def step() -> None:
    """Mark the end of one step in a script run under `pista profile`; a no-op otherwise."""
    # start-up: `import pista` loads this file and pista._version alone; the API imports on use
    from pista.capture.session import step as _step

    _step()


__all__ = ["__version__", "analyze", "load", "profile", "step"]
