"""Gated DeltaNet memory banks: addressable rows in GDN head states.

A head with A_log = -200 never decays (exp(A_log) underflows to 0), beta = sigmoid(32)
is exactly 1, and the conv is the identity on the current token, so the delta rule
with a one-hot key k overwrites row k of the state with the value: S[k] = v.

Keys and queries are compiled from a binary address field: row r's pre-activation is
M * (2 matches(addr, r) - 2 bits + 1) (+ write-enable), which is M on the addressed row and
<= -M elsewhere; silu and l2norm turn that into an exact one-hot (or all zeros: no write).

Row encoding: each head holds a slice of `per = d_v / 4` bits as dual rails (b, 1-b),
plus always-on pad rails so every written row has exactly `per` rails of value RAIL.
The gated norm then divides a read by a known RMS: an on rail reads as exactly
sqrt(d_v / per) = 2, times silu(z) = 32, times out_proj 1/64 -> 1.0 in the data field.
An unwritten row reads as 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit.layer import BETA, RAIL, Z_GATE, Circuit, M
from qwengpu.circuit.residual import INT_SCALE, NORM_OUT, Field

READ = 1 / NORM_OUT     # weights on data dims undo the decoder norm's exact 2**-8


@dataclass
class Bank:
    name: str
    layer: int
    rows: int
    width: int
    per: int                         # data bits per head
    replicas: list[list[int]]        # heads of each replica (one per slice)
    base: int = 0                    # the word address of row 0 (host readback)
    stride: int = 1                  # ... and between rows
    addr_width: int = 0              # > 0: addressed by that many bits of a word address (base + stride * row),
                                     # which no other bank's row shares; 0: by the row's bits alone

    @property
    def addr_bits(self) -> int:
        return self.addr_width or max(1, (self.rows - 1).bit_length())

    def address(self, row: int) -> int:
        """The value of the address bits that select `row`."""
        return self.base + self.stride * row if self.addr_width else row

    def word(self, row: int) -> int:
        """The word address `row` holds."""
        return self.base + self.stride * row

    def slices(self):
        for s, lo in enumerate(range(0, self.width, self.per)):
            yield s, lo, min(self.width, lo + self.per)


def read_rows(state: np.ndarray, bank) -> dict[int, int]:
    """Host readback of a bank from a layer's recurrent state [heads, d_k, d_v]: written rows only."""
    slices = list(zip(bank.slices(), bank.replicas[0]))
    rails = state[[h for _, h in slices]][:, :bank.rows]       # [slice, row, d_v]
    written = (np.abs(rails) > RAIL / 2).any(axis=(0, 2))
    words = np.zeros(bank.rows, dtype=object)
    for (s, lo, hi), _ in slices:
        bits = rails[s, :, 0:2 * (hi - lo):2] > RAIL / 2        # [row, bit]: one rail pair a bit
        words += (bits.astype(np.uint64) << np.arange(lo, hi, dtype=np.uint64)).sum(axis=1).astype(object)
    return {int(r): int(words[r]) for r in np.flatnonzero(written)}


