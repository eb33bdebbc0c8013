"""Streams an answer from `troupe serve` with the official `openai` package.

Usage: python openai_stream.py BASE_URL TOKEN

Against the `trio` team of tests/serve_stream.rs, whose answering agent's
model holds its stream open after its first tokens: prints
`first RUN_ID "PIECE"` (the piece as JSON) as soon as the first content delta arrives, waits for a
line on stdin (the test checks the run is still under way, then lets the
model go on), reads the stream to its end and prints
`{"content": JOINED_DELTAS, "usage": TOTAL_TOKENS}`. Exits non-zero,
saying why, when a check fails.
"""

import json
import sys

import openai


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")


def main():
    base, token = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0, timeout=60)
    raw = client.chat.completions.with_raw_response.create(
        model="trio",
        messages=[{"role": "user", "content": "actors, in one line"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    run = raw.headers.get("x-troupe-run")
    check(run, f"no X-Troupe-Run header: {dict(raw.headers)}")
    pieces, usage, finish, told = [], None, None, False
    for chunk in raw.parse():
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            piece = choice.delta.content
            if piece:
                pieces.append(piece)
                if not told:
                    print(f"first {run} {json.dumps(piece)}", flush=True)
                    check(sys.stdin.readline().strip() == "go", "no go from the test")
                    told = True
            finish = choice.finish_reason or finish
    check(finish == "stop", f"finish: {finish}")
    check(usage is not None, "no usage chunk")
    print(json.dumps({"content": "".join(pieces), "usage": usage.total_tokens}), flush=True)


if __name__ == "__main__":
    main()
