"""PyTorch's peers of examples/generate (fusec-generate): the same decoder
module (examples/generate/export_decoder.py's, same seed and weights) with
its static KV cache, generating greedily after a prompt, timed per token as
fusec-generate times itself (the steps queued back to back on device
tensors, one synchronization at the end; the prefill apart).

    python3 torch_decode_peer.py [--config small] [--max-cache 384]
                                 [--prompt 128] [--tokens 256]

Peers: eager, torch.compile(dynamic=True) and
torch.compile(mode="reduce-overhead") (CUDA graphs; the caches are marked
static addresses, as transformers does for its static cache), each with the
time of its first prefill and first decode step (compiles included). Prints
one JSON line per peer; also checks each peer's tokens against eager's.
"""
import argparse
import json
import os
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "examples", "generate"))
import export_decoder  # noqa: E402


def generate(step, model, prompt, max_cache, count):
    """Prefill, then count - 1 greedy steps; returns (tokens, prefill ms,
    first decode step ms, per-token µs of the rest)."""
    cache = model.new_cache(max_cache, device="cuda")
    for t in cache:
        torch._dynamo.mark_static_address(t)
    past = torch.zeros(1, dtype=torch.long, device="cuda")
    tokens = []
    start = time.perf_counter()
    logits = step(prompt, past, cache)
    ids = logits.argmax(-1, keepdim=True)
    tokens.append(ids)
    torch.cuda.synchronize()
    prefill_ms = (time.perf_counter() - start) * 1e3
    past = past + prompt.shape[1]
    start = time.perf_counter()
    first_ms = None
    for i in range(1, count):
        logits = step(ids, past, cache)
        ids = logits.argmax(-1, keepdim=True).clone()
        past = past + 1
        tokens.append(ids)
        if i == 1:
            torch.cuda.synchronize()
            first_ms = (time.perf_counter() - start) * 1e3
            start = time.perf_counter()
    torch.cuda.synchronize()
    per_token_us = (time.perf_counter() - start) * 1e6 / max(count - 2, 1)
    return [int(t) for t in tokens], prefill_ms, first_ms, per_token_us


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="small",
                        choices=export_decoder.CONFIGS)
    parser.add_argument("--max-cache", type=int, default=384)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=256)
    args = parser.parse_args()
    model = export_decoder.make_decoder(args.config).cuda()
    generator = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, model.wte.num_embeddings, (1, args.prompt),
                           generator=generator).cuda()
    eager_tokens = None
    with torch.no_grad():
        for peer, make in [
            ("torch_eager", lambda: model),
            ("torch_compile_dynamic",
             lambda: torch.compile(model, dynamic=True)),
            ("torch_compile_reduce_overhead",
             lambda: torch.compile(model, mode="reduce-overhead")),
        ]:
            torch._dynamo.reset()
            step = make()
            # Twice: the second run is the steady state (compiled, graphs
            # recorded); the first run's times include compiling.
            tokens, prefill_ms, first_ms, _ = generate(
                step, model, prompt, args.max_cache, args.tokens)
            tokens2, _, _, per_token = generate(step, model, prompt,
                                                args.max_cache, args.tokens)
            if eager_tokens is None:
                eager_tokens = tokens
            same = sum(a == b for a, b in zip(tokens2, eager_tokens))
            print(json.dumps({
                "case": "generate", "peer": peer, "config": args.config,
                "prompt": args.prompt, "tokens": args.tokens,
                "max_cache": args.max_cache,
                "first_prefill_ms": round(prefill_ms, 1),
                "first_decode_step_ms": round(first_ms, 1),
                "us_per_token": round(per_token, 1),
                "tokens_per_s": round(1e6 / per_token, 1),
                "tokens_equal_to_eager": f"{same}/{len(tokens2)}"}),
                flush=True)


if __name__ == "__main__":
    main()
