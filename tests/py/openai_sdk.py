"""Drives `troupe serve` with the official `openai` Python package.

Usage: python openai_sdk.py BASE_URL TOKEN

Against the `desk` team of tests/serve_openai_sdk.rs (a writer, then an
editor answering "final one", "final two", ... by how many times it has
spoken in the conversation): a whole answer, a streamed one with its usage
chunk, and stored sessions continued by header and by the `user` field.
Exits non-zero, saying why, at the first check that fails.
"""

import sys

import openai


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")


def main():
    base, token = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0, timeout=30)

    models = [m.id for m in client.models.list()]
    check(models == ["desk"], f"models: {models}")

    whole = client.chat.completions.create(
        model="desk",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}],
    )
    content = whole.choices[0].message.content
    check(content == "final one", f"whole answer: {content!r}")
    check(whole.choices[0].finish_reason == "stop", f"finish: {whole.choices[0].finish_reason}")
    check(not whole.choices[0].message.tool_calls, "the team's tool calls leaked out")
    u = whole.usage
    check(u.completion_tokens > 0 and u.total_tokens == u.prompt_tokens + u.completion_tokens, f"usage: {u}")

    stream = client.chat.completions.create(
        model="desk",
        messages=[{"role": "user", "content": "hello again"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces, usage, finish = [], None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
            finish = choice.finish_reason or finish
    check("".join(pieces) == "final one", f"streamed answer: {pieces!r}")
    check(finish == "stop", f"streamed finish: {finish}")
    check(usage is not None and usage.total_tokens > 0, f"streamed usage: {usage}")

    # A stored session, named by the header: the second turn carries on.
    said = []
    for text in ["one", "two"]:
        r = client.chat.completions.create(
            model="desk",
            messages=[{"role": "user", "content": text}],
            extra_headers={"X-Troupe-Session": "py-header"},
        )
        said.append(r.choices[0].message.content)
    check(said == ["final one", "final two"], f"session by header: {said}")

    # ... and by the `user` field, streamed.
    said = []
    for text in ["one", "two"]:
        s = client.chat.completions.create(
            model="desk", messages=[{"role": "user", "content": text}], user="py-user", stream=True
        )
        said.append("".join(c.choices[0].delta.content or "" for c in s if c.choices))
    check(said == ["final one", "final two"], f"session by user: {said}")

    # A wrong key is refused as the SDK expects.
    bad = openai.OpenAI(base_url=f"{base}/v1", api_key="wrong", max_retries=0)
    try:
        bad.models.list()
        check(False, "a wrong key was accepted")
    except openai.AuthenticationError:
        pass
    print("ok")


if __name__ == "__main__":
    main()
