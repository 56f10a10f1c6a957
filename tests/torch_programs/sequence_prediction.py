"""Sine-wave sequence prediction: two LSTMCells unrolled by hand, float64, LBFGS with a closure."""
import json

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

from common_args import parser


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, 24)
        self.lstm2 = nn.LSTMCell(24, 24)
        self.linear = nn.Linear(24, 1)

    def forward(self, inputs, future=0):
        outputs = []
        n = inputs.size(0)
        h_t = torch.zeros(n, 24, dtype=torch.double, device=inputs.device)
        c_t = torch.zeros(n, 24, dtype=torch.double, device=inputs.device)
        h_t2 = torch.zeros(n, 24, dtype=torch.double, device=inputs.device)
        c_t2 = torch.zeros(n, 24, dtype=torch.double, device=inputs.device)
        for input_t in inputs.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):   # predict the future from the model's own outputs
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def main():
    args = parser(__doc__).parse_args()
    rng = np.random.RandomState(2)
    x = np.arange(30).reshape(1, 30) + rng.randint(-20, 20, (6, 1))
    data = torch.from_numpy(np.sin(x / 4.0))
    torch.manual_seed(0)
    seq = Sequence().double()
    if args.save_init:
        torch.save(seq.state_dict(), args.save_init)
    if args.init:
        seq.load_state_dict(torch.load(args.init))
    seq.to(args.device)
    inputs, target = data[1:, :-1].to(args.device), data[1:, 1:].to(args.device)
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
    for step in range(args.steps):
        def closure():
            optimizer.zero_grad()
            loss = criterion(seq(inputs), target)
            loss.backward()
            return loss
        loss = optimizer.step(closure)
        print(json.dumps({"step": step, "loss": loss.item()}))
    with torch.no_grad():
        future = seq(data[:1, :-1].to(args.device), future=10)
    print(json.dumps({"predicted": future.shape[1]}))


if __name__ == "__main__":
    main()