def declare_bank(c: Circuit, layer: int, name: str, rows: int, width: int, replicas: int = 1, *, base: int = 0,
                 stride: int = 1, addr_width: int = 0) -> Bank:
    """A bank of `rows` words of `width` bits in layer `layer`; each replica serves one read per token.
    Row r holds word base + stride * r; with addr_width, the bank is addressed by the whole word
    address, so many banks can share one address field and only the one holding it answers."""
    host = c.host
    if rows > host.key_dim:
        raise CircuitError(f"bank {name}: {rows} rows; a GDN head has {host.key_dim}")
    per = host.value_dim // 4
    heads_per_replica = -(-width // per)
    lay = c.layer(layer)
    heads = [lay.take_heads(heads_per_replica, f"bank {name}") for _ in range(replicas)]
    bank = Bank(name, layer, rows, width, per, heads, base, stride, addr_width)
    anchor = c.layout.anchor[0]
    A = c.layout.normed_anchor
    for replica in heads:
        for (s, lo, hi), h in zip(bank.slices(), replica):
            lay.b[h, anchor] = BETA / A
            for i in range(hi - lo):                       # complement rails: RAIL * (1 - b)
                lay.v_row(h, 2 * i + 1)[anchor] = RAIL / A
            for j in range(bank.per - (hi - lo)):          # pad rails: always RAIL
                lay.v_row(h, 2 * (hi - lo) + j)[anchor] = RAIL / A
    return bank


Bits = Sequence[Sequence[int]]      # per address/data bit: the dims whose sum is that bit


def bits(*fields: Field | Sequence[int]) -> list[list[int]]:
    """Bit i is the sum of bit i of every source: a bank address, datum or enable may come from
    several mutually exclusive sources (at most one nonzero on any token), and the key and
    value projections are linear, so the sum of exclusive 0/1 sources is again a 0/1 bit."""
    width = max(len(f) for f in fields)
    return [[f[i] for f in fields if i < len(f)] for i in range(width)]


def _address_rows(c: Circuit, row_of, bank: Bank, addr: Bits, enable: Sequence[int] | None) -> None:
    """Fill rows 0..rows-1 of a key or query with the pre-activation
    M * (2 * matches(addr, r) [+ 2 * enable - 2] - 2 * bits + 1): +M on the addressed row, <= -M
    on every other row. Never 0: l2norm would blow a near-zero key (fp32 rounding of 0) up
    to a unit vector and write garbage, so the margin is a full M either way."""
    if len(addr) != bank.addr_bits:
        raise CircuitError(f"bank {bank.name}: address has {len(addr)} bits, needs {bank.addr_bits}")
    anchor, A = c.layout.anchor[0], c.layout.normed_anchor
    for r in range(bank.rows):
        row, value = row_of(r), bank.address(r)
        zeros = 0
        for j, dims in enumerate(addr):
            sign = 1 if value >> j & 1 else -1
            zeros += sign < 0
            for d in dims:
                row[d] += sign * 2 * M * READ
        bias = 2 * zeros - 2 * len(addr) + 1
        if enable is not None:
            for d in enable:
                row[d] += 2 * M * READ
            bias -= 2
        row[anchor] += M * bias / A


def write_bits(c: Circuit, bank: Bank, addr: Bits, data: Bits, enable: Sequence[int] | None = None) -> None:
    """bank[addr] = data (every replica) on tokens whose enable sum is 1 (every GPU token if None)."""
    lay = c.layer(bank.layer)
    if len(data) > bank.width:
        raise CircuitError(f"bank {bank.name}: {len(data)} data bits for a {bank.width}-bit bank")
    for replica in bank.replicas:
        for (s, lo, hi), h in zip(bank.slices(), replica):
            _address_rows(c, lambda r: lay.k_row(h, r), bank, addr, enable)
            for i in range(lo, min(hi, len(data))):
                for d in data[i]:
                    lay.v_row(h, 2 * (i - lo))[d] += RAIL * READ
                    lay.v_row(h, 2 * (i - lo) + 1)[d] -= RAIL * READ


def read_into(c: Circuit, bank: Bank, addr: Bits, out: Sequence[int], replica: int = 0,
              enable: Sequence[int] | None = None) -> None:
    """Adds bank[addr] to residual dims `out` (0 if the enable sum is 0 or the row is unwritten).
    A write and a read of the same address in one token read the new value."""
    lay = c.layer(bank.layer)
    anchor, A = c.layout.anchor[0], c.layout.normed_anchor
    dv = c.host.value_dim
    scale = 1.0 / (2.0 * Z_GATE)                  # on rail: 2 (norm) * 32 (silu z) -> 1
    for (s, lo, hi), h in zip(bank.slices(), bank.replicas[replica]):
        _address_rows(c, lambda r: lay.q_row(h, r), bank, addr, None)
        for j in range(dv):
            if enable is None:
                lay.z[h * dv + j, anchor] = Z_GATE / A
            else:
                for d in enable:
                    lay.z[h * dv + j, d] = Z_GATE * READ
        for i in range(lo, min(hi, len(out))):
            lay.out[out[i], h * dv + 2 * (i - lo)] += scale


def write(c: Circuit, bank: Bank, addr: Field, data: Field, enable: Field | None = None) -> None:
    """bank[addr] = data on every token whose enable bit is 1 (every GPU token if None)."""
    if data.width != bank.width:
        raise CircuitError(f"bank {bank.name}: data field has {data.width} bits, needs {bank.width}")
    _check_addr(bank, addr)
    write_bits(c, bank, bits(addr), bits(data), None if enable is None else [enable[0]])


def read(c: Circuit, bank: Bank, addr: Field, replica: int = 0, enable: Field | None = None,
         name: str = "") -> Field:
    """A field (born in the bank's layer) holding bank[addr] (0 if never written, or if
    enable is 0)."""
    _check_addr(bank, addr)
    out = c.field(name or f"{bank.name}.read{replica}", bank.width, bank.layer)
    read_into(c, bank, bits(addr), out.dims, replica, None if enable is None else [enable[0]])
    return out


def _check_addr(bank: Bank, addr: Field) -> None:
    if addr.width != bank.addr_bits:
        raise CircuitError(f"bank {bank.name}: address field has {addr.width} bits, needs {bank.addr_bits}")


def register(c: Circuit, layer: int, name: str, width: int) -> Bank:
    """A one-row bank: a register that keeps its value across tokens."""
    return declare_bank(c, layer, name, 1, width)


# ---- a counter: set by one token, stepped by later ones --------------------------------------------------
COUNTER_TOP = 512.0           # the stored value at count 0; each step halves it (>= 32 for 5 counts: silu exact)
COUNTER_PAD = 2.0 ** 24       # pad rails: a row's squared norm is pads * PAD**2 whatever the count, which is lost
                              # in its rounding (COUNTER_TOP**2 < half an ulp of PAD**2), so reads are exact
MAX_COUNT = 5


def counter(c: Circuit, layer: int, name: str, start: Sequence[int], step: Sequence[int]) -> Field:
    """A count in one GDN head of `layer`, and its reading there (an int field): 2**(counts - 1 -
    count), counts = len(start), 0 before the first start; count_is decodes it.

    A token whose `start` dims hold a one-hot s sets the count to s; a token whose `step` dims sum
    to 1 adds one to it (the caller keeps the count below `counts`); every token reads it after
    its own update. A count cannot be an increment of a stored value (a layer's write cannot
    depend on its own read), so the row holds COUNTER_TOP * 2**-count: the start writes it with
    beta = 1, a step rewrites the row with beta = sigmoid(0) = 1/2 towards 0, exactly halving it."""
    counts = len(start)
    if not 1 <= counts <= MAX_COUNT:
        raise CircuitError(f"counter {name}: {counts} counts; at most {MAX_COUNT}")
    lay = c.layer(layer)
    h = lay.take_heads(1, f"counter {name}")[0]
    anchor, A, dv = c.layout.anchor[0], c.layout.normed_anchor, c.host.value_dim
    pads = dv // 4                                     # the norm of the row: sqrt(pads / dv) * PAD = PAD / 2
    key = lay.k_row(h, 0)
    key[anchor] -= M / A                               # -M: no write, +M on a start or step token
    for d in (*start, *step):
        key[d] += 2 * M * READ
        for j in range(pads):
            lay.v_row(h, 1 + j)[d] += COUNTER_PAD * READ
    for s, d in enumerate(start):
        lay.b[h, d] += BETA * READ                     # a step's beta: sigmoid(0) = 1/2
        lay.v_row(h, 0)[d] += COUNTER_TOP * 2.0 ** -s * READ
    lay.q_row(h, 0)[anchor] = M / A
    lay.z[h * dv:(h + 1) * dv, anchor] = Z_GATE / A
    unit = COUNTER_TOP * 2.0 ** (1 - counts)           # the stored value at the last count reads as 1
    reading = c.field(f"{name}.reading", 1, layer, kind="int", vmax=1 << counts - 1)
    lay.out[reading[0], h * dv] += INT_SCALE * COUNTER_PAD / (2 * Z_GATE * unit)
    return reading


def count_is(c: Circuit, at: int, reading: Field, count: int, out: dict[int, float],
             when: dict[int, int] | None = None, need: int = 0) -> None:
    """out += [the counter's count is `count`] (from its reading), gated on sum(when) == need
    (0/1 terms) when given: the reading is at least 2**(counts - 1 - count), not twice that."""
    big = reading.vmax + 1                             # a gate term outweighs any reading
    gate = {d: big * k for d, k in (when or {}).items()}
    for t, sign in ((reading.vmax >> count, 1), (reading.vmax >> count - 1 if count else 0, -1)):
        if t:
            G.step(c, at, {reading[0]: 1, **gate}, t + big * need, {d: sign * k for d, k in out.items()})
