"""GDN banks with composite addresses, data and enables (on top of circuit.memory).

circuit.memory reads an address from one bit field and an enable from one dim. The machine
often has several mutually exclusive sources for the same thing (a store address comes from
the store queue on ST passes and from the latch on PUT passes; at most one is nonzero), so
here every address bit, data bit and enable is a list of dims that are summed: the key and
value projections are linear, so a sum of exclusive 0/1 sources is again a 0/1 bit.
"""
from __future__ import annotations

from typing import Sequence

from qwengpu.circuit import CircuitError
from qwengpu.circuit.layer import M, RAIL, Z_GATE, Circuit
from qwengpu.circuit.memory import READ, Bank, declare_bank
from qwengpu.circuit.residual import Field

Bits = Sequence[Sequence[int]]      # per bit: the dims whose sum is that bit


def bits(*fields: Field | Sequence[int]) -> list[list[int]]:
    """Bit i of the result is the sum of bit i of every source (sources must be exclusive)."""
    width = max(len(f) for f in fields)
    return [[f[i] for f in fields if i < len(f)] for i in range(width)]


def _address_rows(c: Circuit, row_of, bank: Bank, addr: Bits, enable: Sequence[int] | None) -> None:
    """+M on the addressed row (and enable on), <= -M on every other row (never 0)."""
    if len(addr) != bank.addr_bits:
        raise CircuitError(f"bank {bank.name}: address has {len(addr)} bits, needs {bank.addr_bits}")
    anchor, A = c.layout.anchor[0], c.layout.normed_anchor
    for r in range(bank.rows):
        row = row_of(r)
        zeros = 0
        for j, dims in enumerate(addr):
            sign = 1 if r >> j & 1 else -1
            zeros += sign < 0
            for d in dims:
                row[d] += sign * 2 * M * READ
        bias = 2 * zeros - 2 * len(addr) + 1
        if enable is not None:
            for d in enable:
                row[d] += 2 * M * READ
            bias -= 2
        row[anchor] += M * bias / A


def write(c: Circuit, bank: Bank, addr: Bits, data: Bits, enable: Sequence[int] | None = None) -> None:
    """bank[addr] = data (all replicas) on tokens whose enable sum is 1."""
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


def read(c: Circuit, bank: Bank, addr: Bits, out: Sequence[int], replica: int = 0,
         enable: Sequence[int] | None = None) -> None:
    """Adds bank[addr] to residual dims `out` (0 when the enable sum is 0 or the row is unwritten)."""
    lay = c.layer(bank.layer)
    anchor, A = c.layout.anchor[0], c.layout.normed_anchor
    dv = c.host.value_dim
    for (s, lo, hi), h in zip(bank.slices(), bank.replicas[replica]):
        _address_rows(c, lambda r: lay.q_row(h, r), bank, addr, None)
        for j in range(dv):
            if enable is None:
                lay.z[h * dv + j, anchor] = Z_GATE / A
            else:
                for d in enable:
                    lay.z[h * dv + j, d] = Z_GATE * READ
        for i in range(lo, min(hi, len(out))):
            lay.out[out[i], h * dv + 2 * (i - lo)] += 1.0 / (2.0 * Z_GATE)


def register(c: Circuit, layer: int, name: str, width: int) -> Bank:
    """A one-row bank: a register that keeps its value across tokens."""
    return declare_bank(c, layer, name, 1, width)
