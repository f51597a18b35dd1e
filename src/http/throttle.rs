//! A backoff on failed sign-ins, per client address, so that the login form
//! cannot be used to guess the token at the speed of the network.
//!
//! After a failure, the next attempt from that address is checked no
//! sooner than a delay that doubles with each failure, from 50 ms up to
//! 1 s, and the failure itself is answered only once that delay has
//! passed. At most [`MAX_WAITING`] attempts of one address wait at a time;
//! more are refused without being checked, so that sending many at once
//! gains little (those waiting share one check time). A success forgets the address's failures, and so does a
//! minute without one: an attacker slows their own address, and a user on
//! another address is not slowed at all.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The delay after a first failure; it doubles with each next one.
const BASE: Duration = Duration::from_millis(50);
/// The longest delay between two checks of one address.
const MAX_DELAY: Duration = Duration::from_secs(1);
/// Failures older than this are forgotten.
const FORGET: Duration = Duration::from_secs(60);
/// Attempts of one address waiting for their turn or answer at once.
const MAX_WAITING: u32 = 4;
/// Addresses remembered at most; past it, the forgotten ones are dropped
/// and, if that is not enough, those that failed longest ago.
const MAX_PEERS: usize = 4096;

#[derive(Debug, Default)]
pub(super) struct Throttle {
    peers: Mutex<HashMap<IpAddr, Peer>>,
}

#[derive(Debug)]
struct Peer {
    /// Failures since the last success, within [`FORGET`] of each other.
    failures: u32,
    /// When the last failure was.
    failed_at: Instant,
    /// No attempt is checked before this.
    next: Instant,
    /// Attempts holding a turn.
    waiting: u32,
}

/// An attempt's turn: checked at [`Turn::at`], then said to have failed
/// or succeeded. Dropped without either (the client left), it only gives
/// its place back.
#[derive(Debug)]
pub(super) struct Turn<'a> {
    throttle: &'a Throttle,
    key: IpAddr,
    at: Instant,
    done: bool,
}

/// Too many attempts of one address at once.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Busy;

/// The delay after `failures` failures in a row.
fn delay(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    BASE.saturating_mul(1 << (failures - 1).min(16)).min(MAX_DELAY)
}

/// The address an attempt (or a connection) is counted under: an IPv6
/// client is given a whole /64 by its network, so that is what one client is.
pub(super) fn key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl Throttle {
    /// A turn for an attempt from `ip`, or [`Busy`] if that address has
    /// too many waiting already.
    pub(super) fn turn(&self, ip: IpAddr) -> Result<Turn<'_>, Busy> {
        let now = Instant::now();
        let key = key(ip);
        let mut peers = self.peers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if peers.len() >= MAX_PEERS && !peers.contains_key(&key) {
            peers.retain(|_, p| p.waiting > 0 || now.duration_since(p.failed_at) < FORGET);
            // Still full (many addresses failing at once): the addresses
            // that failed longest ago and wait for nothing are forgotten,
            // rather than new ones made to share a turn, which would let
            // an attacker with many addresses slow everyone else. Those
            // waiting are at most the connection cap, far fewer.
            if peers.len() >= MAX_PEERS {
                let mut idle: Vec<(Instant, IpAddr)> = peers
                    .iter()
                    .filter(|(_, p)| p.waiting == 0)
                    .map(|(k, p)| (p.failed_at, *k))
                    .collect();
                idle.sort_unstable();
                let excess = peers.len() + 1 - MAX_PEERS;
                for (_, old) in idle.into_iter().take(excess) {
                    peers.remove(&old);
                }
            }
        }
        let peer = peers.entry(key).or_insert(Peer {
            failures: 0,
            failed_at: now,
            next: now,
            waiting: 0,
        });
        if peer.failures > 0 && now.duration_since(peer.failed_at) >= FORGET {
            peer.failures = 0;
        }
        if peer.waiting >= MAX_WAITING {
            return Err(Busy);
        }
        peer.waiting += 1;
        Ok(Turn {
            throttle: self,
            key,
            at: peer.next.max(now),
            done: false,
        })
    }

    fn finish(&self, key: IpAddr, failed: bool) -> Duration {
        let now = Instant::now();
        let mut peers = self.peers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(peer) = peers.get_mut(&key) else {
            return Duration::ZERO;
        };
        peer.waiting = peer.waiting.saturating_sub(1);
        let wait = if failed {
            peer.failures = peer.failures.saturating_add(1);
            peer.failed_at = now;
            let wait = delay(peer.failures);
            peer.next = peer.next.max(now + wait);
            wait
        } else {
            peer.failures = 0;
            peer.next = now;
            Duration::ZERO
        };
        if peer.waiting == 0 && peer.failures == 0 {
            peers.remove(&key);
        }
        wait
    }
}

