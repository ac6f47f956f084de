#!/usr/bin/env python3
"""Copy the agentic-coding entries of InferenceX's master configs, verbatim.

Usage: extract_agentic.py GIT_DIR REVISION [OUT_DIR]
  GIT_DIR: a clone (or bare mirror) of github.com/SemiAnalysisAI/InferenceX
  writes OUT_DIR/{nvidia,amd}-master-agentic.yaml (default: this directory):
  every top-level entry of configs/{nvidia,amd}-master.yaml whose scenarios
  have agentic-coding, with the comment lines right above it, in file order,
  under a header naming the repository, path and revision. Checks that each
  copied entry parses to the same data as in the source file.
"""
import os
import re
import subprocess
import sys

import yaml

KEY = re.compile(r"^[^\s#][^:]*:\s*$")


def blocks(lines):
    starts = [i for i, l in enumerate(lines) if KEY.match(l)]
    out = []
    for n, k in enumerate(starts):
        first = k
        while first > 0 and lines[first - 1].startswith("#"):
            first -= 1
        end = len(lines)
        if n + 1 < len(starts):
            end = starts[n + 1]
            while end > k and lines[end - 1].startswith("#"):
                end -= 1
        body = lines[first:end]
        while body and not body[-1].strip():
            body.pop()
        out.append((lines[k].split(":")[0].strip(), body))
    return out


def main():
    git_dir, rev = sys.argv[1], sys.argv[2]
    out_dir = sys.argv[3] if len(sys.argv) > 3 else os.path.dirname(os.path.abspath(__file__))
    full = subprocess.check_output(["git", "--git-dir", git_dir, "rev-parse", rev], text=True).strip()
    for vendor in ("nvidia", "amd"):
        path = f"configs/{vendor}-master.yaml"
        text = subprocess.check_output(["git", "--git-dir", git_dir, "show", f"{full}:{path}"], text=True)
        source = yaml.safe_load(text)
        kept = []
        for key, body in blocks(text.splitlines()):
            entry = source.get(key)
            if isinstance(entry, dict) and "agentic-coding" in (entry.get("scenarios") or {}):
                kept.append((key, body))
        header = [
            f"# The agentic-coding entries of {path}, copied verbatim (with the comment",
            "# lines right above each) from github.com/SemiAnalysisAI/InferenceX",
            f"# @ {full}.",
            f"# {len(kept)} of its {len(source)} entries; regenerate with",
            f"# tests/data/inferencex/extract_agentic.py <InferenceX git dir> {full[:12]}",
            "",
        ]
        copy = "\n".join(header + [l for _, body in kept for l in body + [""]])
        parsed = yaml.safe_load(copy)
        for key, _ in kept:
            assert parsed[key] == source[key], f"{path}: entry {key} differs after copying"
        assert list(parsed) == [k for k, _ in kept]
        with open(os.path.join(out_dir, f"{vendor}-master-agentic.yaml"), "w") as f:
            f.write(copy)
        print(f"{vendor}-master-agentic.yaml: {len(kept)} of {len(source)} entries")


if __name__ == "__main__":
    main()
