"""Other inference engines that run a launch prompt through the same merged checkpoint.

Each engine has one call, `generate(prompts, *, allowed, stop_ids, max_tokens)`: every prompt
(a list of token ids, the launch prompt of qwengpu.driver.protocol.prompt) greedily decoded with
the argmax restricted to the GPU token ids [allowed[0], allowed[1]), until a stop id (kept) or
max_tokens; the result is each prompt's generated ids. `qwengpu.testing.reference.launch_ids`
gives a launch's prompt ids and the fast path's stream to compare with (docs/engines.md).

    vllm.VllmEngine             vLLM in its own venv (.venv-vllm, scripts/install_vllm.sh), a subprocess
    openai_client.OpenAIEngine  a running vLLM OpenAI-compatible server (`vllm serve ...`)
    llamacpp.LlamaCppEngine     llama.cpp on a GGUF (qgpu export gguf: gguf.py), in .venv-llamacpp
                                (scripts/install_llamacpp.sh), a subprocess

connect.open_engine opens the one a Device("vllm" | "llama.cpp") names; the launches' host side
(prompts in, streams checked, results from the copy-out) is qwengpu.driver.runtime.launch_on_engine.
"""


class WorkerEngine:
    """An engine whose model runs in a worker subprocess (VllmEngine, LlamaCppEngine): a context
    manager (`with` starts the worker if it is not running and closes it at the end), and a
    worker left open is killed when the engine is garbage-collected."""

    def start(self):
        """Start the worker if it is not running; the engine. (An engine that starts its worker
        in __init__ has nothing to do here.)"""
        return self

    def close(self, kill: bool = False) -> None:
        """Stop the worker: ask it to quit, or with `kill` end it at once."""
        raise NotImplementedError

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close(kill=True)
        except Exception:
            pass
