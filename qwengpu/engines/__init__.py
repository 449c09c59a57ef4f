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
