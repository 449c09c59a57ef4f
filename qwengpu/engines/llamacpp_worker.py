"""llama.cpp worker: one GGUF model loaded, launches decoded greedily over JSON lines.

Runs in the llama.cpp venv (.venv-llamacpp, scripts/install_llamacpp.sh) with the standard
library and llama_cpp (llama-cpp-python's low-level ctypes API) only; qwengpu.engines.llamacpp
starts it as a subprocess:

    python llamacpp_worker.py MODEL.gguf [--threads N] [--n-ctx N] [--n-batch N] [--verbose]

Protocol: one JSON object per line. On start, after loading the model, the worker writes
{"ready": true, "n_vocab": V, "load_seconds": s} (or {"ready": false, "error": ...} and exits).
Then per request line {"id": k, "prompt": [ids], "allowed": [first, end], "stop_ids": [ids],
"max_tokens": N, "stream": bool} it clears the model's memory (the recurrent state and the
attention cache: every prompt starts from a clean state), decodes the prompt in batches of
n_batch, then generates: each token is the argmax of the logits over [first, end) (the lowest
id on a tie, as torch.argmax), fed back, until a stop id (kept) or max_tokens. With "stream"
each generated id is sent as {"id": k, "token": t} as it comes. The answer is
{"id": k, "ids": [...], "stopped": bool, "prefill_seconds": s, "decode_seconds": s} or
{"id": k, "error": "..."}. {"op": "quit"} or the end of stdin ends the worker.

The context holds n_ctx positions; a request that needs more (prompt + max_tokens) gets a new
context of that size, rounded up to a multiple of 4096 (only the full-attention layers keep a
cache per position, so a large context costs little memory).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time

import llama_cpp as L


def _emit(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _api(*names):
    """The first of `names` that this llama_cpp version has (the API renamed some calls)."""
    for n in names:
        fn = getattr(L, n, None)
        if fn is not None:
            return fn
    raise RuntimeError(f"llama_cpp {getattr(L, '__version__', '?')} has none of {', '.join(names)}")


class Worker:
    def __init__(self, path: str, threads: int, n_ctx: int, n_batch: int, verbose: bool):
        self.threads, self.n_batch = threads, n_batch
        if not verbose:
            callback = getattr(L, "llama_log_callback", None) or L.ggml_log_callback
            self._quiet = callback(lambda level, text, data: None)    # keep a reference
            L.llama_log_set(self._quiet, ctypes.c_void_p(0))
        L.llama_backend_init()
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = 0
        self.model = _api("llama_model_load_from_file", "llama_load_model_from_file")(path.encode(), mp)
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {path} (run with --verbose for its log)")
        vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = int(_api("llama_vocab_n_tokens", "llama_n_vocab")(vocab))
        self.n_ctx_train = int(_api("llama_model_n_ctx_train", "llama_n_ctx_train")(self.model))
        self.ctx, self.n_ctx, self.batch = None, 0, None
        self._context(n_ctx)

    def _context(self, n_ctx: int) -> None:
        if self.ctx is not None:
            L.llama_free(self.ctx)
            self.ctx = None
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = self.n_batch
        cp.n_ubatch = self.n_batch
        cp.n_seq_max = 1
        cp.n_threads = self.threads
        cp.n_threads_batch = self.threads
        if hasattr(cp, "no_perf"):
            cp.no_perf = True
        self.ctx = _api("llama_init_from_model", "llama_new_context_with_model")(self.model, cp)
        if not self.ctx:
            raise RuntimeError(f"llama.cpp could not create a context of {n_ctx} positions")
        self.n_ctx = int(L.llama_n_ctx(self.ctx))
        if self.batch is None:
            self.batch = L.llama_batch_init(self.n_batch, 0, 1)

    def _clear(self) -> None:
        if hasattr(L, "llama_get_memory") and hasattr(L, "llama_memory_clear"):
            L.llama_memory_clear(L.llama_get_memory(self.ctx), True)
        else:
            _api("llama_kv_self_clear", "llama_kv_cache_clear")(self.ctx)

    def _decode(self, ids, pos: int) -> None:
        """Feed ids at positions pos.. (logits for the last one only)."""
        b = self.batch
        for start in range(0, len(ids), self.n_batch):
            chunk = ids[start:start + self.n_batch]
            for i, t in enumerate(chunk):
                b.token[i] = t
                b.pos[i] = pos + start + i
                b.n_seq_id[i] = 1
                b.seq_id[i][0] = 0
                b.logits[i] = 0
            b.logits[len(chunk) - 1] = 1 if start + len(chunk) == len(ids) else 0
            b.n_tokens = len(chunk)
            rc = L.llama_decode(self.ctx, b)
            if rc != 0:
                raise RuntimeError(f"llama_decode returned {rc} at position {pos + start}")

    def _argmax(self, first: int, end: int) -> int:
        row = L.llama_get_logits_ith(self.ctx, -1)
        vals = row[first:end]                       # a list of floats
        best = max(range(len(vals)), key=vals.__getitem__)      # the first maximum
        return first + best

    def generate(self, req: dict) -> dict:
        rid = req.get("id")
        prompt = [int(t) for t in req["prompt"]]
        first, end = (int(x) for x in req["allowed"])
        stop = {int(t) for t in req.get("stop_ids", [])}
        max_tokens = int(req["max_tokens"])
        if not prompt:
            raise ValueError("empty prompt")
        if not 0 <= first < end <= self.n_vocab:
            raise ValueError(f"allowed range [{first}, {end}) is outside the vocabulary of {self.n_vocab}")
        bad = [t for t in prompt if not 0 <= t < self.n_vocab]
        if bad:
            raise ValueError(f"prompt id {bad[0]} is outside the vocabulary of {self.n_vocab}")
        need = len(prompt) + max_tokens
        if need > self.n_ctx:
            self._context(min(-(-need // 4096) * 4096, max(self.n_ctx_train, need)))
        self._clear()
        start = time.perf_counter()
        self._decode(prompt, 0)
        prefill = time.perf_counter() - start
        out: list[int] = []
        stopped = False
        while len(out) < max_tokens:
            t = self._argmax(first, end)
            out.append(t)
            if req.get("stream"):
                _emit({"id": rid, "token": t})
            if t in stop:
                stopped = True
                break
            if len(out) < max_tokens:
                self._decode([t], len(prompt) + len(out) - 1)
        return {"id": rid, "ids": out, "stopped": stopped, "prefill_seconds": prefill,
                "decode_seconds": time.perf_counter() - start - prefill, "n_ctx": self.n_ctx}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="llama.cpp worker for qwengpu (JSON lines on stdin/stdout)")
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--n-ctx", type=int, default=65536)
    ap.add_argument("--n-batch", type=int, default=512)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    try:
        worker = Worker(args.model, args.threads, args.n_ctx, args.n_batch, args.verbose)
    except Exception as e:
        _emit({"ready": False, "error": f"{type(e).__name__}: {e}"})
        return 1
    _emit({"ready": True, "n_vocab": worker.n_vocab, "n_ctx": worker.n_ctx, "threads": args.threads,
           "load_seconds": time.perf_counter() - start, "llama_cpp": getattr(L, "__version__", "?")})
    for line in sys.stdin:
        if not line.strip():
            continue
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            if req.get("op") == "quit":
                break
            _emit(worker.generate(req))
        except Exception as e:
            _emit({"id": rid, "error": f"{type(e).__name__}: {e}"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
