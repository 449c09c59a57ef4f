"""The host side of a launch on the model, as a CUDA driver is a GPU's: the prompt that loads a
launch and the stream the model must write (protocol), the copy-out's host side (copyout), what
a FAULT token means (faults), and the runtime that feeds the model and reads the results back
(runtime). It builds on the machine's contract (qwengpu.machine.tokens, encoding, words) and
never on its circuit. docs/protocol.md."""

# launches a batched fast path steps in lockstep: the C step splits a batch's rows over the cores,
# and a longer batch makes every step of the longest launch wait for more rows
# (docs/performance.md, "Batched fast path")
DEFAULT_BATCH = 8
