"""Residual allocator: named fields in the circuit's C dims, with lifetimes across layers.

A field is a run of dims that one-hot or bit encodes a named value (tracr style:
dim i of field "sum" is the direction "sum[i]"). A field is written by layer
`born` (or is an input when born == -1) and lives until it is released at layer
`died` (the layer whose MLP cleared it); its dims can then be reused by any field
born after `died`.

Encodings (see docs/circuit.md):
  anchor  t dims of value A = 2**(m + ANCHOR_LOG2), where n + C = t * 4**m: on GPU tokens
          mean(x**2) == 4**ANCHOR_LOG2, so large that the data's share is lost in fp32
          rounding: every decoder RMS norm (gain 2**GAIN_LOG2) multiplies circuit dims by
          exactly NORM_OUT = 2**(GAIN_LOG2 - ANCHOR_LOG2), whatever the data.
  bits    0/1 per dim, bit i = 2**i, least significant first.
  onehot  exactly one dim is 1.
  int     a non-negative integer < 256 in one dim, stored as value * 2**-8 (exact in bf16).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu.circuit import CircuitError, ResidualFullError
from qwengpu.circuit.host import HostSpec, anchor_split

INT_SCALE = 2.0 ** -8  # an int field holds value * 2**-8 (exact in bf16 for values < 256)
ANCHOR_LOG2 = 16      # mean square of a GPU token's residual is 4**16
NORM_OUT = 2.0 ** -8   # circuit dims after a decoder norm: x * 2**(GAIN_LOG2 - ANCHOR_LOG2)
GAIN_LOG2 = 8          # decoder-norm gain 2**8: (1 + w) with w = 255, exact in bf16
FOREVER = 1 << 30


@dataclass(eq=False)
class Field:
    name: str
    dims: tuple[int, ...]      # indices into the merged residual (n + offset)
    kind: str                  # anchor | bits | onehot | int
    born: int
    died: int = FOREVER
    vmax: int = 1              # largest value one dim holds (1 for bits/onehot)
    ends: dict[int, int] = field(default_factory=dict)      # dim -> layer: dims released before the rest

    @property
    def scale(self) -> float:
        """Residual value per unit: int fields are stored as value / 256, so that their squares
        barely move the decoder norms (see docs/circuit.md, "Integer fields")."""
        return INT_SCALE if self.kind == "int" else 1.0

    @property
    def width(self) -> int:
        return len(self.dims)

    def __getitem__(self, i):
        return self.dims[i]

    def __len__(self):
        return len(self.dims)

    def __repr__(self):
        return f"Field({self.name}, {self.kind}[{self.width}])"


class ResidualLayout:
    def __init__(self, host: HostSpec, width: int, slack: int = 0):
        self.host, self.width = host, width
        self.n = host.hidden
        self.total = host.hidden + width
        self.capacity = width + slack     # dims the allocator may hand out until pack() fits them into width
        t, m = anchor_split(self.total)
        self.anchor_value = 2.0 ** (m + ANCHOR_LOG2)
        self.normed_anchor = self.anchor_value * NORM_OUT     # the anchor after a decoder norm
        self.fields: list[Field] = []
        self._free_after = [-2] * self.capacity  # a dim is free for fields born after this layer
        self.dim_vmax: dict[int, int] = {}       # dim -> largest value of the field now holding it
        self.dim_scale: dict[int, float] = {}    # dim -> residual value per unit of that field
        self.holder: dict[int, Field] = {}       # dim -> the field allocated there last
        self.anchor = self.alloc("anchor", t, born=-1, kind="anchor")

    def alloc(self, name: str, width: int, born: int, kind: str = "bits", vmax: int = 1) -> Field:
        """The first `width` dims free for a field written by layer `born` (-1: an input). A field's
        dims need not be contiguous (gadgets address dims through the field), so the residual
        never fragments: its high water is the peak number of live dims."""
        picked = [i for i, free_after in enumerate(self._free_after) if free_after < born][:width]
        if len(picked) < width:
            live = sum(f == FOREVER for f in self._free_after)
            raise ResidualFullError(f"residual full: field {name!r} needs {width} dims at layer {born}; "
                               f"the circuit has {self.capacity} dims, {live} live")
        for j in picked:
            self._free_after[j] = FOREVER
            self.dim_vmax[self.n + j] = vmax
            self.dim_scale[self.n + j] = INT_SCALE if kind == "int" else 1.0
        field = Field(name, tuple(self.n + j for j in picked), kind, born, vmax=vmax)
        self.fields.append(field)
        self.holder.update((d, field) for d in field.dims)
        return field

    def release(self, field: Field, layer: int) -> None:
        """The field was cleared by layer `layer`; its dims are free for fields born later."""
        if field.kind == "anchor":
            raise CircuitError("the anchor is never released")
        field.died = layer
        for d in field.dims:
            self._free_after[d - self.n] = layer
            self.holder[d].ends[d] = layer      # a view's release frees these dims of its field only

    @property
    def columns(self) -> int:
        """Residual dims the layers' matrices address (n + capacity; n + width once packed)."""
        return self.n + self.capacity

    def pack(self) -> list[tuple[Field, tuple[int, ...]]]:
        """Moves every field born in a layer to the lowest dims free over its whole lifetime (interval
        colouring in birth order: optimal, so the high water becomes the peak number of live dims),
        within `width`; inputs and the anchor stay where they are. alloc() hands dims out in build
        order, not birth order: a unit built after another whose fields are born later finds the
        dims it could share taken. A field part of which a view's clear released (Field.ends) frees
        those dims from then. Returns (field, its old dims) for every field."""
        fixed = [f for f in self.fields if f.born < 0]
        free_after = [-2] * self.width
        for f in fixed:
            for d in f.dims:
                if d - self.n >= self.width:
                    raise ResidualFullError(f"input {f.name!r} lies past the circuit's {self.width} dims")
                free_after[d - self.n] = FOREVER
        moved = [(f, f.dims) for f in fixed]
        for f in sorted((f for f in self.fields if f.born >= 0), key=lambda f: (f.born, f.dims[0])):
            picked = [j for j, after in enumerate(free_after) if after < f.born][:f.width]
            if len(picked) < f.width:
                live = sum(g.width for g in self.live(f.born))
                raise ResidualFullError(f"residual full: {live} dims live at layer {f.born}; the circuit has {self.width}")
            for j, d in zip(picked, f.dims):
                free_after[j] = f.ends.get(d, f.died)
            moved.append((f, f.dims))
            f.ends = {self.n + j: f.ends[d] for j, d in zip(picked, f.dims) if d in f.ends}
            f.dims = tuple(self.n + j for j in picked)
        self.capacity = self.width
        self._free_after = free_after
        by_birth = sorted(self.fields, key=lambda f: f.born)      # each dim's last field wins
        self.holder = {d: f for f in by_birth for d in f.dims}
        self.dim_vmax = {d: f.vmax for f in by_birth for d in f.dims}
        self.dim_scale = {d: f.scale for f in by_birth for d in f.dims}
        return moved

    def live(self, layer: int) -> list[Field]:
        return [f for f in self.fields if f.born <= layer < f.died]

    def high_water(self) -> int:
        """Circuit dims ever used."""
        return max((d - self.n + 1 for f in self.fields for d in f.dims), default=0)

    def layout_map(self) -> str:
        """A printable map: one line per field, in dim order."""
        lines = [f"residual: n={self.n} text dims + C={self.width} circuit dims "
                 f"(anchor {self.anchor.width} x {self.anchor_value:g}), high water {self.high_water()}"]
        for f in sorted(self.fields, key=lambda f: (f.dims[0], f.born)):
            lo, hi = f.dims[0] - self.n, f.dims[-1] - self.n
            died = "end" if f.died == FOREVER else f"L{f.died}"
            born = "input" if f.born < 0 else f"L{f.born}"
            lines.append(f"  c{lo:>4}..c{hi:<4} {f.name:<24} {f.kind:<7} {born:>5} -> {died}")
        return "\n".join(lines)