impl Turn<'_> {
    /// Wait until this attempt may be checked.
    pub(super) async fn wait(&self) {
        tokio::time::sleep_until(self.at).await;
    }

    /// The attempt failed: wait out its delay before it is answered.
    pub(super) async fn failed(mut self) {
        self.done = true;
        let wait = self.throttle.finish(self.key, true);
        tokio::time::sleep(wait).await;
    }

    /// The attempt succeeded: the address's failures are forgotten.
    pub(super) fn succeeded(mut self) {
        self.done = true;
        self.throttle.finish(self.key, false);
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if !self.done {
            let mut peers = self
                .throttle
                .peers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(peer) = peers.get_mut(&self.key) {
                peer.waiting = peer.waiting.saturating_sub(1);
                if peer.waiting == 0 && peer.failures == 0 {
                    peers.remove(&self.key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn the_delay_doubles_up_to_a_second() {
        assert_eq!(delay(0), Duration::ZERO);
        assert_eq!(delay(1), Duration::from_millis(50));
        assert_eq!(delay(2), Duration::from_millis(100));
        assert_eq!(delay(5), Duration::from_millis(800));
        assert_eq!(delay(6), MAX_DELAY);
        assert_eq!(delay(u32::MAX), MAX_DELAY);
    }

    #[test]
    fn one_ipv6_network_is_one_client() {
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let same: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(key(one), key(same));
        assert_ne!(key(one), key(other));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(key(mapped), A);
    }

    #[tokio::test(start_paused = true)]
    async fn failures_slow_their_address_only_and_a_success_forgets_them() {
        let throttle = Throttle::default();
        let start = Instant::now();
        for _ in 0..8 {
            let turn = throttle.turn(A).unwrap();
            turn.wait().await;
            turn.failed().await;
        }
        // 50 + 100 + ... + 800 ms, then 1 s each.
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(50 + 100 + 200 + 400 + 800 + 1000 + 1000 + 1000)
        );
        // Another address is not slowed.
        let other = throttle.turn(B).unwrap();
        assert!(other.at <= Instant::now());
        other.succeeded();
        // The slowed one waits for its turn, then succeeds and is forgotten.
        let turn = throttle.turn(A).unwrap();
        turn.wait().await;
        turn.succeeded();
        let turn = throttle.turn(A).unwrap();
        assert!(turn.at <= Instant::now());
        turn.succeeded();
        assert!(throttle.peers.lock().unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn many_attempts_at_once_are_refused_past_the_bound() {
        let throttle = Throttle::default();
        let turns: Vec<_> = (0..MAX_WAITING).map(|_| throttle.turn(A).unwrap()).collect();
        assert_eq!(throttle.turn(A).unwrap_err(), Busy);
        // A client that left gives its place back.
        drop(turns);
        assert!(throttle.turn(A).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_forgotten_after_a_quiet_minute() {
        let throttle = Throttle::default();
        for _ in 0..6 {
            let turn = throttle.turn(A).unwrap();
            turn.wait().await;
            turn.failed().await;
        }
        tokio::time::advance(FORGET).await;
        let turn = throttle.turn(A).unwrap();
        turn.wait().await;
        let started = Instant::now();
        turn.failed().await;
        assert_eq!(started.elapsed(), BASE);
    }

    /// Addresses past the table's size do not share a turn: the one that
    /// failed longest ago is forgotten instead.
    #[tokio::test(start_paused = true)]
    async fn a_full_table_forgets_the_oldest_rather_than_merge_new_addresses() {
        let throttle = Throttle::default();
        for i in 0..MAX_PEERS as u32 {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            throttle.turn(ip).unwrap().failed().await;
            tokio::time::advance(Duration::from_millis(1)).await;
        }
        let fresh = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
        let turn = throttle.turn(fresh).unwrap();
        assert!(
            turn.at <= Instant::now(),
            "a new address is not slowed by others' failures"
        );
        turn.succeeded();
        let peers = throttle.peers.lock().unwrap();
        assert!(peers.len() < MAX_PEERS);
        assert!(
            !peers.contains_key(&IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000))),
            "the oldest went"
        );
    }
}
