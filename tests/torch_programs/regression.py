"""Regression with an MLP: DataLoader, SGD with momentum, a step learning-rate schedule."""
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

from common_args import parser


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(4, 32)
        self.out = nn.Linear(32, 1)

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(x)))


def main():
    args = parser(__doc__).parse_args()
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(64, 4)
    y = (x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1 * torch.randn(64, 1))
    if args.save_init:
        torch.save({"model": model.state_dict(), "x": x, "y": y}, args.save_init)
    if args.init:
        saved = torch.load(args.init)
        model.load_state_dict(saved["model"])
        x, y = saved["x"], saved["y"]
    model.to(args.device)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = StepLR(opt, step_size=2, gamma=0.5)
    for step in range(args.steps):
        total = 0.0
        for xb, yb in loader:
            xb, yb = xb.to(args.device), yb.to(args.device)
            opt.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item()
        sched.step()
        print(json.dumps({"step": step, "loss": total / len(loader)}))


if __name__ == "__main__":
    main()
