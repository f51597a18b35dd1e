//! Taking connections: each one is served by hyper's HTTP/1 connection
//! with a deadline on its request headers, counted against a cap on the
//! connections open at once, and closed when the client stops reading.
//!
//! `axum::serve` has none of these, so a client that sends nothing, sends
//! its headers a byte at a time, or never reads its answers held its
//! connection (and a descriptor) for ever; enough of them, and clients that
//! hold the token could not connect. None of the bounds need the token, and
//! none cuts a long answer that is being read: an MCP event stream or an
//! Observatory WebSocket lives as long as its client reads it.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::{Instant, Sleep};
use tower_service::Service as _;

use crate::shutdown::Shutdown;

/// The bounds on every connection.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// How long a client has to send a request's headers, from the moment
    /// the server waits for them: a new connection's first request, and
    /// each next one on a kept-alive connection (so this is also how long
    /// an idle kept-alive connection stays open).
    pub header_read: Duration,
    /// How long a write may wait for a client that reads nothing.
    pub write_stall: Duration,
    /// Connections open at once (WebSockets included); past it, new ones
    /// wait in the listener's queue until one closes.
    pub max_connections: usize,
    /// Connections one client address (an IPv6 /64) may hold at once;
    /// past it, a new one is closed at once. Not on loopback, which every
    /// client of the machine shares (they are the user's own), but in
    /// the tests, which have no other address.
    pub per_address: usize,
    pub per_address_on_loopback: bool,
}

/// The header deadline, and so how long a kept-alive connection may idle:
/// longer than the idle connections' lifetime of common HTTP clients'
/// pools (reqwest's and Go's 90 s, Node's and httpx's a few seconds), so
/// that none sends a request into a connection the server is closing (at
/// 10 s, 4-7 % of calls after a 10 s pause failed for pools that keep
/// connections longer); a connection sending nothing still gives its
/// place back.
const HEADER_READ: Duration = Duration::from_secs(120);

/// A client that has read nothing for this long is gone or hostile.
const WRITE_STALL: Duration = Duration::from_secs(30);

/// The cap on connections when the open-file limit allows it: far more
/// than the agents and browsers that share one ledger.
const MAX_CONNECTIONS: usize = 1024;

impl Limits {
    /// The bounds for a process that may open `open_files` files: at most
    /// half of them for connections, so that the ledger, its readers and
    /// the files an export writes still have theirs.
    pub(super) fn for_open_files(open_files: u64) -> Limits {
        let half = usize::try_from(open_files / 2).unwrap_or(usize::MAX);
        Limits {
            header_read: HEADER_READ,
            write_stall: WRITE_STALL,
            max_connections: MAX_CONNECTIONS.min(half).max(16),
            // A quarter of the places: a client busy with public requests
            // (the login page) cannot take them all from one address.
            per_address: (MAX_CONNECTIONS.min(half).max(16) / 4).max(4),
            per_address_on_loopback: false,
        }
        .overridden()
    }

    /// Debug builds (the tests) take smaller bounds from the environment,
    /// so that a test of the deadline does not wait two minutes: e.g.
    /// `THOUGHTBOX_HTTP_LIMITS=header_read_ms=500,max_connections=4`.
    fn overridden(mut self) -> Limits {
        if let Some(n) = debug_limit("header_read_ms") {
            self.header_read = Duration::from_millis(n);
        }
        if let Some(n) = debug_limit("write_stall_ms") {
            self.write_stall = Duration::from_millis(n);
        }
        if let Some(n) = debug_limit("max_connections") {
            self.max_connections = usize::try_from(n).unwrap_or(usize::MAX).max(1);
        }
        if let Some(n) = debug_limit("per_address") {
            self.per_address = usize::try_from(n).unwrap_or(usize::MAX).max(1);
            self.per_address_on_loopback = true;
        }
        self
    }
}

/// The bound `name` given in `THOUGHTBOX_HTTP_LIMITS`, which only debug
/// builds (the tests) read: `header_read_ms`, `write_stall_ms`,
/// `max_connections`, `per_address`, and the Observatory's `send_wait_ms`.
#[cfg(debug_assertions)]
pub(super) fn debug_limit(name: &str) -> Option<u64> {
    let given = std::env::var("THOUGHTBOX_HTTP_LIMITS").ok()?;
    given.split(',').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        if key.trim() == name {
            value.trim().parse().ok()
        } else {
            None
        }
    })
}

#[cfg(not(debug_assertions))]
pub(super) fn debug_limit(_name: &str) -> Option<u64> {
    None
}

