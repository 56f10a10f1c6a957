"""One training step of the demo model (``npusim/demo.py``), built for npusim and, the same way, for torch.

The step is the demo's: a batch of 32 windows of 64 characters, forward under
autocast, cross-entropy in float32, GradScaler, gradient clipping, AdamW, a cosine
learning-rate schedule, and the loss read back to the host (``.item()``) as the demo
does every step.
"""
from __future__ import annotations

BATCH, LR, SCHEDULE_STEPS = 32, 4e-3, 250


def npusim_step(npusim, device="npu"):
    from npusim import demo, nn
    from npusim.nn import functional as F
    npusim.manual_seed(0)
    vocab, train, _ = demo.load_corpus()
    model = demo.CharTransformer(len(vocab)).to(device)
    opt = npusim.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    sched = npusim.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=SCHEDULE_STEPS, eta_min=LR / 10)
    scaler = npusim.amp.GradScaler("npu")
    gen = npusim.Generator().manual_seed(0)

    def step() -> float:
        x, y = demo.batches(train, BATCH, gen, device)
        with npusim.autocast("npu", dtype=npusim.float16):
            loss = F.cross_entropy(model(x).flatten(0, 1).float(), y.flatten())
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        sched.step()
        return loss.item()
    return step, len(vocab), train.numpy()


def _torch_char_transformer(torch, vocab_size, block):
    nn = torch.nn

    class CharTransformer(nn.Module):
        """The demo's model, layer for layer (npusim.demo.CharTransformer)."""

        def __init__(self, d_model=64, nhead=4, layers=2):
            super().__init__()
            self.tok = nn.Embedding(vocab_size, d_model)
            self.pos = nn.Embedding(block, d_model)
            layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2 * d_model, dropout=0.0,
                                               batch_first=True, norm_first=True, activation="gelu")
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, vocab_size)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(block), persistent=False)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
            return self.head(self.norm(self.encoder(x, mask=self.mask[:t, :t], is_causal=True)))
    return CharTransformer()


def torch_step(torch, device, vocab_size, train_ids):
    from npusim.demo import BLOCK
    F = torch.nn.functional
    torch.manual_seed(0)
    train = torch.from_numpy(train_ids)
    model = _torch_char_transformer(torch, vocab_size, BLOCK).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=SCHEDULE_STEPS, eta_min=LR / 10)
    on_gpu = torch.device(device).type == "cuda"
    amp_dtype = torch.float16 if on_gpu else torch.bfloat16     # as the demo: float16 on the accelerator
    scaler = torch.amp.GradScaler(torch.device(device).type, enabled=on_gpu)
    gen = torch.Generator().manual_seed(0)
    offsets = torch.arange(BLOCK)

    def step() -> float:
        starts = torch.randint(0, len(train) - BLOCK - 1, (BATCH,), generator=gen)
        rows = starts.unsqueeze(1) + offsets
        x, y = train[rows].to(device), train[rows + 1].to(device)
        with torch.autocast(torch.device(device).type, dtype=amp_dtype):
            loss = F.cross_entropy(model(x).flatten(0, 1).float(), y.flatten())
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        sched.step()
        return loss.item()
    return step
