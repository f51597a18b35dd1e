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
use crate::store::ThoughtQuery;

const CRITIC_PROMPT: &str = "You review one step of someone's reasoning. Point out logical errors, unstated assumptions, \
missed alternatives and unconsidered edge cases, and suggest concrete improvements. Be brief and specific; \
if the step is sound, say so in one sentence.";

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
    let session_id = t.session_id.clone();
    let number = t.data.thought_number;
    let query = match t.data.branch_id.clone() {
        Some(b) => ThoughtQuery::Branch(b),
        None => ThoughtQuery::Last(6),
    };
    let earlier = gw.blocking(move |s| s.read_thoughts(&session_id, &query)).await?;
    let mut prompt = String::from("Earlier thoughts:\n");
    let context: Vec<&Thought> = earlier.iter().filter(|e| e.data.thought_number < number).collect();
    for e in context.iter().rev().take(5).rev() {
        prompt.push_str(&format!("Thought {}: {}\n", e.data.thought_number, e.data.thought));
    }
    prompt.push_str(&format!(
        "\nThought to review (#{number}):\n{}\n\nGive a critical analysis of this thought.",
        t.data.thought
    ));
    let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 1000)
        .with_system_prompt(CRITIC_PROMPT);
    let call = ctx.peer.create_message(params);
    let result = tokio::time::timeout(gw.options.critique_timeout, call)
        .await
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
    Ok(Critique {
        text,
        model: result.model,
        timestamp: domain::now(),
    })
}
