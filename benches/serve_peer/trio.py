"""The `serve` workload's peer team for LangGraph's Agent Server (`langgraph dev`).

The same shape as troupe's side (examples/bench/serve.rs): three agents a, b, c
in a row (START -> a -> b -> c -> END), each one call of a scripted chat model
that waits SERVE_LATENCY_MS milliseconds and answers a fixed text ("alpha",
"beta", "gamma"); the thread's messages are the conversation (add_messages), so
a user turn adds 4 messages. The model is a LangChain chat model (so the
server's `messages-tuple` stream carries its token), streaming its one token
after the wait.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph

LATENCY_S = float(os.environ.get("SERVE_LATENCY_MS", "20")) / 1000.0


class Scripted(BaseChatModel):
    """Waits LATENCY_S, then answers `reply` (one chunk when streamed)."""

    reply: str

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        raise NotImplementedError("async only")

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        if LATENCY_S > 0:
            await asyncio.sleep(LATENCY_S)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply))])

    async def _astream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any):
        if LATENCY_S > 0:
            await asyncio.sleep(LATENCY_S)
        chunk = ChatGenerationChunk(message=AIMessageChunk(content=self.reply))
        if run_manager is not None:
            await run_manager.on_llm_new_token(self.reply, chunk=chunk)
        yield chunk


def agent(reply: str):
    model = Scripted(reply=reply)

    async def node(state: MessagesState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    return node


builder = StateGraph(MessagesState)
for name, reply in (("a", "alpha"), ("b", "beta"), ("c", "gamma")):
    builder.add_node(name, agent(reply))
builder.add_edge(START, "a")
builder.add_edge("a", "b")
builder.add_edge("b", "c")
builder.add_edge("c", END)
graph = builder.compile()
