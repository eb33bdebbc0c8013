//! The Agent2Agent (A2A) protocol, client side: a remote A2A agent as a
//! participant ([`A2aAgent`]), the client it calls through
//! ([`A2aClient`]: JSON-RPC over HTTP, protocol 1.0, as the official SDKs
//! speak it), and the protocol's types ([`types`]), which `troupe serve`
//! uses too when it serves a workflow as an A2A agent.

mod agent;
mod client;
mod error;
mod exchange;
mod jsonrpc;
mod remote_task;
pub mod types;

pub use agent::{A2aAgent, CONTEXT_KEY, TASK_KEY, WAITING_KEY};
pub use client::{A2aClient, A2aClientBuilder, A2aStream};
pub use error::A2aError;
pub use exchange::settle_cancels;
