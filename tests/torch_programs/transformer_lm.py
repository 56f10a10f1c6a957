"""A small pre-norm transformer language model with a causal mask."""
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from common_args import parser


class TinyLM(nn.Module):
    def __init__(self, vocab=50, width=32, context=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(1, context, width))
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, num_layers=2)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        t = idx.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=idx.device)
        h = self.tok(idx) * math.sqrt(self.tok.embedding_dim) + self.pos[:, :t]
        return self.head(self.norm(self.blocks(h, mask=mask, is_causal=True)))


def main():
    args = parser(__doc__).parse_args()
    torch.manual_seed(0)
    model = TinyLM()
    tokens = torch.randint(0, 50, (8, 17))
    if args.save_init:
        torch.save({"model": model.state_dict(), "tokens": tokens}, args.save_init)
    if args.init:
        saved = torch.load(args.init)
        model.load_state_dict(saved["model"])
        tokens = saved["tokens"]
    model.to(args.device)
    tokens = tokens.to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    for step in range(args.steps):
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(json.dumps({"step": step, "loss": loss.item()}))


if __name__ == "__main__":
    main()
