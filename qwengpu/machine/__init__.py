"""The SIMT machine compiled into circuit layers: vocabulary (tokens), ROM encoding,
one module per unit (layers in plan.py), the assembly (build) and the launch runtime. docs/machine.md."""

# launches a batched fast path steps in lockstep: the C step splits a batch's rows over the cores,
# and a longer batch makes every step of the longest launch wait for more rows
# (docs/performance.md, "Batched fast path")
DEFAULT_BATCH = 8
