#!/usr/bin/env python3
"""The PyTorch reference for bench_gpu_step: one GPT training step on one GPU.

The same architecture as workloads/cuda/transformer_cuda (token + position embeddings, pre-LN
blocks with causal multi-head attention and a 4d GELU-tanh MLP, final LayerNorm, untied bias-free
head, next-token cross-entropy) and the same update (AdamW, lr 3e-4, betas 0.9/0.95, eps 1e-8,
weight decay 0.1), on random tokens already on the GPU, timed step by step with CUDA events:
medians of --steps after --warmup. --precision tf32 lets cuBLAS and cuDNN use TF32 tensor cores
(fp32: they do not). --attention naive materialises the S x S scores and masks them, as ours
does; sdpa uses torch's fused scaled_dot_product_attention (causal), what a PyTorch user gets.
Prints one JSON object with the fields bench_gpu_step prints (step_median_s, tokens_per_s, ...).

Run it beside bench_gpu_step, interleaved, on the same GPU (docs/gpu.md, "Measured on an NVIDIA
H200"): python3 bench/bench_gpu_torch.py --precision tf32 --attention naive
"""
import argparse
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for k, v in [("layers", 12), ("d-model", 768), ("heads", 12), ("seq", 1024), ("batch", 8), ("vocab", 256),
                 ("steps", 10), ("warmup", 3)]:
        p.add_argument("--" + k, type=int, default=v)
    p.add_argument("--precision", choices=["fp32", "tf32"], default="tf32")
    p.add_argument("--attention", choices=["naive", "sdpa"], default="naive")
    a = p.parse_args()
    tf32 = a.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(1)
    D, H, S, V, L, B = a.d_model, a.heads, a.seq, a.vocab, a.layers, a.batch
    dev = torch.device("cuda")

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(D, eps=1e-5)
            self.qkv = nn.Linear(D, 3 * D)
            self.out = nn.Linear(D, D)
            self.ln2 = nn.LayerNorm(D, eps=1e-5)
            self.fc = nn.Linear(D, 4 * D)
            self.proj = nn.Linear(4 * D, D)
            self.register_buffer("mask", torch.triu(torch.ones(S, S, dtype=torch.bool), 1))

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
            q = q.view(B, S, H, D // H).transpose(1, 2)
            k = k.view(B, S, H, D // H).transpose(1, 2)
            v = v.view(B, S, H, D // H).transpose(1, 2)
            if a.attention == "sdpa":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // H))
                att = F.softmax(att.masked_fill(self.mask, float("-inf")), dim=-1)
                y = att @ v
            x = x + self.out(y.transpose(1, 2).contiguous().view(B, S, D))
            return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, D)
            self.wpe = nn.Embedding(S, D)
            self.blocks = nn.ModuleList([Block() for _ in range(L)])
            self.lnf = nn.LayerNorm(D, eps=1e-5)
            self.head = nn.Linear(D, V, bias=False)
            self.register_buffer("pos", torch.arange(S))

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(self.pos)
            for b in self.blocks:
                x = b(x)
            return F.cross_entropy(self.head(self.lnf(x)).view(-1, V), targets.reshape(-1))

    model = GPT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    data = torch.randint(0, V, (a.steps + a.warmup, B, S + 1), device=dev)

    def step(i):
        opt.zero_grad(set_to_none=True)
        loss = model(data[i, :, :-1], data[i, :, 1:])
        loss.backward()
        opt.step()
        return loss

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()
    times = []
    for i in range(a.steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = step(a.warmup + i)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    med = times[len(times) // 2] if len(times) % 2 else 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])
    print(json.dumps({"bench": "gpt_step_torch", "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                      "precision": a.precision, "attention": a.attention, "layers": L, "d_model": D, "seq": S,
                      "batch": B, "steps": a.steps, "step_median_s": med, "step_min_s": times[0],
                      "step_max_s": times[-1], "tokens_per_s": B * S / med, "loss": float(loss)}))


if __name__ == "__main__":
    main()
