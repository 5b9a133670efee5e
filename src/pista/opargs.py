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
from collections import defaultdict
from collections.abc import Iterable
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from pista.trace.facts import Facts, per_facts
from pista.trace.model import Indices

NULL = msgspec.Raw(b"null")  # an absent field reads as JSON null: None, as an `Any` field's default
_TEXTS = attrgetter("dims", "types", "concrete")


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


# Sequence numbers are kept as int64; these stand for an absent one and for one that is not an int
# (kept aside, in `_Store.odd_seqs`).
SEQ_NONE = -(2**63)
SEQ_ODD = SEQ_NONE + 1
NO_ARGS = -1  # the text id of an event without an args object


class _Store:
    """What was read, in arrays: an OpArgs object per op kept for the whole analysis took ~240 bytes
    each (2.5 M of them, 600 MiB, on a 5 GB copy of big_gpt_eager_20steps); these take 28."""

    def __init__(self, events: int) -> None:
        # per event of the trace, its row here (-1: not read): a request's rows by one gather, where
        # a sorted list of the events read, merged again on each request, grew quadratic (python-loop
        # asks 2,121 times for a few ops each: 6.7 s of a 1 GB trace's analysis)
        self.row_of = np.full(events, -1, dtype=np.int32 if events < 2**31 else np.int64)
        self.rows = 0  # rows in use; the arrays below hold room for more
        self.fields = np.empty((0, 3), dtype=np.int32)  # per row: its dims/types/concrete text ids
        self.seqs = np.empty(0, dtype=np.int64)
        self.odd_seqs: dict[int, Any] = {}  # event -> a sequence number that is not an int64
        self.texts: list[bytes] = []  # text id -> JSON text, one copy each
        self.text_ids: defaultdict[bytes, int] = defaultdict(itertools.count().__next__)
        self.values: dict[bytes, Any] = {}  # JSON text -> its value, decoded once
        self.launchers_read = False  # the ops that launched device work, all read in one go

    def known(self, idx: np.ndarray) -> np.ndarray:
        """Per event of idx: read already?"""
        return self.row_of[idx] >= 0

    def add(self, chunks: Iterable[tuple[Indices, list[_Fields | None]]]) -> None:
        """Keep what was read, chunk by chunk (each one's decoded fields let go once kept)."""
        parts = [self._rows(events, decoded) for events, decoded in chunks]
        if not parts:
            return
        events = np.concatenate([p[0] for p in parts])
        end = self.rows + events.size
        if end > self.seqs.size:
            self._grow(end)
        self.fields[self.rows : end] = np.concatenate([p[1] for p in parts])
        self.seqs[self.rows : end] = np.concatenate([p[2] for p in parts])
        self.row_of[events] = np.arange(self.rows, end)
        self.rows = end

    def _grow(self, end: int) -> None:
        """Room for `end` rows at least, twice as many as now where that is more: each row copied a few times at
        most."""
        room = max(end, 2 * self.seqs.size)
        self.fields = np.concatenate([self.fields[: self.rows], np.empty((room - self.rows, 3), np.int32)])
        self.seqs = np.concatenate([self.seqs[: self.rows], np.empty(room - self.rows, np.int64)])

    def _rows(self, events: Indices, decoded: list[_Fields | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The events' text ids (dims, types, concrete) and sequence numbers."""
        present = [f for f in decoded if f is not None]
        # a copy of each text (the read buffer they point into is let go), its id through one C lookup
        texts = list(map(bytes, itertools.chain.from_iterable(map(_TEXTS, present))))
        fields = np.fromiter(map(self.text_ids.__getitem__, texts), dtype=np.int32, count=len(texts))
        self.texts.extend(itertools.islice(self.text_ids, len(self.texts), None))  # ids in insertion order
        rows = np.full((len(events), 3), NO_ARGS, dtype=np.int32)
        rows[np.fromiter((f is not None for f in decoded), dtype=bool, count=len(decoded))] = fields.reshape(-1, 3)
        seqs = np.fromiter(map(self._seq, events, decoded), dtype=np.int64, count=len(events))
        return np.asarray(events, dtype=np.int64), rows, seqs

    def _seq(self, event: int, fields: _Fields | None) -> int:
        seq = None if fields is None else fields.seq
        if seq is None:
            return SEQ_NONE
        if type(seq) is int and SEQ_ODD < seq < 2**63:
            return seq
        self.odd_seqs[event] = seq
        return SEQ_ODD


@per_facts
def _store(facts: Facts) -> _Store:
    return _Store(len(facts.trace))


@per_facts
def _launching_ops(facts: Facts) -> np.ndarray:
    """The host ops that own device work (sorted event indices)."""
    return np.unique(facts.owner[facts.is_device_work & (facts.owner >= 0)]).astype(np.int64)


def _sorted_in(idx: np.ndarray, sorted_events: np.ndarray) -> np.ndarray:
    """Per event of idx: is it in sorted_events? (a bisection each, no sort)"""
    if not sorted_events.size:
        return np.zeros(idx.size, dtype=bool)
    return sorted_events[np.minimum(np.searchsorted(sorted_events, idx), sorted_events.size - 1)] == idx


def op_args(facts: Facts, indices: Indices) -> list[OpArgs | None]:
    """The recorded fields of these events (Python ints: `array.tolist()`; None where an event has
    no args object); each event's args are read from the trace once, whoever asks first.

    The ops that launched device work are what most readers ask for (FLOPs, bytes, variability,
    shapes), a few at a time: the first request for one reads them all, in one pass over the file
    (a streamed trace's args are read back from it: big_gpt_eager_20steps took five passes)."""
    store, idx, pos = _stored(facts, indices)
    texts, values, odd = store.texts, store.values, store.odd_seqs
    out: list[OpArgs | None] = []
    for event, (dims, types, concrete), seq in zip(idx.tolist(), store.fields[pos].tolist(),
                                                   store.seqs[pos].tolist(), strict=True):
        if dims == NO_ARGS:
            out.append(None)
        else:
            value = None if seq == SEQ_NONE else odd[event] if seq == SEQ_ODD else seq
            out.append(OpArgs(texts[dims], texts[types], texts[concrete], value, values))
    return out


def text_ids(facts: Facts, indices: Indices) -> tuple[np.ndarray, list[bytes]]:
    """What op_args reads, as arrays: per event its (dims, types, concrete) text ids (int32, NO_ARGS
    where it has no args object), and the texts by id. Equal ids are equal texts: for readers that
    only compare ops' records, with no object per op (kernel-variability, every kernel's op)."""
    store, _, pos = _stored(facts, indices)
    return store.fields[pos], store.texts


def sequence_numbers(facts: Facts, indices: Indices) -> np.ndarray:
    """Per event: its Sequence number as int64, SEQ_NONE where it has none (SEQ_ODD where it is not an
    int64): for readers that count the autograd nodes of many ops, with no object per op."""
    store, _, pos = _stored(facts, indices)
    return store.seqs[pos]


def _stored(facts: Facts, indices: Indices) -> tuple[_Store, np.ndarray, np.ndarray]:
    """The store, with these events read into it; the events, and their places in it."""
    store = _store(facts)
    idx = np.asarray(indices, dtype=np.int64)
    known = store.known(idx)
    if not known.all():
        missing = np.unique(idx[~known])
        if not store.launchers_read:
            launchers = _launching_ops(facts)
            if _sorted_in(missing, launchers).any():
                missing = np.union1d(missing, launchers[~store.known(launchers)])
                store.launchers_read = True
        store.add(facts.trace.args_chunks(missing.tolist(), _Fields))
    return store, idx, store.row_of[idx]


# A launching op's shape counts as new where its (name, Input Dims) is seen in one step only; the
# steps' shapes change where this share of their launching ops is new (gpu/kv_flash: 15%, a KV cache
# grown by aten::cat and the attention over it every token; every training fixture with shapes: 0).
CHANGING_SHAPES_SHARE = 0.05
# ... judged over this many steps at least: in fewer, a few shapes taken in turn look new in each step
# (gpu/recompile_limit: 3 steps on 3 shapes, all compiled before the window; gpu/kv_flash has 10).
CHANGING_SHAPES_MIN_STEPS = 5


@per_facts
def changing_shapes(facts: Facts) -> tuple[float, str, float]:
    """Whether the steps' ops run on new shapes step after step (recorded with record_shapes, over
    CHANGING_SHAPES_MIN_STEPS steps or more): the share of the steps' launching ops whose name and
    Input Dims occur in one step only, the op name with most of them, and its calls per step. A CUDA
    graph replays one set of shapes."""
    if len(facts.steps) < CHANGING_SHAPES_MIN_STEPS:
        return 0.0, "", 0.0
    ops = _launching_ops(facts)
    ops = ops[facts.event_step[ops] >= 0]
    if ops.size == 0:
        return 0.0, "", 0.0
    dims = text_ids(facts, ops.tolist())[0][:, 0].astype(np.int64)
    names = facts.trace.name[ops].astype(np.int64)
    key = names * (int(dims.max()) + 2) + dims + 1  # one int per (name, dims); NO_ARGS is -1
    steps = len(facts.steps)
    seen = np.unique(key * steps + facts.event_step[ops])  # each (name, dims) once per step it is in
    keys, in_steps = np.unique(seen // steps, return_counts=True)
    new = np.isin(key, keys[in_steps == 1])
    if not new.any():
        return 0.0, "", 0.0
    counts = np.bincount(names[new])
    top = int(np.argmax(counts))
    return float(new.mean()), facts.trace.names[top], float(counts[top] / len(facts.steps))
