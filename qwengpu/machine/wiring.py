"""How the machine's units name one another's fields: views and packed-word parts of a field, and
the match / conjunction terms the units' neurons are made of."""
from __future__ import annotations

from qwengpu.circuit import gadgets as G
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.words import Word


def view(field: Field, lo: int, hi: int, name: str = "") -> Field:
    return Field(name or f"{field.name}[{lo}:{hi}]", field.dims[lo:hi], field.kind, field.born)


def part(field: Field, word: Word, name: str, i: int = 0) -> Field:
    """Copy i of field `name` of the packed word that `field` holds (words.py)."""
    bits = word.bits(name, i)
    return view(field, bits.start, bits.stop, f"{field.name}.{name}")


def match(bits: Field, value: int) -> tuple[dict[int, int], int]:
    """Terms and constant of sum_j (bit_j == value_j): equals len(bits) exactly on a match."""
    return G.equals(bits.dims, value)


def all_hold(terms: dict[int, int], const: int, need: int) -> tuple[dict[int, int], int]:
    """Terms and bias of a neuron relu(2 (sum + const - need) + 1) = [sum + const == need] for an
    integer sum <= need - const: 1 when it holds, and a pre-activation <= -1 (silu: exactly 0)
    when one bit misses. relu(sum + const - need + 1) would sit at 0 there, where silu passes
    the inputs' read noise on (halved): a gated unit then multiplies that by its constant."""
    return {d: 2 * k for d, k in terms.items()}, 2 * (const - need) + 1


def flag_if(c: Circuit, at: int, conds: list[tuple[dict[int, int], int, int]], out: dict[int, float]) -> None:
    """out += [every (terms, const, need) holds: sum(terms) + const == need] (each sum <= need)."""
    terms, const, need = {}, 0, 0
    for t, k, n in conds:
        terms = G.add_terms(terms, t)
        const, need = const + k, need + n
    G.relu(c, at, *all_hold(terms, const, need), out)
