"""The shapes and dtypes torch records in an op's args (`Input Dims`, `Input type`, `Sequence
number`, `Concrete Inputs`), read once per trace and event for every reader: the kernel FLOPs and
bytes (pista.efficiency) and the rules that look at shapes read many of the same ops.

Dims, types and concrete inputs are kept as JSON text and decoded once per distinct text (the sequence
number, unique per op call, is read as its value): a training trace repeats the same few hundred
shapes every step, so what is computed from a shape (FLOPs, bytes, a weight test)
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
    concrete: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=NULL)
    # one number per op call, so nothing to memoise on its text: read as the value straight away
    seq: Any = msgspec.field(name="Sequence number", default=None)


class OpArgs(msgspec.Struct, gc=False):
    """One op's recorded fields: `*_text` the JSON text (hashable, for memos); `dims`, `types`,
    `concrete` the decoded values (one object per distinct text, shared between events: read-only);
    `seq` the sequence number's value. A Struct: built in C, thousands per rule."""

    dims_text: bytes
    types_text: bytes
    concrete_text: bytes
    seq: Any
    _values: dict[bytes, Any]  # the store's memo: JSON text -> its value

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
    def concrete(self) -> Any:
        return self._value(self.concrete_text)


class _Store:
    def __init__(self) -> None:
        self.by_event: dict[int, OpArgs | None] = {}
        self.values: dict[bytes, Any] = {}  # JSON text -> its value, decoded once
        self.texts: dict[bytes, bytes] = {}  # JSON text -> the one copy of it events share


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
        # one bytes object per distinct text (a trace repeats a few hundred), copied out of the read
        # buffer, which is let go: on big_gpt_eager_20steps 83 texts for 12,660 ops, 2.3 MB as copies
        texts = store.texts

        def text(raw: msgspec.Raw) -> bytes:
            copy = bytes(raw)
            return texts.setdefault(copy, copy)

        built = [None if f is None else OpArgs(text(f.dims), text(f.types), text(f.concrete), f.seq, values)
                 for f in decoded]
        by_event.update(zip(missing, built, strict=True))
    return list(map(by_event.__getitem__, indices))
