"""`pista profile script.py`: run a user's script as `__main__` inside a profiler session.

Steps are the script's own `pista.step()` calls, or the returns of one function named with
`--function NAME` (`NAME` at module level, or `Class.method`): the script's syntax tree gets
`NAME = _pista_step_on_return(NAME)` right after the definition, so nothing else changes and the
wrapper costs one Python call per step.
"""

from __future__ import annotations

import ast
import builtins
import functools
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pista.capture.session import Session
from pista.errors import UsageError

WRAPPER_NAME = "_pista_step_on_return"


@dataclass
class ScriptResult:
    session: Session
    exit_code: int  # the script's own: 0, its SystemExit code, or 1 if it raised
    error: str | None = None  # one line when the script raised


def compile_script(path: Path, function: str | None) -> Any:
    try:
        source = path.read_text()
    except OSError as err:
        raise UsageError(f"{path}: cannot read the script ({err.strerror or err})") from err
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as err:
        raise UsageError(f"{path}:{err.lineno}: the script does not parse: {err.msg}") from err
    if function:
        _wrap_definitions(tree, function, path)
    return compile(tree, str(path), "exec")


def _wrap_definitions(tree: ast.Module, function: str, path: Path) -> None:
    """Insert `NAME = wrapper(NAME)` after each definition of NAME (module level or Class.method)."""
    parts = function.split(".")
    if len(parts) > 2 or not all(p.isidentifier() for p in parts):
        raise UsageError(f"--function {function}: give NAME or Class.method")
    found = sum(_wrap_in(body, parts[-1]) for body in _bodies(tree, parts))
    if not found:
        raise UsageError(f"--function {function}: no such function defined in {path} "
                         "(module-level functions or Class.method only)")


def _bodies(tree: ast.Module, parts: list[str]) -> list[list[ast.stmt]]:
    """Where NAME is defined: the module's top level, or for Class.method the bodies of the classes so named."""
    if len(parts) == 1:
        return [tree.body]
    return [node.body for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == parts[0]]


def _wrap_in(body: list[ast.stmt], name: str) -> int:
    """Insert `NAME = wrapper(NAME)` after each definition of `name` in `body`; how many there were."""
    found = 0
    for position in range(len(body) - 1, -1, -1):
        node = body[position]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            wrap = ast.parse(f"{name} = {WRAPPER_NAME}({name})").body[0]
            ast.copy_location(wrap, node)
            ast.fix_missing_locations(wrap)
            body.insert(position + 1, wrap)
            found += 1
    return found


def step_on_return(session: Session) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: each outermost return of the function ends one step of the session."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        depth = 0

        @functools.wraps(fn)
        def stepped(*args: Any, **kwargs: Any) -> Any:
            nonlocal depth
            depth += 1
            try:
                value = fn(*args, **kwargs)
            finally:
                depth -= 1
            if depth == 0:
                session.step()
            return value

        return stepped

    return decorate


def run_script(path: str, argv: list[str], session: Session, function: str | None = None) -> ScriptResult:
    """Run the script under the session. KeyboardInterrupt propagates after the session saved."""
    script = Path(path)
    code = compile_script(script, function)
    # A real module under sys.modules["__main__"] while it runs (as runpy does), so pickling and
    # tools that look the main module up find the script's own.
    module = types.ModuleType("__main__")
    module.__dict__.update({"__file__": str(script), "__builtins__": builtins, WRAPPER_NAME: step_on_return(session)})
    module_globals = module.__dict__
    saved_argv, saved_path, saved_main = sys.argv, list(sys.path), sys.modules.get("__main__")
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.resolve().parent))
    sys.modules["__main__"] = module
    exit_code, error = 0, None
    try:
        with session:
            try:
                exec(code, module_globals)
            except SystemExit as stop:
                exit_code = _exit_code(stop.code)
            except Exception as err:  # the script's own failure: show its traceback, keep the trace
                traceback.print_exc()
                exit_code, error = 1, f"{script.name} raised {type(err).__name__}: {err}".splitlines()[0]
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
        sys.stdout.flush()
    return ScriptResult(session, exit_code, error)


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def no_trace_reason(session: Session, function: str | None) -> str:
    """Why a finished script left no trace, in one line."""
    if session.steps_done == 0:
        how = f"--function {function} was never called" if function else "it never called pista.step()"
        return (f"the script marked no steps ({how}); call pista.step() at the end of each step, "
                "or pass --function NAME")
    s = session.schedule
    return (f"the script ran {session.steps_done} step(s) but the schedule records from step "
            f"{s['wait'] + s['warmup'] + 1}; lower --wait/--warmup-steps or run more steps")
