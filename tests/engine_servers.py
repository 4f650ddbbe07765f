"""HTTP servers on 127.0.0.1 that answer as SGLang and vLLM do, for the live probe's tests.

Standard library `http.server` in a thread. The answers follow the engines' own shapes:

- SGLang 0.5.10: `/get_server_info` is the server arguments, scheduler info, `internal_states`
  and `version` (entrypoints/http_server.py:601-618); `avg_spec_accept_length` is accepted tokens
  over verify steps since start (managers/scheduler.py:3081-3084); `/metrics` has the
  `sglang:spec_accept_*` gauges; `/generate` returns `meta_info` with spec_verify_ct,
  spec_accept_length = completion tokens / verify steps, spec_accept_token_num,
  spec_draft_token_num = verify steps · (D − 1) and spec_accept_histogram
  (managers/tokenizer_manager.py:1919-1943).
- vLLM: `/metrics` holds the `vllm:spec_decode_*` counters written by prometheus_client, as
  vLLM's SpecDecodingProm does (0.33.0 v1/spec_decode/metrics.py:200-262), `/version`,
  `/v1/models`, and `/v1/completions` with `metrics.speculative_decoding` (0.33.0
  v1/metrics/stats.py:397-422) when per-request metrics are on.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

Route = Callable[[dict | None], tuple[int, str, bytes]]


class _Handler(BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, Route]] = {}

    def _answer(self, body: dict | None) -> None:
        route = self.routes.get(self.path)
        if route is None:
            self.send_error(404)
            return
        status, ctype, payload = route(body)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        self._answer(None)

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length", 0))
        self._answer(json.loads(self.rfile.read(n) or b"{}"))

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serve(routes: dict[str, Route]) -> Iterator[str]:
    """Serve `routes` (path -> handler) on a free port of 127.0.0.1; yields the base URL."""
    handler = type("Handler", (_Handler,), {"routes": routes})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def as_json(obj: object) -> tuple[int, str, bytes]:
    return 200, "application/json", json.dumps(obj).encode()


class SGLang:
    """An SGLang 0.5.10 server with EAGLE-3 (4 steps, topk 1, D = 5) accepting `accepted` of
    the D − 1 drafts per verify step."""

    def __init__(self, accepted: float = 0.0, version: str = "0.5.10", metrics: bool = True):
        self.accepted, self.version, self.metrics = accepted, version, metrics
        self.steps, self.d = 4, 5

    @property
    def accept_len(self) -> float:
        return 1 + self.accepted

    def routes(self) -> dict[str, Route]:
        routes = {"/get_server_info": self.server_info, "/generate": self.generate}
        if self.metrics:
            routes["/metrics"] = self.gauges
        return routes

    def server_info(self, _body: dict | None) -> tuple[int, str, bytes]:
        return as_json(
            {
                "model_path": "moonshotai/Kimi-K2.5",
                "tp_size": 8,
                "dp_size": 1,
                "speculative_algorithm": "EAGLE3",
                "speculative_draft_model_path": "/models/kimi-k2.5-eagle3",
                "speculative_num_steps": self.steps,
                "speculative_eagle_topk": 1,
                "speculative_num_draft_tokens": self.d,
                "disable_cuda_graph": True,
                "max_total_num_tokens": 1_200_000,
                "internal_states": [
                    {"avg_spec_accept_length": self.accept_len, "last_gen_throughput": 24.7}
                ],
                "version": self.version,
            }
        )

    def gauges(self, _body: dict | None) -> tuple[int, str, bytes]:
        reg = CollectorRegistry()
        labels = {"model_name": "kimi-k2.5", "engine_type": "unified"}
        for name, value in (
            ("sglang:spec_accept_length", self.accept_len),
            ("sglang:spec_accept_rate", self.accept_len / self.d),  # 0.5.6-0.5.10: al / D
            ("sglang:gen_throughput", 24.7),
        ):
            Gauge(name, "doc", list(labels), registry=reg).labels(**labels).set(value)
        return 200, "text/plain; version=0.0.4", generate_latest(reg)

    def generate(self, body: dict | None) -> tuple[int, str, bytes]:
        tokens = body["sampling_params"]["max_new_tokens"]
        verify = max(1, round((tokens - 1) / self.accept_len))  # the first token comes from prefill
        accepted = round(verify * self.accepted)
        hist = [0] * self.d
        hist[round(self.accepted)] = verify
        meta = {
            "id": "r1",
            "prompt_tokens": 17,
            "completion_tokens": tokens,
            "spec_verify_ct": verify,
            "spec_accept_rate": accepted / (verify * (self.d - 1)),
            "spec_accept_length": tokens / verify,
            "spec_accept_token_num": accepted,
            "spec_draft_token_num": verify * (self.d - 1),
            "spec_accept_histogram": hist,
        }
        return as_json({"text": "the sky scatters blue light", "meta_info": meta})


class VLLM:
    """A vLLM server with k = 3 speculative tokens whose counters grow by `per_scrape` drafts
    (accepting `rates[i]` at position i) between successive scrapes."""

    def __init__(
        self,
        rates: tuple[float, ...] = (0.75, 0.5, 0.25),
        lifetime_rates: tuple[float, ...] = (0.05, 0.02, 0.0),
        per_scrape: int = 1000,
        per_request: bool = True,
        version: str = "0.11.0",
    ):
        self.rates, self.per_scrape, self.per_request = rates, per_scrape, per_request
        self.version, self.scrapes = version, 0
        self.k = len(rates)
        self.drafts = 50_000  # before the probe: a long, poor past
        self.pos = [50_000 * r for r in lifetime_rates]

    def routes(self) -> dict[str, Route]:
        return {
            "/metrics": self.counters,
            "/version": lambda _b: as_json({"version": self.version}),
            "/v1/models": lambda _b: as_json(
                {"object": "list", "data": [{"id": "llama-3.1-8b", "max_model_len": 8192}]}
            ),
            "/v1/completions": self.completion,
        }

    def counters(self, _body: dict | None) -> tuple[int, str, bytes]:
        if self.scrapes:
            self.drafts += self.per_scrape
            self.pos = [p + self.per_scrape * r for p, r in zip(self.pos, self.rates, strict=True)]
        self.scrapes += 1
        reg = CollectorRegistry()
        lab = ["model_name", "engine"]
        for name, value in (
            ("vllm:spec_decode_num_drafts", self.drafts),
            ("vllm:spec_decode_num_draft_tokens", self.drafts * self.k),
            ("vllm:spec_decode_num_accepted_tokens", sum(self.pos)),
        ):
            Counter(name, "doc", lab, registry=reg).labels("m", "0").inc(value)
        per_pos = Counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos", "doc", [*lab, "position"], registry=reg
        )
        for i, p in enumerate(self.pos):
            per_pos.labels("m", "0", str(i)).inc(p)
        return 200, "text/plain; version=0.0.4", generate_latest(reg)

    def completion(self, body: dict | None) -> tuple[int, str, bytes]:
        time.sleep(0.01)
        out = {"id": "cmpl-1", "object": "text_completion", "model": body["model"],
               "choices": [{"index": 0, "text": " blue", "finish_reason": "length"}],
               "usage": {"prompt_tokens": 12, "completion_tokens": body["max_tokens"]}}  # fmt: skip
        if self.per_request:
            steps = 20
            hist = [0] * (self.k + 1)
            hist[0], hist[1], hist[2], hist[3] = 5, 5, 5, 5  # 30 of 60 drafts accepted
            out["metrics"] = {
                "speculative_decoding": {
                    "mean_acceptance_length": 1 + 30 / steps,
                    "draft_acceptance_rate": 30 / (steps * self.k),
                    "acceptance_histogram": hist,
                    "num_spec_steps": steps,
                    "num_accepted_draft_tokens": 30,
                    "num_draft_tokens": steps * self.k,
                    "num_spec_tokens": self.k,
                }
            }
        return as_json(out)
