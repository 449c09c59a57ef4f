"""Chat with the GPU inside (issue 15): the normal-mode expression language (expr.py), the
model's GPU tools in Qwen3.5's native tool-call format (tools.py), a chat session over one
merged checkpoint (session.py) and the chat eval's sets (evalset.py). See docs/chat.md."""
