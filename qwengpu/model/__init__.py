"""Host checkpoints: the stand-in base, reading real Qwen3.5 checkpoints, the merged-checkpoint
build (circuit layers in front of the base) and the text-drift eval.

hosts.py      published host configs (packaged JSON) and the expected tensor shapes of a config
standin.py    a deterministic random-weight Qwen3.5 text model with the 2B's layer shapes
checkpoint.py validation and streaming reads of a base checkpoint (multimodal or text-only layout)
merge.py      build(): the merged Qwen3_5ForCausalLM checkpoint; default_merged_model(): the stand-in's
tokenizer.py  the real Qwen3.5 tokenizer as HF files, extended with GPU tokens
kl.py         eval_kl(): KL(base || merged) on a built-in multilingual text set
"""
from qwengpu.errors import QwenGpuError


class CheckpointError(QwenGpuError):
    """A base checkpoint that is missing, not Qwen3.5, or has tensors of the wrong shape;
    or an output directory that would be overwritten without --force."""
