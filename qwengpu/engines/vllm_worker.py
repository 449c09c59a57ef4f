"""The vLLM worker of qwengpu.engines.vllm: runs in .venv-vllm, imports only the standard library
and vllm (never qwengpu, whose environment it does not share), keeps one LLM loaded, and speaks
JSON lines on its standard input and output:

    started as:  python vllm_worker.py --model DIR [--max-batch N] [--max-model-len N] [--dtype bfloat16]
                 [--kv-cache-memory-bytes N] [--tensor-parallel-size N]
    it writes:   {"ready": true, "vllm": "0.32.0", "load_seconds": 61.2}      once the model is loaded
    request:     {"id": 1, "prompts": [[ids...], ...], "allowed": [first, end],
                  "stop_ids": [halt, fault], "max_tokens": 20000}
    answer:      {"id": 1, "outputs": [[ids...], ...], "seconds": 12.3}
            or   {"id": 1, "error": "ValueError: ..."}
    request:     {"id": 2, "quit": true}     (or end of input): the worker exits

Every prompt of one request goes to one LLM.generate call, so vLLM batches them (continuous
batching, at most --max-batch sequences at a time). Sampling is greedy (temperature 0) over the
allowed ids only; the stop id that ended a sequence is kept in its output.

Everything vLLM (and the C++ libraries under it) print goes to standard error: the protocol
has the process's original standard output to itself.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

# Run as a script, this file's folder (qwengpu/engines/) would come first on sys.path, and it
# holds qwengpu's own vllm.py: drop it so that `import vllm` finds the real vLLM.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]


def _protocol_stream():
    """A private copy of stdout for the protocol; fd 1 then points at stderr, so that nothing
    else written to stdout (logging, print, native code) can corrupt a JSON line."""
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(out_fd, "w", buffering=1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--max-batch", type=int, default=8, help="vLLM's max_num_seqs")
    ap.add_argument("--max-model-len", type=int, default=None,
                    help="prompt + generated tokens of one sequence (default: vLLM's, from the config)")
    ap.add_argument("--tensor-parallel-size", type=int, default=1)
    ap.add_argument("--kv-cache-memory-bytes", type=int, default=None,
                    help="vLLM's KV cache (and recurrent state) memory; default: vLLM's")
    ap.add_argument("--eager", action=argparse.BooleanOptionalAction, default=True,
                    help="enforce_eager (no torch.compile / CUDA graphs); default on")
    args = ap.parse_args(argv)
    out = _protocol_stream()

    def send(obj) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    start = time.perf_counter()
    try:
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt
        import vllm
        kwargs = dict(model=args.model, dtype=args.dtype, enforce_eager=args.eager, skip_tokenizer_init=True,
                      max_num_seqs=args.max_batch, tensor_parallel_size=args.tensor_parallel_size)
        if args.max_model_len:
            kwargs["max_model_len"] = args.max_model_len
        if args.kv_cache_memory_bytes:
            kwargs["kv_cache_memory_bytes"] = args.kv_cache_memory_bytes
        llm = LLM(**kwargs)
    except BaseException as e:  # noqa: BLE001 - reported to the parent, then exit
        traceback.print_exc()
        send({"ready": False, "error": f"{type(e).__name__}: {e}"})
        return 1
    send({"ready": True, "vllm": vllm.__version__, "load_seconds": round(time.perf_counter() - start, 3)})

    for line in sys.stdin:
        if not line.strip():
            continue
        req = {}
        try:
            req = json.loads(line)
            if req.get("quit"):
                send({"id": req.get("id"), "bye": True})
                return 0
            first, end = req["allowed"]
            params = SamplingParams(temperature=0.0, max_tokens=int(req["max_tokens"]), ignore_eos=True,
                                    stop_token_ids=[int(t) for t in req["stop_ids"]],
                                    allowed_token_ids=list(range(int(first), int(end))),
                                    detokenize=False)
            prompts = [TokensPrompt(prompt_token_ids=[int(t) for t in p]) for p in req["prompts"]]
            t0 = time.perf_counter()
            results = llm.generate(prompts, params, use_tqdm=False)
            outputs = [list(r.outputs[0].token_ids) for r in results]
            send({"id": req.get("id"), "outputs": outputs, "seconds": round(time.perf_counter() - t0, 4)})
        except Exception as e:  # noqa: BLE001 - one bad request must not kill the loaded model
            traceback.print_exc()
            send({"id": req.get("id") if isinstance(req, dict) else None, "error": f"{type(e).__name__}: {e}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
