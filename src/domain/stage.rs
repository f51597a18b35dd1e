/// Progressive-disclosure stages 0 to 3 (docs/gateway.md, "Stages and session
/// handles"). A stage is kept on each session and on each connection that
/// keeps state, and never goes down on either (decision 0002).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Stage {
    #[default]
    Entry = 0,
    InitComplete = 1,
    CipherLoaded = 2,
    DomainActive = 3,
}

impl Stage {
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The stage of this number, as the ledger stores it; past the last,
    /// the last (a newer server may add none, but a hand edit could).
    pub fn from_number(n: i64) -> Stage {
        match n {
            i64::MIN..=0 => Stage::Entry,
            1 => Stage::InitComplete,
            2 => Stage::CipherLoaded,
            _ => Stage::DomainActive,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stage::Entry => "entry",
            Stage::InitComplete => "init_complete",
            Stage::CipherLoaded => "cipher_loaded",
            Stage::DomainActive => "domain_active",
        }
    }

    /// The stage after this one.
    pub fn next(self) -> Stage {
        match self {
            Stage::Entry => Stage::InitComplete,
            Stage::InitComplete => Stage::CipherLoaded,
            Stage::CipherLoaded | Stage::DomainActive => Stage::DomainActive,
        }
    }

    /// What to call, in order, to get from `self` to `required`.
    pub fn path_to(self, required: Stage) -> String {
        let mut steps = Vec::new();
        let mut at = self;
        while at < required {
            at = at.next();
            steps.push(match at {
                Stage::Entry => continue,
                Stage::InitComplete => "'start_new' (or 'load_context')",
                Stage::CipherLoaded => "'cipher'",
                Stage::DomainActive => "a domain operation",
            });
        }
        if steps.is_empty() {
            return Stage::Entry.how_to_reach().to_string();
        }
        let finding = if self == Stage::Entry {
            " To find an earlier session's id first, use 'list_sessions' (stage 0; its search matches titles, \
             descriptions and tags). To read a completed session without reopening it, use 'load_context' \
             with reopen: false."
        } else {
            ""
        };
        format!(
            "Call thoughtbox_gateway with operation {} first.{finding}",
            steps.join(", then ")
        )
    }

    /// What to call to reach `self` from the stage below it.
    pub fn how_to_reach(self) -> &'static str {
        match self {
            Stage::Entry => "No action needed.",
            Stage::InitComplete => "Call thoughtbox_gateway with operation 'start_new' or 'load_context' first.",
            Stage::CipherLoaded => "Call thoughtbox_gateway with operation 'cipher' first.",
            Stage::DomainActive => "Call thoughtbox_gateway with a domain operation first.",
        }
    }
}
