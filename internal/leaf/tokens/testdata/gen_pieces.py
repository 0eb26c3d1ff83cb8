#!/usr/bin/env python3
"""Regenerates o200k_pieces.json: random texts and the pieces that o200k_base's
pre-tokenizer expression splits them into, according to Python's `regex` module (the
engine tiktoken's own educational code uses; tiktoken itself uses Rust's fancy-regex,
with the same semantics for this expression). TestPiecesMatchRegex checks the
hand-written splitter in o200k.go against it.

    python3 -m pip install regex && python3 gen_pieces.py > o200k_pieces.json

For a bigger one-off check: python3 gen_pieces.py 200000 7 > /tmp/p.json and
O200K_PIECES=/tmp/p.json go test -run TestPiecesMatchRegex ./tokens/
"""
import json
import random
import sys

import regex

PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*"
    r"|\s*[\r\n]+"
    r"|\s+(?!\S)"
    r"|\s+"
)

# Characters of every class the expression distinguishes, all assigned since Unicode 6,
# so that differences between Unicode versions cannot show.
ALPHABET = {
    "Lu": "AZÉΩЖDLRS",
    "Ll": "azéωжßstlrevmd",
    "Lt": "ǅᾈ",
    "Lm": "ʰーᵃ",
    "Lo": "日本اאก한",
    "M": "\u0301\u0308\u064b\u0e31\u0903\u20dd\ufe0f",
    "N": "09٣९Ⅻ½²①",
    "space": " \t\n\r\v\f\u0085\u00a0\u2028\u3000",
    "other": "/'.,(){-_\x7f\x00\x1c👍\u200d\ufffdſK",
}
WEIGHTS = {"Lu": 3, "Ll": 6, "Lt": 1, "Lm": 1, "Lo": 2, "M": 2, "N": 3, "space": 6, "other": 5}


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 200)
    pat = regex.compile(PATTERN)
    classes = list(WEIGHTS)
    weights = [WEIGHTS[c] for c in classes]
    cases = []
    for _ in range(count):
        n = rng.randint(1, 24)
        text = "".join(rng.choice(ALPHABET[rng.choices(classes, weights)[0]]) for _ in range(n))
        pieces = pat.findall(text)
        assert "".join(pieces) == text, text
        cases.append({"text": text, "pieces": pieces})
    print("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]")


if __name__ == "__main__":
    main()
