"""A character-level LSTM language model: embedding, two-layer LSTM, AdamW, gradient clipping."""
import json

import torch
import torch.nn as nn

from common_args import parser

TEXT = "the quick brown fox jumps over the lazy dog. " * 8


class CharModel(nn.Module):
    def __init__(self, vocab, hidden=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.lstm = nn.LSTM(16, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx, state=None):
        out, state = self.lstm(self.embed(idx), state)
        return self.head(out), state


def main():
    args = parser(__doc__).parse_args()
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    torch.manual_seed(0)
    model = CharModel(len(chars))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    model.to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    seq = 24
    starts = list(range(0, 8 * seq, seq))
    x = torch.stack([data[s:s + seq] for s in starts]).to(args.device)
    y = torch.stack([data[s + 1:s + seq + 1] for s in starts]).to(args.device)
    for step in range(args.steps):
        logits, _ = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(json.dumps({"step": step, "loss": loss.item()}))


if __name__ == "__main__":
    main()
