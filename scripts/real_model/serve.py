"""Start llama.cpp's own HTTP server (its OpenAI-compatible API) through the
prebuilt `xllamacpp` wheel, for scripts/real-model-test.sh.

Usage: serve.py --model FILE.gguf --alias NAME --ready-file FILE
                [--port 0] [--ctx 8192] [--threads 1] [--n-predict 256]
                [--chat-template FILE.jinja]

Listens on 127.0.0.1 only. `--port 0` (the default) lets the server pick a
free port, so two runs never race for one. Once the model is loaded and the
server answers, the URL it listens on (`http://127.0.0.1:<port>`) is written
to --ready-file (atomically: written beside it, then renamed), and the
process waits for SIGTERM or SIGINT; on either it exits 0. A failure to load
the model or to listen exits 1 with a message on stderr.
"""

import argparse
import os
import signal
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="the GGUF file to serve")
    ap.add_argument("--alias", required=True, help="the model id the API reports and accepts")
    ap.add_argument("--ready-file", required=True, help="where to write the URL once ready")
    ap.add_argument("--port", type=int, default=0, help="0: a free port the server picks")
    ap.add_argument("--ctx", type=int, default=8192, help="the context window, in tokens")
    # One thread: on a shared 2-core machine llama.cpp's threads wait for
    # each other at every step, and two threads measured half the speed of
    # one while the other core was busy (docs/providers-local-test.md).
    ap.add_argument("--threads", type=int, default=1, help="CPU threads for generation")
    # A tiny model at temperature 0 can repeat itself to the end of the
    # context; the server-side cap keeps every answer bounded in time.
    ap.add_argument("--n-predict", type=int, default=256, help="the most tokens one answer may have")
    ap.add_argument(
        "--chat-template",
        help="a Jinja chat template to use instead of the model's own (which has no tools)",
    )
    args = ap.parse_args()

    # Block the stop signals before the server's threads start, so they
    # inherit the mask and sigwait below is the one place they arrive.
    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)

    try:
        import xllamacpp as xlc
    except ImportError as e:
        print(f"serve.py: xllamacpp is not installed in this Python: {e}", file=sys.stderr)
        return 1

    params = xlc.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.n_predict = args.n_predict
    params.use_jinja = True
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as f:
            params.chat_template = f.read()
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    # Deterministic sampling: the same prompt gives the same answer run to run.
    params.sampling.temp = 0.0
    params.sampling.seed = 42
    # No reuse of an earlier request's cached prompt: a reused prefix changes
    # the batch split, and with it the last bits of the logits, so the same
    # request could get a different answer depending on what came before.
    params.cache_prompt = False

    try:
        server = xlc.Server(params)
    except Exception as e:  # the binding raises on a bad model or a bind failure
        print(f"serve.py: llama.cpp's server did not start: {e}", file=sys.stderr)
        return 1

    url = server.listening_address
    if not url:
        print("serve.py: llama.cpp's server reports no listening address", file=sys.stderr)
        return 1
    tmp = f"{args.ready_file}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(url.rstrip("/") + "\n")
    os.replace(tmp, args.ready_file)
    print(f"serve.py: ready at {url}", file=sys.stderr, flush=True)

    signal.sigwait(stop)
    print("serve.py: stopping", file=sys.stderr, flush=True)
    # The server's destructor joins its threads; exiting the process is the
    # bounded way to stop it.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
