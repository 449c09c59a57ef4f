"""The machine's readout: recorded in a merged checkpoint, read back without building the machine,
refused for a checkpoint of other GPU tokens; and the bank reader it uses, on a state built by hand."""
import numpy as np
import pytest

from qwengpu import api
from qwengpu.circuit.layer import RAIL
from qwengpu.circuit.memory import Bank, read_rows
from qwengpu.errors import QwenGpuError
from qwengpu.machine import build as B
from qwengpu.machine.readout import Readout


def test_rows_read_back_from_dual_rails():
    bank = Bank("b", layer=0, rows=4, width=8, per=4, replicas=[[0, 1]])   # two heads of 4 bits each
    state = np.zeros((2, 4, 8))
    for row, word in ((1, 0xA5), (3, 0x00)):
        for head in (0, 1):
            for i in range(4):
                bit = word >> (4 * head + i) & 1
                state[head, row, 2 * i], state[head, row, 2 * i + 1] = RAIL * bit, RAIL * (1 - bit)
    assert read_rows(state, bank) == {1: 0xA5, 3: 0x00}                    # rows 0 and 2 never written


def test_a_checkpoint_of_other_gpu_tokens_is_refused():
    block = {"vocab": "0" * 64, "global_banks": []}
    with pytest.raises(QwenGpuError, match="another machine version"):
        Readout.from_json(block, "ckpt")
    assert Readout.from_json(block, "ckpt", same_sources=True).global_banks == []


def test_the_standin_loads_and_runs_dot_without_building_the_machine(monkeypatch):
    from qwengpu.model.merge import default_merged_model
    path = default_merged_model()                  # may build the machine once, when the sources changed
    api._LOADED.clear()
    monkeypatch.setattr(B.Machine, "__init__", lambda *a, **k: pytest.fail("the machine was built"))
    dev = api.Device("model", model=path, dtype="float32", check="replay")
    fn = dev.compile(open("kernels/dot.cu").read(), "dot.cu").get_function("dot")
    out = np.zeros(1, dtype=np.int32)
    fn(grid=1, block=4, args=(np.array([1, 2, 3], dtype=np.int32), np.array([4, 5, 6], dtype=np.int32), out, 3))
    assert out[0] == 1 * 4 + 2 * 5 + 3 * 6
    api._LOADED.clear()
