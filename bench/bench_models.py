"""Training steps of representative models, npusim's npu against torch CPU, at one thread and at two.

    python bench/bench_models.py [--rounds N] [--steps N] [--threads 1,2] [--only NAME,...] [--quick]

Each workload is one training step (forward, loss, backward, optimizer step) built twice from the same
code, once with torch on its CPU and once with npusim on the npu (the emulated device on a machine without a
GPU), with the same weights and data (torch's initial state is copied into npusim's model):

    convnet      MNIST-sized: 2 conv 3x3 (32, 64 channels), max-pool, 2 linear, Adam, batch 64
    gru_lm       character-level GRU language model: embedding 64, GRU 256, head; context 64, batch 16, Adam
    lstm_lm      the same with an LSTM
    transformer  4-layer pre-norm transformer LM, width 128, 4 heads, causal, context 64, batch 16, AdamW
    gpt          a minimal GPT as public implementations write it (nanoGPT-style: attention written out with a
                 qkv Linear, masked_fill with a tril buffer and softmax; tanh GELU; weight tying), width 128,
                 4 layers, 4 heads, context 64, batch 16, AdamW
    mlp          784-1024-1024-10 with ReLU, batch 256, Adam
    regression   a tiny regression step: Linear(8, 1), MSE, SGD, batch 32
    NAME_fp16    each of the first six under fp16 autocast with a GradScaler (mlp_fp16 and so on)

Rounds interleave the two sides (each round runs ``--steps`` steps of torch then of npusim), so a busy
neighbour on the machine slows both alike. Each side's block starts after a short untimed settle (``SETTLE_S``),
so that the other side's worker threads have gone to sleep and each side is measured with the other idle: the
BLAS that NumPy loads (OpenBLAS) keeps its worker threads spinning for about 0.1 s after each call (its thread
timeout, 2**28 cycles), and torch's OpenMP workers spin for a few milliseconds after its parallel regions; run
back to back, one side's spinning threads would take a core from the other's first step at two threads. The table shows the median milliseconds per step of each side
and the ratio npusim / torch, median and min-max over the rounds (lower is better; the goal is <= 1.2x,
<= 1.0x for the MLP). An fp16 row shows npusim's fp16 step over its own fp32 step of the same workload (goal
<= 1.3x on the emulation for the MLP); torch's side of it runs one step only, for the loss check, since torch
CPU's float16 is no speed reference (its fp16 MLP step is ~20x its fp32 one). Thread counts are set on both sides: ``torch.set_num_threads`` and
``npusim.set_num_threads`` (intra-op pool and BLAS through threadpoolctl). The first-step losses of both
sides are printed as a check that the same step is measured. The defaults take a few minutes; ``--quick``
runs every workload once at one thread, with small sizes, in a few seconds (a smoke test).
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import npusim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


# ---- workloads: each builder returns (model, make_batch(lib, rng_state) -> (inputs, target), loss_fn, optimizer
# factory, autocast); the model is built from ``lib.nn`` so the same code builds torch's and npusim's.

def convnet(lib, small):
    nn = lib.nn
    c1, c2, hidden = (8, 16, 32) if small else (32, 64, 128)
    model = nn.Sequential(nn.Conv2d(1, c1, 3), nn.ReLU(), nn.Conv2d(c1, c2, 3), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(c2 * 12 * 12, hidden), nn.ReLU(), nn.Linear(hidden, 10))
    batch = 8 if small else 64
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((batch, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, batch))
    return dict(model=model, data=data, loss="cross_entropy", opt="Adam", lr=1e-3)


class RecurrentLM:
    """Embedding, a one-layer GRU or LSTM, a linear head; built from ``nn`` of torch or npusim."""

    def __new__(cls, nn, kind, vocab, width, hidden):
        rnn_cls = nn.GRU if kind == "gru" else nn.LSTM

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(vocab, width)
                self.rnn = rnn_cls(width, hidden, batch_first=True)
                self.head = nn.Linear(hidden, vocab)

            def forward(self, idx):
                out, _ = self.rnn(self.emb(idx))
                return self.head(out).flatten(0, 1)
        return Model()


def recurrent_lm(kind):
    def build(lib, small):
        vocab, context, batch = 65, (8 if small else 64), (4 if small else 16)
        model = RecurrentLM(lib.nn, kind, vocab, 32 if small else 64, 32 if small else 256)
        rng = np.random.default_rng(2)
        tokens = rng.integers(0, vocab, (batch, context + 1))
        return dict(model=model, data=(tokens[:, :-1], tokens[:, 1:].reshape(-1)), loss="cross_entropy",
                    opt="Adam", lr=1e-3)
    return build


def transformer(lib, small):
    nn = lib.nn
    vocab, width, layers, context, batch = 65, (32 if small else 128), (1 if small else 4), (8 if small else 64), \
        (2 if small else 16)

    class TransformerLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, width)
            self.pos = nn.Embedding(context, width)
            layer = nn.TransformerEncoderLayer(width, 4, dim_feedforward=4 * width, dropout=0.0, batch_first=True,
                                               norm_first=True, activation="gelu")
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(context), persistent=False)

        def forward(self, idx):
            pos = lib.arange(idx.shape[1], device=idx.device)
            x = self.encoder(self.tok(idx) + self.pos(pos), mask=self.mask, is_causal=True)
            return self.head(self.norm(x)).flatten(0, 1)

    rng = np.random.default_rng(3)
    tokens = rng.integers(0, vocab, (batch, context + 1))
    return dict(model=TransformerLM(), data=(tokens[:, :-1], tokens[:, 1:].reshape(-1)), loss="cross_entropy",
                opt="AdamW", lr=3e-4)


class GPT:
    """A nanoGPT-style minimal GPT (as tests/torch_programs/gpt.py), built from ``lib`` of torch or npusim."""

    def __new__(cls, lib, vocab, width, heads, layers, context):
        nn, F = lib.nn, lib.nn.functional

        class CausalSelfAttention(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(width, 3 * width)
                self.proj = nn.Linear(width, width)
                self.register_buffer("mask", lib.tril(lib.ones(context, context)).view(1, 1, context, context))

            def forward(self, x):
                b, t, c = x.size()
                q, k, v = self.qkv(x).split(c, dim=2)
                q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
                y = F.softmax(att, dim=-1) @ v
                return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
                self.attn = CausalSelfAttention()
                self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"),
                                         nn.Linear(4 * width, width))

            def forward(self, x):
                x = x + self.attn(self.ln1(x))
                return x + self.mlp(self.ln2(x))

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(context, width)
                self.blocks = nn.ModuleList(Block() for _ in range(layers))
                self.ln_f = nn.LayerNorm(width)
                self.lm_head = nn.Linear(width, vocab, bias=False)
                self.wte.weight = self.lm_head.weight          # weight tying
                for module in self.modules():
                    if isinstance(module, (nn.Linear, nn.Embedding)):
                        nn.init.normal_(module.weight, mean=0.0, std=0.02)
                    if isinstance(module, nn.Linear) and module.bias is not None:
                        nn.init.zeros_(module.bias)

            def forward(self, idx):
                pos = lib.arange(0, idx.size(1), dtype=lib.long, device=idx.device)
                x = self.wte(idx) + self.wpe(pos)
                for block in self.blocks:
                    x = block(x)
                logits = self.lm_head(self.ln_f(x))
                return logits.view(-1, logits.size(-1))
        return Model()


def gpt(lib, small):
    vocab, width, layers, context, batch = 65, (32 if small else 128), (1 if small else 4), (8 if small else 64), \
        (2 if small else 16)
    rng = np.random.default_rng(6)
    tokens = rng.integers(0, vocab, (batch, context + 1))
    return dict(model=GPT(lib, vocab, width, 4, layers, context), data=(tokens[:, :-1], tokens[:, 1:].reshape(-1)),
                loss="cross_entropy", opt="AdamW", lr=3e-4)


def mlp(lib, small, amp=False):
    nn = lib.nn
    sizes = (784, 64, 64, 10) if small else (784, 1024, 1024, 10)
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    batch = 16 if small else 256
    rng = np.random.default_rng(4)
    data = (rng.standard_normal((batch, 784), dtype=np.float32), rng.integers(0, 10, batch))
    return dict(model=nn.Sequential(*layers[:-1]), data=data, loss="cross_entropy", opt="Adam", lr=1e-3, amp=amp)


def regression(lib, small):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 8), dtype=np.float32)
    y = (x @ rng.standard_normal((8, 1), dtype=np.float32) + 0.1).astype(np.float32)
    return dict(model=lib.nn.Linear(8, 1), data=(x, y), loss="mse_loss", opt="SGD", lr=1e-2)


WORKLOADS = {
    "convnet": convnet,
    "gru_lm": recurrent_lm("gru"),
    "lstm_lm": recurrent_lm("lstm"),
    "transformer": transformer,
    "gpt": gpt,
    "mlp": mlp,
    "regression": regression,
}


def _under_fp16(builder):
    def build(lib, small):
        return dict(builder(lib, small), amp=True)
    return build


FP16_OF = {f"{name}_fp16": name for name in ("convnet", "gru_lm", "lstm_lm", "transformer", "gpt", "mlp")}
WORKLOADS.update({fp16: _under_fp16(WORKLOADS[fp32]) for fp16, fp32 in FP16_OF.items()})
DEFAULT_ORDER = [n for name in ("convnet", "gru_lm", "lstm_lm", "transformer", "gpt", "mlp", "regression")
                 for n in (name, f"{name}_fp16") if n in WORKLOADS]


def build_step(lib, spec, state, device):
    """A closure running one training step of ``spec`` with ``lib`` on ``device``, from the weights ``state``."""
    model = spec["model"]
    with lib.no_grad():
        for name, value in model.state_dict().items():
            value.copy_(lib.from_numpy(state[name].copy()))
    model = model.to(device)
    inputs, target = (lib.from_numpy(np.ascontiguousarray(a)).to(device) for a in spec["data"])
    opt = getattr(lib.optim, spec["opt"])(model.parameters(), lr=spec["lr"])
    loss_fn = getattr(lib.nn.functional, spec["loss"])
    amp = spec.get("amp", False)
    scaler = lib.amp.GradScaler(device, enabled=amp)
    sync = npusim.npu.synchronize if lib is npusim else (lambda: None)

    def step():
        opt.zero_grad()
        with lib.autocast(device, dtype=lib.float16, enabled=amp):
            loss = loss_fn(model(inputs), target)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        sync()
        return loss

    return step


def sides_of(name, small):
    """{side: step} for one workload: torch's CPU (when importable) and npusim's npu, the same initial weights."""
    builder = WORKLOADS[name]
    ours = builder(npusim, small)
    if torch is not None:
        torch.manual_seed(0)
        theirs = builder(torch, small)
        state = {k: v.detach().numpy().copy() for k, v in theirs["model"].state_dict().items()}
    else:
        npusim.manual_seed(0)
        state = {k: v.detach().numpy().copy() for k, v in ours["model"].state_dict().items()}
    sides = {}
    if torch is not None:
        sides["torch"] = build_step(torch, theirs, state, "cpu")
    sides["npusim"] = build_step(npusim, ours, state, "npu")
    return sides


def set_threads(n: int) -> None:
    npusim.set_num_threads(n)   # the intra-op pool and BLAS (threadpoolctl)
    if torch is not None:
        torch.set_num_threads(n)


SETTLE_S = 0.2   # untimed pause before each side's block: past OpenBLAS's ~0.1 s spin and OpenMP's few ms


def measure(sides: dict, rounds: int, steps: int, timed=None) -> tuple[dict, dict]:
    """First-step losses, and {side: [ms per step, one per round]} with the ``timed`` sides (default: all)
    interleaved round by round, each side's block after a settle (the other side's threads idle)."""
    losses = {}
    for side, step in sides.items():        # warm-up, and the sanity check
        try:
            losses[side] = float(step().item())
        except RuntimeError as e:           # torch CPU cannot run some fp16 steps (oneDNN's LSTM); show why
            if side != "torch" or timed is None:
                raise
            losses[side] = f"({type(e).__name__}: {str(e)[:40]}...)"
    timed = list(sides) if timed is None else timed
    times = {side: [] for side in timed}
    for _ in range(rounds):
        for side in timed:
            step = sides[side]
            time.sleep(SETTLE_S)
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            times[side].append((time.perf_counter() - t0) / steps * 1e3)
    return losses, times


def spread(ratios) -> str:
    ratios = sorted(ratios)
    return f"{statistics.median(ratios):5.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})"


def run(args) -> int:
    names = args.only.split(",") if args.only else DEFAULT_ORDER
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise SystemExit(f"unknown workload(s) {unknown}; known: {', '.join(WORKLOADS)}")
    threads = [int(t) for t in args.threads.split(",")]
    print(f"npusim {npusim.__version__} (npu mode: {npusim.npu.runtime_mode()}), "
          f"NumPy {np.__version__}" + (f", torch {torch.__version__}" if torch is not None else ", torch not importable")
          + f"; os.cpu_count()={os.cpu_count()}; {args.rounds} rounds of {args.steps} steps"
          + ("; quick (small sizes)" if args.quick else ""))
    for n in threads:
        set_threads(n)
        print()
        print(f"{n} thread(s)")
        print(f"{'workload':<16}{'torch ms':>10}{'npusim ms':>11}   {'npusim/torch (min-max)':<24}losses torch / npusim")
        fp32_times = {}
        for name in names:
            sides = sides_of(name, args.quick)
            fp16 = name in FP16_OF
            losses, times = measure(sides, args.rounds, args.steps, timed=["npusim"] if fp16 else None)
            row = f"{name:<16}"
            row += f"{statistics.median(times['torch']):10.2f}" if "torch" in times else f"{'-':>10}"
            row += f"{statistics.median(times['npusim']):11.2f}   "
            row += (spread(a / b for a, b in zip(times["npusim"], times["torch"])) if "torch" in times else "-")
            row = row.ljust(61) + " / ".join(v if isinstance(v, str) else f"{v:.4f}" for v in losses.values())
            fp32_times[name] = times["npusim"]
            if fp16 and FP16_OF[name] in fp32_times:
                row += "   fp16/fp32 npusim " + spread(a / b for a, b in zip(times["npusim"], fp32_times[FP16_OF[name]]))
            print(row, flush=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median and min-max are shown)")
    parser.add_argument("--steps", type=int, default=3, help="training steps per side and round")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts, each run in turn")
    parser.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    parser.add_argument("--quick", action="store_true", help="small sizes, one round of one step, one thread")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.steps, args.threads = 1, 1, "1"
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
