//! What the search and patterns benches share: a seeded generator for
//! their synthetic ledgers, and the latency summary they print.

use std::time::Duration;

/// xorshift64: the same ledger from the same seed, with no dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Print p50, p99 and the slowest of `samples` under `label` (bench output).
pub fn stats(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let pct = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3;
    println!(
        "{label}: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} runs)",
        pct(0.5),
        pct(0.99),
        pct(1.0),
        samples.len()
    );
}
