//! Any bytes a model server answers — read by the OpenAI chat, OpenAI
//! Responses and Anthropic wire formats, as a whole body and as a stream
//! of server-sent events cut into chunks anywhere — give an answer or an
//! error, never a panic. The first byte picks the reader and the chunk
//! size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use troupe_agents::fuzzing;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    match pick % 4 {
        0 => fuzzing::openai_chat(rest),
        1 => fuzzing::openai_responses(rest),
        2 => fuzzing::anthropic(rest),
        _ => fuzzing::sse(rest),
    }
});
