"""A program written for CUDA: picks "cuda" when available, .cuda(), torch.cuda.amp autocast and GradScaler."""
import json

import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast

use_cuda = torch.cuda.is_available()
device = torch.device("cuda" if use_cuda else "cpu")
torch.manual_seed(0)
torch.cuda.manual_seed_all(0)

model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 4))
if use_cuda:
    model = model.cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = GradScaler(enabled=use_cuda)
x = torch.randn(32, 16).to(device)
y = torch.randint(0, 4, (32,), device=device)
for step in range(3):
    opt.zero_grad()
    with autocast(enabled=use_cuda):
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    print(json.dumps({"step": step, "loss": loss.item(), "logits_dtype": str(logits.dtype),
                      "device": str(x.device), "cuda": use_cuda,
                      "device_name": torch.cuda.get_device_name() if use_cuda else None}))
