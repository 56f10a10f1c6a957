"""A small convnet on 16x16 images: two convolutions, max pooling, batch norm, Adam."""
import json

import torch
from torch import nn

from common_args import parser


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 10))


def main():
    args = parser(__doc__).parse_args()
    torch.manual_seed(0)
    model = make_model()
    images = torch.randn(32, 1, 16, 16)
    labels = torch.randint(0, 10, (32,))
    if args.save_init:
        torch.save({"model": model.state_dict(), "images": images, "labels": labels}, args.save_init)
    if args.init:
        saved = torch.load(args.init)
        model.load_state_dict(saved["model"])
        images, labels = saved["images"], saved["labels"]
    device = torch.device(args.device)
    model = model.to(device)
    images, labels = images.to(device), labels.to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        print(json.dumps({"step": step, "loss": loss.item()}))
    model.eval()
    with torch.no_grad():
        accuracy = (model(images).argmax(dim=1) == labels).float().mean().item()
    print(json.dumps({"accuracy": accuracy}))


if __name__ == "__main__":
    main()
