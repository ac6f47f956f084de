#!/usr/bin/env bash
# Locates, or builds once per machine, llama.cpp's llama-server (CPU) and small
# random-weight GGUF models for the real-engine integration tests
# (tests/integration, docs/testing.md).
#
#   scripts/llama-server.sh            # prints KEY=VALUE lines on stdout
#
# Sources, in order:
#   LLAMA_SERVER=/path/to/llama-server LLAMA_MODEL=/path/to/model.gguf
#       use an existing build as is (nothing is built).
#   AGENTPERF_PEERS_DIR=DIR
#       DIR holds build-llama-server.sh and a llama.cpp-<commit>-server.tar.xz
#       source snapshot; the server is built from it into
#       ${AGENTPERF_CACHE_DIR:-/var/cache/agentperf}/llama-server-<hash of the tarball>
#       (outside the build tree, reused while complete: a stamp file is written
#       last). If that cache root is not writable, ~/.cache/agentperf is used.
#
# Prints (stdout):
#   LLAMA_SERVER=...       the llama-server binary
#   LLAMA_MODEL=...        the model to test with (vocab 4,096, context 16,384)
#   LLAMA_MODEL_V32K=...   the same shape with a 32,000-token vocabulary (peers build only)
#   LLAMA_SERVER_COMMIT=...  llama.cpp commit of the snapshot (peers build only)
# Exit status: 0 ok; 3 no source configured (neither variable set, or unusable);
# 1 the build failed. Build output goes to stderr and to build.log in the cache.
set -euo pipefail

die() { echo "llama-server.sh: $1" >&2; exit "${2:-1}"; }

if [[ -n "${LLAMA_SERVER:-}" ]]; then
  [[ -x "$LLAMA_SERVER" ]] || die "LLAMA_SERVER=$LLAMA_SERVER is not an executable file" 3
  [[ -n "${LLAMA_MODEL:-}" ]] || die "LLAMA_SERVER is set but LLAMA_MODEL (a .gguf model) is not" 3
  [[ -s "$LLAMA_MODEL" ]] || die "LLAMA_MODEL=$LLAMA_MODEL is not a non-empty file" 3
  echo "LLAMA_SERVER=$(cd "$(dirname "$LLAMA_SERVER")" && pwd)/$(basename "$LLAMA_SERVER")"
  echo "LLAMA_MODEL=$(cd "$(dirname "$LLAMA_MODEL")" && pwd)/$(basename "$LLAMA_MODEL")"
  exit 0
fi

peers=${AGENTPERF_PEERS_DIR:-}
[[ -n "$peers" ]] || die "no llama-server source: set AGENTPERF_PEERS_DIR (a folder with build-llama-server.sh and llama.cpp-*-server.tar.xz) or LLAMA_SERVER and LLAMA_MODEL" 3
[[ -d "$peers" ]] || die "AGENTPERF_PEERS_DIR=$peers is not a directory" 3
peers=$(cd "$peers" && pwd)
builder="$peers/build-llama-server.sh"
[[ -f "$builder" ]] || die "$builder is missing" 3
shopt -s nullglob
tarballs=("$peers"/llama.cpp-*-server.tar.xz)
shopt -u nullglob
((${#tarballs[@]} == 1)) || die "expected exactly one llama.cpp-*-server.tar.xz in $peers, found ${#tarballs[@]}" 3
tarball=${tarballs[0]}
commit=$(basename "$tarball"); commit=${commit#llama.cpp-}; commit=${commit%-server.tar.xz}

# The cache key is the source snapshot; the stamp also records the build and
# model scripts, so a change to either rebuilds in place.
hash=$(sha256sum "$tarball" | cut -c1-12)
shopt -s nullglob
inputs=("$tarball" "$builder" "$peers"/*.py)
shopt -u nullglob
stamp_want=$(cat "${inputs[@]}" | sha256sum | cut -d' ' -f1)

root=${AGENTPERF_CACHE_DIR:-/var/cache/agentperf}
if ! mkdir -p "$root" 2>/dev/null || [[ ! -w "$root" ]]; then
  [[ -z "${AGENTPERF_CACHE_DIR:-}" ]] || die "AGENTPERF_CACHE_DIR=$root is not writable"
  root=${XDG_CACHE_HOME:-$HOME/.cache}/agentperf
  mkdir -p "$root"
fi
out="$root/llama-server-$hash"
stamp="$out/.complete"

complete() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$stamp_want" && -x "$out/bin/llama-server" &&
     -s "$out/models/rand-v4k.gguf" && -s "$out/models/rand-v32k.gguf" ]]
}

if ! complete; then
  # One builder per machine at a time; the others wait here, then reuse it.
  exec 9>"$out.lock"
  if ! flock -n 9; then
    echo "llama-server.sh: waiting for another build of $out" >&2
    flock 9
  fi
  if ! complete; then
    rm -f "$stamp"
    # A stamp from other scripts means a stale binary: start over.
    [[ -x "$out/bin/llama-server" && ! -f "$out/.building" ]] && rm -rf "$out"
    # The model writer needs numpy for Debian's /usr/bin/python3 (the builder's
    # choice); install python3-numpy when we may (root, or sudo without a password).
    py=/usr/bin/python3; [[ -x $py ]] || py=python3
    if ! "$py" -c 'import numpy' 2>/dev/null; then
      sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo -n"
      echo "llama-server.sh: installing python3-numpy (the model writer needs it)" >&2
      apt=($sudo env DEBIAN_FRONTEND=noninteractive apt-get)
      { "${apt[@]}" install -y --no-install-recommends python3-numpy ||
          { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends python3-numpy; }; } >&2 ||
        die "python3-numpy is needed to write the test models: apt-get install python3-numpy"
    fi
    mkdir -p "$out"
    : >"$out/.building"
    echo "llama-server.sh: building llama.cpp $commit llama-server into $out (a few minutes; log: $out/build.log)" >&2
    if ! bash "$builder" "$out" >"$out/build.log" 2>&1; then
      tail -n 30 "$out/build.log" >&2
      die "building llama-server failed (full log: $out/build.log)"
    fi
    rm -f "$out/.building"
    echo "$stamp_want" >"$stamp.tmp" && mv "$stamp.tmp" "$stamp"
  fi
  flock -u 9
fi

echo "LLAMA_SERVER=$out/bin/llama-server"
echo "LLAMA_MODEL=$out/models/rand-v4k.gguf"
echo "LLAMA_MODEL_V32K=$out/models/rand-v32k.gguf"
echo "LLAMA_SERVER_COMMIT=$commit"
