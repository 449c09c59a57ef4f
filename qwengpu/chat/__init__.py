"""Chat with the GPU inside (issue 15): the normal-mode expression language (expr.py) and the
model's GPU tools in Qwen3.5's native tool-call format (tools.py). See docs/chat.md."""
