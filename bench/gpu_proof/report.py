"""The proof's outputs: the table on the terminal and the JSON file."""
from __future__ import annotations

import json

NOTE_WIDTH = 100


def table(results: list) -> str:
    rows = [("check", "status", "figure", "note")]
    for r in results:
        note = r.note if len(r.note) <= NOTE_WIDTH else r.note[:NOTE_WIDTH - 3] + "..."
        rows.append((r.name, r.status, r.figure, note))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3])
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 4)
    return "\n".join(line.rstrip() for line in lines)


def write_json(path: str, payload: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=1, default=str)
        f.write("\n")
