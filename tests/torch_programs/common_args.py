"""Arguments the example PyTorch programs share (imported by them as an ordinary helper module)."""
import argparse


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--save-init", help="save the initial weights and the data here, then train")
    p.add_argument("--init", help="start from weights and data saved with --save-init")
    return p
