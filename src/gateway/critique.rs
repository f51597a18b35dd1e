//! Critique of a thought through MCP sampling (`sampling/createMessage`).
//!
//! rmcp marks sampling deprecated because protocol 2026-07-28 drops
//! server-to-client requests; clients that initialise normally land on
//! 2025-11-25, where it works, and the contract asks for it. The capability
//! check, the timeout and the `SAMPLING_NOT_SUPPORTED` answer cover clients
//! that cannot or do not answer.
#![allow(deprecated)]

use rmcp::RoleServer;
use rmcp::model::{CreateMessageRequestParams, SamplingMessage};
use rmcp::service::RequestContext;

use super::Gateway;
use crate::domain::{self, Critique, Thought};
use crate::error::{Error, Result};

const CRITIC_PROMPT: &str = "You review one step of someone's reasoning. Point out logical errors, unstated assumptions, \
missed alternatives and unconsidered edge cases, and suggest concrete improvements. Be brief and specific; \
if the step is sound, say so in one sentence.";

/// The most critique text stored, the thought text's limit: a thought and
/// its critique then always fit in one answer together. The prompt asks
/// for at most 1,000 tokens; a client sending megabytes anyway has its
/// critique cut, with a note saying so.
const MAX_CRITIQUE_BYTES: usize = domain::MAX_THOUGHT_BYTES;

/// `text` cut to [`MAX_CRITIQUE_BYTES`] (between two characters), with a
/// note of how long it was.
fn bounded(mut text: String) -> String {
    if text.len() <= MAX_CRITIQUE_BYTES {
        return text;
    }
    let sent = text.len();
    let note =
        format!("\n[critique cut here: the model sent {sent} bytes; thoughtbox keeps at most {MAX_CRITIQUE_BYTES}]");
    let keep = text.floor_char_boundary(MAX_CRITIQUE_BYTES - note.len());
    text.truncate(keep);
    text.push_str(&note);
    text
}

/// How many earlier thoughts go with a sampling request as context.
const CONTEXT_THOUGHTS: u32 = 5;

/// "Thought 3", or "Thought 3 (branch alt)" for a branch's thought.
fn label(t: &Thought) -> String {
    match &t.data.branch_id {
        Some(b) => format!("Thought {} (branch {b})", t.data.thought_number),
        None => format!("Thought {}", t.data.thought_number),
    }
}

/// Ask the client's model to critique a thought through MCP sampling.
pub(crate) async fn request_critique(gw: &Gateway, ctx: &RequestContext<RoleServer>, t: &Thought) -> Result<Critique> {
    let supports = ctx
        .peer
        .peer_info()
        .map(|info| info.capabilities.sampling.is_some())
        .unwrap_or(false);
    if !supports {
        return Err(Error::SamplingNotSupported(
            "the client did not declare the sampling capability".into(),
        ));
    }
    // The thoughts before this one on its path (CONTRACT §4: up to five):
    // for a branch, its earlier thoughts and then the main chain back from
    // the fork point; never "the highest numbers", which miss a branch's
    // ancestry and get backward-numbered thoughts wrong.
    let node = t.node_id.clone();
    let earlier = gw.blocking(move |s| s.thoughts_before(&node, CONTEXT_THOUGHTS)).await?;
    let mut prompt = String::from(if earlier.is_empty() {
        "No earlier thoughts: this is the first step.\n"
    } else {
        "Earlier thoughts, oldest first:\n"
    });
    for e in &earlier {
        prompt.push_str(&format!("{}: {}\n", label(e), e.data.thought));
    }
    prompt.push_str(&format!(
        "\n{} to review:\n{}\n\nGive a critical analysis of this thought.",
        label(t),
        t.data.thought
    ));
    let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 1000)
        .with_system_prompt(CRITIC_PROMPT);
    let call = tokio::time::timeout(gw.options.critique_timeout, ctx.peer.create_message(params));
    let result = super::from_client(ctx, call)
        .await
        .ok_or_else(|| {
            Error::SamplingNotSupported(
                "the request was cancelled, or the server is stopping, before the client answered the sampling \
                 request"
                    .into(),
            )
        })?
        .map_err(|_| {
            Error::SamplingNotSupported(format!(
                "the client did not answer the sampling request within {} s (--critique-timeout)",
                gw.options.critique_timeout.as_secs()
            ))
        })?
        .map_err(|e| Error::SamplingNotSupported(format!("the sampling request failed: {e}")))?;
    let text = result
        .message
        .content
        .into_vec()
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    if text.trim().is_empty() {
        return Err(Error::SamplingNotSupported(
            "the client answered the sampling request without text".into(),
        ));
    }
    if text.len() > MAX_CRITIQUE_BYTES {
        tracing::warn!(
            bytes = text.len(),
            "the client's critique is longer than thoughtbox keeps: cut"
        );
    }
    // NUL is refused in everything a client sends as an argument; the
    // client's sampling answer is kept without it too (SQLite's text
    // functions stop at it).
    let no_nul = |s: String| {
        if s.contains('\0') {
            s.replace('\0', "\u{FFFD}")
        } else {
            s
        }
    };
    Ok(Critique {
        text: bounded(no_nul(text)),
        model: no_nul(result.model),
        timestamp: domain::now(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_critique_over_the_limit_is_cut_between_characters_with_a_note() {
        assert_eq!(bounded("short".into()), "short");
        let exact = "a".repeat(MAX_CRITIQUE_BYTES);
        assert_eq!(bounded(exact.clone()), exact);
        // Three-byte characters, so the cut falls inside one unless moved.
        let long = "€".repeat(MAX_CRITIQUE_BYTES);
        let cut = bounded(long.clone());
        assert!(cut.len() <= MAX_CRITIQUE_BYTES, "{}", cut.len());
        assert!(cut.len() > MAX_CRITIQUE_BYTES - 200);
        assert!(cut.ends_with(&format!(
            "the model sent {} bytes; thoughtbox keeps at most {MAX_CRITIQUE_BYTES}]",
            long.len()
        )));
        assert!(long.starts_with(cut.split('\n').next().unwrap_or_default()));
    }
}
