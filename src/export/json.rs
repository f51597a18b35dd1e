//! The SessionExport v1.0 JSON form: the session, its ThoughtNodes in
//! creation order and their `next` lists, streamed to the writer one
//! thought at a time (a `serde` sequence over the source), so that memory
//! does not grow with the session.

use std::cell::RefCell;
use std::io::Write;

use serde::{Serialize, Serializer, ser::SerializeSeq};

use super::{ImportFitness, Layout, NextLinks, SessionSource, VERSION, json_written};
use crate::domain::Session;
use crate::error::{Error, Result};

/// SessionExport v1.0 with its nodes streamed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StreamedExport<'a> {
    version: &'static str,
    session: &'a Session,
    nodes: StreamedNodes<'a>,
    exported_at: String,
}

pub(super) struct StreamedNodes<'a> {
    source: &'a dyn SessionSource,
    next: NextLinks,
    /// What an import would refuse, checked as the nodes go by (such a
    /// session is not exported); `None` when it was checked before.
    fitness: RefCell<Option<ImportFitness<'a>>>,
    /// The source's own error, kept whole: serde passes only its text on.
    failure: RefCell<Option<Error>>,
}

impl Serialize for StreamedNodes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        let mut write_error = None;
        let mut fitness = self.fitness.borrow_mut().take();
        let walked = self
            .source
            .each_thought(&mut |t| {
                if let Some(fitness) = &mut fitness {
                    fitness.thought(&t)?;
                }
                seq.serialize_element(&self.next.node(t)).map_err(|e| {
                    write_error = Some(e);
                    Error::Internal("stopped writing".into())
                })
            })
            .and_then(|()| fitness.map_or(Ok(()), |f| f.finish(self.next.prevs())));
        if let Some(e) = write_error {
            return Err(e);
        }
        if let Err(e) = walked {
            let text = e.to_string();
            *self.failure.borrow_mut() = Some(e);
            return Err(serde::ser::Error::custom(text));
        }
        seq.end()
    }
}

pub(super) fn write_json<'a>(
    out: &mut dyn Write,
    layout: Layout,
    source: &'a dyn SessionSource,
    next: NextLinks,
    fitness: Option<ImportFitness<'a>>,
) -> Result<()> {
    let doc = StreamedExport {
        version: VERSION,
        session: source.session(),
        nodes: StreamedNodes {
            source,
            next,
            fitness: RefCell::new(fitness),
            failure: RefCell::new(None),
        },
        exported_at: crate::domain::now(),
    };
    let result = match layout {
        Layout::Pretty => doc.serialize(&mut serde_json::Serializer::pretty(out)),
        Layout::Compact => doc.serialize(&mut serde_json::Serializer::new(out)),
    };
    if let Some(e) = doc.nodes.failure.take() {
        return Err(e);
    }
    result.map_err(json_written)
}
