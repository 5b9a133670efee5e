"""The shapes and dtypes torch records in an op's args (`Input Dims`, `Input type`, `Sequence
number`, `Concrete Inputs`), read once per trace and event for every reader: the kernel FLOPs and
bytes (pista.efficiency) and the rules that look at shapes read many of the same ops.

Each field is kept as its JSON text and decoded once per distinct text: a training trace repeats the
same few hundred shapes every step, so what is computed from a shape (FLOPs, bytes, a weight test)
can be memoised on that text too. A field decodes to what a msgspec `Any` field of the same name
decodes to (None where absent), and an event whose args are missing or not an object gives None,
as `Trace.decode_args` gives it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import msgspec

from pista.trace.facts import Facts, per_facts

NULL = msgspec.Raw(b"null")  # an absent field reads as JSON null: None, as an `Any` field's default


class _Fields(msgspec.Struct, gc=False):
    dims: msgspec.Raw = msgspec.field(name="Input Dims", default=NULL)
    types: msgspec.Raw = msgspec.field(name="Input type", default=NULL)
    seq: msgspec.Raw = msgspec.field(name="Sequence number", default=NULL)
    concrete: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=NULL)


class OpArgs:
    """One op's recorded fields: `*_text` the JSON text (hashable, for memos), the plain attributes
    the decoded values (one object per distinct text, shared between events: read-only)."""

    __slots__ = ("_values", "concrete_text", "dims_text", "seq_text", "types_text")

    def __init__(self, fields: _Fields, values: dict[bytes, Any]) -> None:
        # copies: the raw slices point into the read buffers, which are let go
        self.dims_text = bytes(fields.dims)
        self.types_text = bytes(fields.types)
        self.seq_text = bytes(fields.seq)
        self.concrete_text = bytes(fields.concrete)
        self._values = values

    def _value(self, text: bytes) -> Any:
        values = self._values
        if text not in values:
            values[text] = msgspec.json.decode(text)
        return values[text]

    @property
    def dims(self) -> Any:
        return self._value(self.dims_text)

    @property
    def types(self) -> Any:
        return self._value(self.types_text)

    @property
    def seq(self) -> Any:
        return self._value(self.seq_text)

    @property
    def concrete(self) -> Any:
        return self._value(self.concrete_text)


class _Store:
    def __init__(self) -> None:
        self.by_event: dict[int, OpArgs | None] = {}
        self.values: dict[bytes, Any] = {}  # JSON text -> its value, decoded once


@per_facts
def _store(facts: Facts) -> _Store:
    return _Store()


def op_args(facts: Facts, indices: Sequence[int]) -> list[OpArgs | None]:
    """The recorded fields of these events (Python ints: `array.tolist()`; None where an event has
    no args object); each event's args are read from the trace once, whoever asks first."""
    store = _store(facts)
    by_event, values = store.by_event, store.values
    missing = sorted(set(itertools.filterfalse(by_event.__contains__, indices)))
    if missing:
        decoded = facts.trace.decode_args(missing, _Fields)
        by_event.update(zip(missing, [None if f is None else OpArgs(f, values) for f in decoded], strict=True))
    return list(map(by_event.__getitem__, indices))
