//! The thought text the stdio and versus benches send: the same words for
//! every server measured.

/// A thought of about 550 characters, different each time.
pub fn text(i: usize) -> String {
    let mut s = format!("Step {i}: ");
    let words = [
        "the",
        "cache",
        "invalidation",
        "fails",
        "when",
        "token",
        "refresh",
        "races",
        "with",
        "logout",
        "so",
        "we",
        "measure",
        "latency",
        "under",
        "load",
        "and",
        "compare",
        "against",
        "baseline",
        "before",
        "deciding",
    ];
    let mut k = i;
    while s.len() < 550 {
        s.push_str(words[k % words.len()]);
        s.push(' ');
        k = k.wrapping_mul(31).wrapping_add(7);
    }
    s
}