/// Connections closed for their address's share, said at most once a
/// minute: a proxy or a container bridge in front of the server gives all
/// its clients one address, and an operator needs to know why they fail.
#[derive(Default)]
struct Refusals {
    since_said: usize,
    said_at: Option<std::time::Instant>,
}

impl Refusals {
    fn refused(&mut self, peer: SocketAddr, share: usize) {
        let ip = peer.ip().to_canonical();
        tracing::debug!("HTTP connection from {ip} closed at once: that address holds {share} already");
        self.since_said += 1;
        if self.said_at.is_some_and(|at| at.elapsed() < Duration::from_secs(60)) {
            return;
        }
        tracing::warn!(
            "closed a new HTTP connection from {ip} at once ({} since the last such warning): one client \
             address holds at most {share} connections (a proxy or container bridge in front of the server \
             gives all its clients its address; docs/http.md, Connections)",
            self.since_said,
        );
        self.since_said = 0;
        self.said_at = Some(std::time::Instant::now());
    }
}

/// Serve `app` on `listener` until `shutdown` begins; then take no more
/// connections, let each finish the request it is answering, and return
/// once they are closed (an upgraded WebSocket is no longer the HTTP
/// server's, and ends with the Observatory).
pub(super) async fn serve(listener: TcpListener, app: Router, limits: Limits, shutdown: Arc<Shutdown>) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let addresses = Arc::new(Addresses::default());
    // Each connection's task holds a receiver: all are gone once
    // `closed()` resolves.
    let (open_tx, open_rx) = watch::channel(());
    let mut refusals = Refusals::default();
    loop {
        // A permit first: at the cap, the next connection waits in the
        // kernel's queue, in order, rather than being taken and dropped.
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit,
            () = shutdown.wait() => break,
        };
        let Ok(permit) = permit else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.wait() => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                accept_failed(e).await;
                continue;
            }
        };
        // Closed at once, giving its place back: this address holds its share.
        let Some(held) = addresses.take(peer.ip(), &limits) else {
            refusals.refused(peer, limits.per_address);
            continue;
        };
        // Without TCP_NODELAY a small answer waits for the client's delayed
        // ACK (Nagle): about 40 ms per request.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("could not set TCP_NODELAY: {e}");
        }
        let io = Guarded::new(tcp, permit, Some(held), limits.write_stall);
        tokio::spawn(connection(
            io,
            peer,
            app.clone(),
            limits,
            shutdown.clone(),
            open_rx.clone(),
        ));
    }
    drop(open_rx);
    drop(listener);
    open_tx.closed().await;
}

