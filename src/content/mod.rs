//! Documents the server hands to agents, written for thoughtbox.

/// The compact notation guide returned by the `cipher` operation.
pub const CIPHER_GUIDE: &str = include_str!("cipher.md");

/// The reasoning patterns guide attached to thoughts with `includeGuide: true`.
pub const PATTERNS_GUIDE: &str = include_str!("patterns.md");
