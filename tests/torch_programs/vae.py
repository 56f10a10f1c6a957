"""A variational autoencoder: reparameterised sampling, binary cross-entropy plus KL divergence."""
import json

import torch
from torch import nn
from torch.nn import functional as F

from common_args import parser


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(64, 32)
        self.mu = nn.Linear(32, 4)
        self.logvar = nn.Linear(32, 4)
        self.dec1 = nn.Linear(4, 32)
        self.dec2 = nn.Linear(32, 64)

    def forward(self, x):
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar) if self.training else mu
        return torch.sigmoid(self.dec2(F.relu(self.dec1(z)))), mu, logvar


def main():
    args = parser(__doc__).parse_args()
    torch.manual_seed(0)
    model = VAE().to(args.device)
    data = torch.rand(32, 64, device=args.device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(args.steps):
        recon, mu, logvar = model(data)
        bce = F.binary_cross_entropy(recon, data, reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (bce + kld) / data.size(0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(json.dumps({"step": step, "loss": loss.item()}))
    model.eval()
    with torch.no_grad():
        print(json.dumps({"eval_loss": F.binary_cross_entropy(model(data)[0], data).item()}))


if __name__ == "__main__":
    main()