/// One connection, until it closes or, once the shutdown begins, has
/// answered the request in hand.
async fn connection(
    io: Guarded,
    peer: SocketAddr,
    app: Router,
    limits: Limits,
    shutdown: Arc<Shutdown>,
    _open: watch::Receiver<()>,
) {
    // Clients that read it (Node's) close an idle connection before the
    // server does, rather than send a request into one being closed.
    let keep_alive = axum::http::HeaderValue::from_str(&format!("timeout={}", limits.header_read.as_secs().max(1)))
        .unwrap_or(axum::http::HeaderValue::from_static("timeout=1"));
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        // The login's backoff is kept per client address, and its form
        // has the header deadline to arrive.
        request.extensions_mut().insert(ConnectInfo(peer));
        request.extensions_mut().insert(limits);
        let answer = app.clone().call(request);
        let keep_alive = keep_alive.clone();
        async move {
            let mut response = answer.await?;
            response
                .headers_mut()
                .insert(axum::http::header::HeaderName::from_static("keep-alive"), keep_alive);
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read);
    let conn = builder.serve_connection(TokioIo::new(io), service).with_upgrades();
    tokio::pin!(conn);
    let mut stopping = std::pin::pin!(shutdown.wait());
    let mut told = false;
    loop {
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!("HTTP connection from {peer} ended: {e}");
                }
                return;
            }
            () = &mut stopping, if !told => {
                told = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// The connections each client address holds.
#[derive(Default)]
struct Addresses(Mutex<HashMap<IpAddr, usize>>);

/// One connection's place in [`Addresses`], given back when dropped.
struct Held {
    addresses: Arc<Addresses>,
    key: IpAddr,
}

impl Addresses {
    /// A place for a connection from `ip`, unless it holds as many as
    /// `limits` allow already.
    fn take(self: &Arc<Self>, ip: IpAddr, limits: &Limits) -> Option<Held> {
        let max = match ip.to_canonical().is_loopback() && !limits.per_address_on_loopback {
            true => usize::MAX,
            false => limits.per_address,
        };
        let key = super::throttle::key(ip);
        let mut held = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = held.entry(key).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Held {
            addresses: self.clone(),
            key,
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self
            .addresses
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// What axum's own loop does when `accept` fails: a connection reset before
/// it was taken is nothing; anything else (out of descriptors) is logged,
/// and the loop pauses a second rather than spin.
async fn accept_failed(e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!("accepting an HTTP connection failed: {e}");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// A connection's socket holding its place under the cap until it is
/// dropped (after a WebSocket upgrade too: the upgraded stream is this),
/// and failing a write the client has not made room for within the stall
/// bound.
pub(super) struct Guarded<T = TcpStream> {
    inner: T,
    /// Its place under the cap, and its address's: kept by the socket, so
    /// that an upgraded WebSocket keeps them.
    _places: (OwnedSemaphorePermit, Option<Held>),
    stall: Duration,
    /// Armed while a write waits for the client.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl<T> Guarded<T> {
    fn new(inner: T, permit: OwnedSemaphorePermit, held: Option<Held>, stall: Duration) -> Guarded<T> {
        Guarded {
            inner,
            _places: (permit, held),
            stall,
            waiting: None,
        }
    }

    /// The outcome of a write-side poll: progress disarms the stall timer,
    /// waiting arms it, and waiting past it is an error that closes the
    /// connection.
    fn watched<R>(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if polled.is_ready() {
            self.waiting = None;
            return polled;
        }
        let stall = self.stall;
        let timer = self
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + stall)));
        ready!(timer.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the client read nothing of its answer",
        )))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Guarded<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Guarded<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watched(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watched(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watched(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watched(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_holds_its_share_but_loopback_is_not_bounded() {
        let limits = Limits {
            per_address: 2,
            ..Limits::for_open_files(4096)
        };
        let addresses = Arc::new(Addresses::default());
        let remote: IpAddr = "203.0.113.7".parse().unwrap();
        let (a, b) = (addresses.take(remote, &limits), addresses.take(remote, &limits));
        assert!(a.is_some() && b.is_some());
        assert!(addresses.take(remote, &limits).is_none(), "past its share");
        drop(a);
        assert!(addresses.take(remote, &limits).is_some(), "a place given back");
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let held: Vec<_> = (0..5).map(|_| addresses.take(local, &limits)).collect();
        assert!(held.iter().all(Option::is_some));
    }
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn the_cap_stays_under_half_the_open_file_limit() {
        assert_eq!(Limits::for_open_files(1 << 20).max_connections, MAX_CONNECTIONS);
        assert_eq!(Limits::for_open_files(1024).max_connections, 512);
        assert_eq!(Limits::for_open_files(64).max_connections, 32);
        assert_eq!(Limits::for_open_files(u64::MAX).max_connections, MAX_CONNECTIONS);
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_the_client_never_reads_fails_after_the_stall_bound() {
        let (near, mut far) = tokio::io::duplex(64);
        let permits = Arc::new(Semaphore::new(1));
        let permit = permits.clone().acquire_owned().await.unwrap();
        let mut guarded = Guarded::new(near, permit, None, Duration::from_secs(30));
        // Read at first: the writes go through.
        guarded.write_all(&[1; 64]).await.unwrap();
        let mut buf = [0; 64];
        far.read_exact(&mut buf).await.unwrap();
        // Then nothing is read: the write fails once the bound has passed.
        let started = Instant::now();
        let e = guarded.write_all(&[2; 256]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_secs(30));
        // The place under the cap is given back with the socket.
        assert_eq!(permits.available_permits(), 0);
        drop(guarded);
        assert_eq!(permits.available_permits(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_that_keeps_reading_is_not_cut() {
        let (near, mut far) = tokio::io::duplex(16);
        let permit = Arc::new(Semaphore::new(1)).acquire_owned().await.unwrap();
        let mut guarded = Guarded::new(near, permit, None, Duration::from_secs(30));
        let reader = tokio::spawn(async move {
            let mut buf = [0; 16];
            let mut total = 0;
            while total < 160 {
                // Each read within the bound, all of them far past it.
                tokio::time::sleep(Duration::from_secs(20)).await;
                total += far.read(&mut buf).await.unwrap();
            }
            total
        });
        guarded.write_all(&[3; 160]).await.unwrap();
        assert_eq!(reader.await.unwrap(), 160);
    }
}
