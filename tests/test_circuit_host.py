"""Host spec, circuit width and the residual allocator."""
from pathlib import Path

import pytest

from qwengpu.circuit import CircuitError
from qwengpu.circuit.host import QWEN35_2B, TINY, HostSpec, anchor_split, circuit_width
from qwengpu.circuit.residual import ResidualLayout

CONFIG_2B = Path("/work/shared/hosts/qwen3_5_2b_text_config.json")


@pytest.mark.skipif(not CONFIG_2B.exists(), reason="2B text config not present")
def test_2b_config_reads_to_reference_host():
    assert HostSpec.from_config(CONFIG_2B) == QWEN35_2B


def test_nested_text_config_is_accepted():
    cfg = {"text_config": {"hidden_size": 8, "intermediate_size": 16, "linear_num_key_heads": 2,
                           "linear_num_value_heads": 2, "linear_key_head_dim": 4, "linear_value_head_dim": 4,
                           "linear_conv_kernel_dim": 4, "rms_norm_eps": 1e-6}}
    assert HostSpec.from_config(cfg).gdn_heads == 2


def test_grouped_gdn_heads_are_read_as_groups():
    """Qwen3.5-4B and 9B: 16 key heads, each serving 2 value heads; a value-head count that is
    not a multiple of the key heads is refused by name."""
    cfg = {"hidden_size": 8, "intermediate_size": 16, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
           "linear_key_head_dim": 4, "linear_value_head_dim": 4, "linear_conv_kernel_dim": 4, "rms_norm_eps": 1e-6}
    host = HostSpec.from_config(cfg)
    assert (host.gdn_heads, host.group, host.value_heads) == (16, 2, 32)
    with pytest.raises(ValueError, match="24 GDN value heads for 16 key heads"):
        HostSpec.from_config(dict(cfg, linear_num_value_heads=24))


def test_circuit_width_makes_anchor_exact():
    # 2048 + 1024 = 3 * 4**5: three anchor dims
    assert circuit_width(QWEN35_2B, 1000) == 1024
    assert anchor_split(3072) == (3, 5)
    assert anchor_split(4096) == (4, 5)          # 4**6 -> four anchors of 4**5
    assert anchor_split(5 * 64) == (5, 3)
    with pytest.raises(ValueError):
        anchor_split(17 * 64)


def test_circuit_width_limit_is_named():
    with pytest.raises(Exception, match="limit is 1024"):
        circuit_width(QWEN35_2B, 1100)


def test_anchor_mean_square_is_exact_power_of_four():
    lay = ResidualLayout(QWEN35_2B, 1024)
    total = lay.anchor.width * lay.anchor_value ** 2
    assert total / lay.total == 4.0 ** 16


def test_allocator_reuses_released_dims_only_after_the_clear():
    lay = ResidualLayout(TINY, circuit_width(TINY, 448))
    a = lay.alloc("a", 10, born=0)
    b = lay.alloc("b", 10, born=0)
    assert set(a.dims).isdisjoint(b.dims)
    lay.release(a, 2)
    c = lay.alloc("c", 10, born=2)               # same layer as the clear: not yet free
    assert set(c.dims).isdisjoint(a.dims)
    d = lay.alloc("d", 10, born=3)
    assert d.dims == a.dims
    text = lay.layout_map()
    assert "a " in text and "L0 -> L2" in text and "anchor" in text


def test_allocator_error_names_need_and_size():
    lay = ResidualLayout(TINY, circuit_width(TINY, 448))
    with pytest.raises(CircuitError, match="needs 1000 dims.*448 dims"):
        lay.alloc("big", 1000, born=0)


def test_anchor_is_never_released():
    lay = ResidualLayout(TINY, 448)
    with pytest.raises(CircuitError):
        lay.release(lay.anchor, 1)
