"""A small DCGAN on 16x16 images: transposed convolutions, batch norm, LeakyReLU, BCE, two Adam optimizers."""
import json

import torch
import torch.nn as nn

from common_args import parser


def generator():
    return nn.Sequential(
        nn.ConvTranspose2d(8, 16, 4, 1, 0, bias=False), nn.BatchNorm2d(16), nn.ReLU(True),     # 4x4
        nn.ConvTranspose2d(16, 8, 4, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(True),      # 8x8
        nn.ConvTranspose2d(8, 1, 4, 2, 1, bias=False), nn.Tanh())                             # 16x16


def discriminator():
    return nn.Sequential(
        nn.Conv2d(1, 8, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),                 # 8x8
        nn.Conv2d(8, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(16, 1, 4, 1, 0, bias=False), nn.Sigmoid(), nn.Flatten())


def main():
    args = parser(__doc__).parse_args()
    torch.manual_seed(0)
    G, D = generator(), discriminator()
    real = torch.rand(16, 1, 16, 16) * 2 - 1
    noise = torch.randn(16, 8, 1, 1)
    if args.save_init:
        torch.save({"G": G.state_dict(), "D": D.state_dict(), "real": real, "noise": noise}, args.save_init)
    if args.init:
        saved = torch.load(args.init)
        G.load_state_dict(saved["G"])
        D.load_state_dict(saved["D"])
        real, noise = saved["real"], saved["noise"]
    G.to(args.device)
    D.to(args.device)
    real, noise = real.to(args.device), noise.to(args.device)
    criterion = nn.BCELoss()
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    ones = torch.ones(16, 1, device=args.device)
    zeros = torch.zeros(16, 1, device=args.device)
    for step in range(args.steps):
        fake = G(noise)
        opt_d.zero_grad()
        loss_d = criterion(D(real), ones) + criterion(D(fake.detach()), zeros)
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        loss_g = criterion(D(fake), ones)
        loss_g.backward()
        opt_g.step()
        print(json.dumps({"step": step, "loss": loss_g.item(), "loss_d": loss_d.item()}))


if __name__ == "__main__":
    main()
