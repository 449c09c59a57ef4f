"""A vLLM OpenAI-compatible server as an engine for launch prompts (standard library only).

    # in another shell (docs/engines.md):
    .venv-vllm/bin/vllm serve build/standin-merged --dtype bfloat16 --skip-tokenizer-init \
        --enforce-eager --host 127.0.0.1 --port 8000 --served-model-name qwengpu

    from qwengpu.engines.openai_client import OpenAIEngine
    eng = OpenAIEngine("http://127.0.0.1:8000")
    outs = eng.generate([prompt_ids], allowed=(first, end), stop_ids=[halt, fault], max_tokens=20_000)

One POST to /v1/completions per generate() call: `prompt` is the list of prompts as token id
lists (the server batches them), with vLLM's extra sampling parameters: temperature 0,
`allowed_token_ids` (the GPU ids), `stop_token_ids` (HALT and FAULT), `ignore_eos`, and
`return_token_ids` (each choice then carries its generated ids in `token_ids`; the text is
empty with --skip-tokenizer-init). The stop id that ended a choice is in its token_ids.
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Sequence

from qwengpu.errors import QwenGpuError


class OpenAIEngineError(QwenGpuError):
    """The server refused or failed a request (the message has its HTTP status and body)."""


class OpenAIEngine:
    """url: the server's base address (http://127.0.0.1:8000, with or without /v1); model: the
    served model name (None: the first one /v1/models lists); timeout: seconds per request
    (None: none; a long launch at CPU speed takes hours); api_key: sent as a bearer token when
    the server was started with --api-key."""

    def __init__(self, url: str, model: str | None = None, *, timeout: float | None = None,
                 api_key: str | None = None):
        base = url.rstrip("/")
        self.base = base[:-3] if base.endswith("/v1") else base
        self.timeout, self.api_key = timeout, api_key
        self._model = model
        self.last_seconds: float | None = None

    def _request(self, path: str, body: dict | None = None, timeout: float | None = None) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, headers=headers,
                                     method="POST" if body is not None else "GET")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:2000]
            raise OpenAIEngineError(f"{req.method} {self.base + path}: HTTP {e.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as e:
            raise OpenAIEngineError(f"{req.method} {self.base + path}: {e} (is the server running? "
                                    f"docs/engines.md says how to start it)") from None

    @property
    def model(self) -> str:
        """The served model's name (asked of /v1/models once when not given)."""
        if self._model is None:
            models = self._request("/v1/models", timeout=30).get("data") or []
            if not models:
                raise OpenAIEngineError(f"{self.base}/v1/models lists no model")
            self._model = models[0]["id"]
        return self._model

    def ready(self) -> bool:
        """Whether the server answers /health with 200."""
        try:
            with urllib.request.urlopen(self.base + "/health", timeout=5) as resp:
                return resp.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self, timeout: float = 1800.0, proc=None) -> None:
        """Wait for /health; `proc` (a Popen of the server): fail at once if it exits."""
        deadline = time.monotonic() + timeout
        while not self.ready():
            if proc is not None and proc.poll() is not None:
                raise OpenAIEngineError(f"the server exited with status {proc.returncode} before it was ready")
            if time.monotonic() > deadline:
                raise OpenAIEngineError(f"the server at {self.base} was not ready within {timeout:.0f} s")
            time.sleep(2)

    def generate(self, prompts: Sequence[Sequence[int]], *, allowed: tuple[int, int], stop_ids: Sequence[int],
                 max_tokens: int) -> list[list[int]]:
        """Each prompt greedily decoded over the ids [allowed[0], allowed[1]) until a stop id
        (included) or max_tokens (then the output ends without a stop id); all prompts in one
        request."""
        if not prompts:
            return []
        body = {
            "model": self.model,
            "prompt": [[int(t) for t in p] for p in prompts],
            "max_tokens": int(max_tokens),
            "temperature": 0.0,
            "n": 1,
            # vLLM's extra sampling parameters (not in OpenAI's API)
            "allowed_token_ids": list(range(int(allowed[0]), int(allowed[1]))),
            "stop_token_ids": [int(t) for t in stop_ids],
            "ignore_eos": True,
            "skip_special_tokens": False,
            "return_token_ids": True,
        }
        start = time.perf_counter()
        out = self._request("/v1/completions", body, timeout=self.timeout)
        self.last_seconds = time.perf_counter() - start
        choices = sorted(out.get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) != len(prompts):
            raise OpenAIEngineError(f"{len(prompts)} prompts, but the server answered {len(choices)} choices")
        results = []
        for c in choices:
            ids = c.get("token_ids")
            if ids is None:
                raise OpenAIEngineError("the server's choices carry no token_ids: it is not a vLLM server with "
                                        "return_token_ids (vLLM >= 0.10)")
            results.append([int(t) for t in ids])
        return results
