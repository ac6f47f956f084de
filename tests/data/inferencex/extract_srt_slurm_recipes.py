#!/usr/bin/env python3
"""Copy the engine settings of the srt-slurm recipes the agentic master-config copies name.

Usage: extract_srt_slurm_recipes.py GIT_DIR REVISION [OUT_DIR]
  GIT_DIR: a clone (or bare mirror) of github.com/SemiAnalysisAI/InferenceX
  For every CONFIG_FILE=recipes/<rest> (or its other spelling,
  CONFIG_FILE=benchmarks/multi_node/srt-slurm-recipes/<rest>, which the GB300
  runner copies to the same path inside its srt-slurm checkout) in
  OUT_DIR/{nvidia,amd}-master-agentic.yaml (default OUT_DIR: this directory) whose
  benchmarks/multi_node/srt-slurm-recipes/<rest> exists at REVISION, writes
  OUT_DIR/benchmarks/multi_node/srt-slurm-recipes/<rest> holding the recipe's
  `name` and its backend's engine configs (sglang_config, vllm_config or
  trtllm_config: the part agentperf reads; the environments, Slurm and
  benchmark sections are left out) under a header naming the source; an
  override file (base: and zip_override_*: sections, named as
  FILE:zip_override_NAME[i]) keeps each section so trimmed. Checks
  that each copy parses to the same engine configs as the source. Prints the
  CONFIG_FILEs the revision does not hold (they live in srt-slurm itself).
"""
import os
import re
import subprocess
import sys

import yaml

PREFIXES = ("recipes/", "benchmarks/multi_node/srt-slurm-recipes/")
CONFIG = re.compile(r"CONFIG_FILE=((?:recipes/|benchmarks/multi_node/srt-slurm-recipes/)[^\s\"']+)")
ENGINE_KEYS = ("sglang_config", "vllm_config", "trtllm_config")


def trimmed(recipe):
    """The recipe's name and its backend's engine configs."""
    backend = recipe.get("backend") or {}
    kept = {"name": recipe.get("name", "")}
    engine = {k: backend[k] for k in ENGINE_KEYS if k in backend}
    if engine:
        kept["backend"] = engine
    return kept


def main():
    git_dir, rev = sys.argv[1], sys.argv[2]
    out_dir = sys.argv[3] if len(sys.argv) > 3 else os.path.dirname(os.path.abspath(__file__))
    full = subprocess.check_output(["git", "--git-dir", git_dir, "rev-parse", rev], text=True).strip()
    names = set()
    for vendor in ("nvidia", "amd"):
        with open(os.path.join(out_dir, f"{vendor}-master-agentic.yaml")) as f:
            names.update(CONFIG.findall(f.read()))
    copied, missing = 0, []
    # A variant (FILE:zip_override_NAME[i]) names its file: the file is copied
    # once, its base and every override section trimmed alike.
    names = {name.split(":", 1)[0] for name in names}
    for name in sorted(names):
        rest = next(name[len(p):] for p in PREFIXES if name.startswith(p))
        source = f"benchmarks/multi_node/srt-slurm-recipes/{rest}"
        try:
            text = subprocess.check_output(["git", "--git-dir", git_dir, "show", f"{full}:{source}"], text=True,
                                           stderr=subprocess.DEVNULL)
        except subprocess.CalledProcessError:
            missing.append(name)
            continue
        recipe = yaml.safe_load(text)
        if "base" in recipe:  # srt-slurm's override file: a base recipe and zip_override_* sections
            kept = {"base": trimmed(recipe["base"])}
            for key, section in recipe.items():
                if key.startswith("zip_override_"):
                    kept[key] = trimmed(section)
        else:
            kept = trimmed(recipe)
        header = (f"# The name and engine settings of {source}\n"
                  f"# in github.com/SemiAnalysisAI/InferenceX @ {full}\n"
                  f"# (environments, Slurm and benchmark sections left out); regenerate with\n"
                  f"# tests/data/inferencex/extract_srt_slurm_recipes.py <InferenceX git dir> {full[:12]}\n")
        body = yaml.safe_dump(kept, sort_keys=False, width=1000)
        if yaml.safe_load(body) != kept:
            sys.exit(f"{source}: the trimmed copy does not parse to the same settings")
        path = os.path.join(out_dir, source)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(header + body)
        copied += 1
    print(f"{copied} recipes copied; {len(missing)} not at {full[:12]}:")
    for name in missing:
        print(f"  {name}")


if __name__ == "__main__":
    main()
