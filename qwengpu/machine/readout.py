"""What the host needs of a built machine to run launches on a merged checkpoint: the GPU
vocabulary and where global memory lives in the recurrent state.

The merge records it in the checkpoint's config.json (the qwengpu block's "readout"), so a
process that loads a checkpoint never builds the 28-layer machine (tens of seconds) only to learn
these few numbers: the checkpoint says where its own memory is. Checkpoints written before the
record existed get it from a machine build (runtime.checkpoint_readout), with a warning saying so.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass

import numpy as np

from qwengpu import isa
from qwengpu.circuit.memory import Bank, read_rows
from qwengpu.errors import QwenGpuError
from qwengpu.machine.tokens import Vocab


def vocab_digest(vocab: Vocab) -> str:
    """sha256 of the GPU tokens' names in vocabulary order: the same digest means the same ids."""
    return hashlib.sha256("|".join(vocab.name(t) for t in vocab.tokens).encode()).hexdigest()


@dataclass
class Readout:
    vocab: Vocab
    global_banks: list[Bank]          # global memory's banks (each row's word: Bank.word)

    def to_json(self) -> dict:
        return {"vocab": vocab_digest(self.vocab), "global_banks": [asdict(b) for b in self.global_banks]}

    @classmethod
    def from_json(cls, block: dict, where: str = "the checkpoint", same_sources: bool = False) -> "Readout":
        """The readout a checkpoint recorded; a QwenGpuError when its GPU tokens are not this
        qwengpu's (a checkpoint of another machine version: its token ids mean other things).
        `same_sources`: the checkpoint was built from these very sources (the check is skipped)."""
        vocab = Vocab()
        if not same_sources and block.get("vocab") != vocab_digest(vocab):
            raise QwenGpuError(f"{where} was built with another machine version (its GPU tokens differ from "
                               "this qwengpu's); rebuild it with qgpu build")
        return cls(vocab, [Bank(**b) for b in block["global_banks"]])

    def read_global(self, cache, layer_offset: int = 0) -> np.ndarray:
        """Global memory (uint32[GLOBAL_WORDS]) from the recurrent states of a DynamicCache."""
        mem = np.zeros(isa.GLOBAL_WORDS, dtype=np.uint32)
        for bank in self.global_banks:
            state = cache.get_recurrent_state(layer_offset + bank.layer)[0].float().cpu().numpy()
            for row, word in read_rows(state, bank).items():
                mem[bank.word(row)] = word
        return mem


class ReadoutWarning(UserWarning):
    """A checkpoint without a recorded readout: loading it builds the machine."""
