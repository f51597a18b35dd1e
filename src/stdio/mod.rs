//! The server's stdin and stdout: the MCP transport over them
//! ([`transport::StdioTransport`], which reads stdin through
//! [`lines::Lines`]), and the streams themselves, set up as clients spawn
//! us (pipes through the reactor, stdout watched for a client that stopped
//! reading).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::AsyncRead;
use tokio::sync::Notify;

mod envelope;
mod lines;
mod transport;

pub use transport::StdioTransport;
pub(crate) use transport::{expected_params, refused_answer};

/// The largest message a client may send, on stdio (one line) and over
/// HTTP (one request body).
pub const MAX_MESSAGE: usize = lines::MAX_LINE;

type Input = Box<dyn AsyncRead + Send + Unpin>;
type Output = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

/// stdin and stdout as async streams. When they are
/// pipes or sockets (as MCP clients spawn us) they are registered with the
/// reactor directly; tokio's own stdin/stdout would send every read and
/// write through the blocking thread pool, which more than doubles the cost
/// of a small request. The third value is told when the client stops
/// reading stdout (see [`Watched`]).
pub fn streams() -> (Input, Output, Arc<StdoutGone>) {
    let gone = Arc::new(StdoutGone::default());
    let output = Box::new(Watched {
        inner: writer(),
        gone: gone.clone(),
    });
    #[cfg(unix)]
    unix::watch_stdout(&gone);
    (reader(), output, gone)
}

/// Whether the client has stopped reading stdout (a broken pipe), and a
/// wake-up for whoever waits for that.
#[derive(Default)]
pub struct StdoutGone {
    gone: std::sync::atomic::AtomicBool,
    notify: Notify,
}

impl StdoutGone {
    pub fn is_gone(&self) -> bool {
        self.gone.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Wait until the client has stopped reading stdout.
    pub async fn wait(&self) {
        loop {
            let woken = self.notify.notified();
            if self.is_gone() {
                return;
            }
            woken.await;
        }
    }

    fn set(&self) {
        self.gone.store(true, std::sync::atomic::Ordering::SeqCst);
        self.notify.notify_waiters();
    }
}

/// stdout, telling `gone` when the client has stopped reading it (a broken
/// pipe): no answer can reach the client any more, so the server stops
/// rather than carry out requests whose answers nobody receives.
struct Watched {
    inner: Output,
    gone: Arc<StdoutGone>,
}

impl Watched {
    fn check<T>(&self, result: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(e)) = &result
            && e.kind() == io::ErrorKind::BrokenPipe
        {
            self.gone.set();
        }
        result
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.check(result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.check(result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.check(result)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.check(result)
    }
}

/// stdin: a pipe or socket through the reactor, anything else (a file, a
/// terminal) through tokio's blocking stdin.
fn reader() -> Box<dyn AsyncRead + Send + Unpin> {
    #[cfg(unix)]
    {
        if let Some(r) = unix::reader() {
            return r;
        }
    }
    Box::new(tokio::io::stdin())
}

/// stdout, chosen the same way as stdin and independently of it.
fn writer() -> Output {
    #[cfg(unix)]
    {
        if let Some(w) = unix::writer() {
            return w;
        }
    }
    Box::new(tokio::io::stdout())
}

#[cfg(unix)]
pub use unix::{is_stdin_or_stdout, path_is_stdin_or_stdout, stderr_is_stdout};

/// Whether `file` is the server's stdin or stdout: never, off unix.
#[cfg(not(unix))]
pub fn is_stdin_or_stdout(_file: &std::fs::File) -> bool {
    false
}

/// Whether `path` names the server's stdin or stdout: never, off unix.
#[cfg(not(unix))]
pub fn path_is_stdin_or_stdout(_path: &std::path::Path) -> bool {
    false
}

/// Whether stderr is stdout's pipe or socket: never, off unix.
#[cfg(not(unix))]
pub fn stderr_is_stdout() -> bool {
    false
}

/// Each of fd 0 and fd 1 is looked at on its own, and converted only once
/// it is known to be a pipe or a socket: converting makes the open file
/// non-blocking, which tokio's blocking stdin/stdout could not cope with.
/// A socket is kept whole (never split), so that dropping one side never
/// shuts down a direction the other fd still uses (inetd and socat give
/// the server one socket as both stdin and stdout).
#[cfg(unix)]
mod unix {
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    use std::sync::atomic::{AtomicBool, Ordering};

    use tokio::io::{AsyncRead, AsyncWrite};

    enum Kind {
        Pipe,
        Socket,
    }

    /// What `fd` is, read through a duplicate of it.
    fn metadata(fd: BorrowedFd<'_>) -> Option<std::fs::Metadata> {
        std::fs::File::from(fd.try_clone_to_owned().ok()?).metadata().ok()
    }

    fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
        a.dev() == b.dev() && a.ino() == b.ino()
    }

    /// Whether `file` is the server's stdin or stdout (the same pipe, socket
    /// or file, however it was named: `/dev/stdout`, `/proc/self/fd/0`...).
    pub fn is_stdin_or_stdout(file: &std::fs::File) -> bool {
        file.metadata().is_ok_and(|m| is_stdin_or_stdout_file(&m))
    }

    /// [`is_stdin_or_stdout`] for a path, without opening it (false for a
    /// path that does not exist yet).
    pub fn path_is_stdin_or_stdout(path: &std::path::Path) -> bool {
        std::fs::metadata(path).is_ok_and(|m| is_stdin_or_stdout_file(&m))
    }

    fn is_stdin_or_stdout_file(ours: &std::fs::Metadata) -> bool {
        let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
        [metadata(stdin.as_fd()), metadata(stdout.as_fd())]
            .into_iter()
            .flatten()
            .any(|m| same_file(&m, ours))
    }

    /// Whether stderr is the very pipe or socket stdout is (inetd, and
    /// systemd socket activation by default, hand the server one socket as
    /// fds 0, 1 and 2). Logs written there would reach the client inside the
    /// JSON-RPC stream, so the server then keeps quiet. A terminal shared by
    /// both is not a protocol stream and does not count.
    pub fn stderr_is_stdout() -> bool {
        let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
        match (metadata(stdout.as_fd()), metadata(stderr.as_fd())) {
            (Some(out), Some(err)) => {
                let stream = out.file_type().is_fifo() || out.file_type().is_socket();
                stream && same_file(&out, &err)
            }
            _ => false,
        }
    }

    /// A duplicate of `fd` if it is a pipe or a socket. Changes nothing.
    fn probe(fd: BorrowedFd<'_>) -> Option<(OwnedFd, Kind)> {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        let kind = if kind.is_fifo() {
            Kind::Pipe
        } else if kind.is_socket() {
            Kind::Socket
        } else {
            return None;
        };
        Some((OwnedFd::from(file), kind))
    }

    fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let stream = std::os::unix::net::UnixStream::from(fd);
        stream.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(stream).ok()
    }

    /// Set once fd 0 or fd 1 has been made non-blocking by the server (not
    /// when it came non-blocking: that is left as it was found).
    static MADE_NONBLOCKING: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

    /// Note that fd `which` (0 or 1) is about to be made non-blocking, unless
    /// it already is.
    fn note_nonblocking(which: usize, fd: &OwnedFd) {
        let was = rustix::fs::fcntl_getfl(fd).is_ok_and(|flags| flags.contains(rustix::fs::OFlags::NONBLOCK));
        MADE_NONBLOCKING[which].store(!was, Ordering::SeqCst);
    }

    pub(super) fn reader() -> Option<Box<dyn AsyncRead + Send + Unpin>> {
        let stdin = std::io::stdin();
        let (fd, kind) = probe(stdin.as_fd())?;
        note_nonblocking(0, &fd);
        match kind {
            Kind::Pipe => Some(Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(fd).ok()?)),
            Kind::Socket => Some(Box::new(socket(fd)?)),
        }
    }

    pub(super) fn writer() -> Option<Box<dyn AsyncWrite + Send + Unpin>> {
        let stdout = std::io::stdout();
        let (fd, kind) = probe(stdout.as_fd())?;
        note_nonblocking(1, &fd);
        match kind {
            Kind::Pipe => Some(Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(fd).ok()?)),
            Kind::Socket => Some(Box::new(socket(fd)?)),
        }
    }

    /// Tell `gone` as soon as the client closes its end of stdout, when
    /// stdout is a pipe or a socket: a write would find out only at the
    /// next answer, and an idle server would wait for its client forever. A
    /// thread sleeps in `poll` on fd 1 asking for no event, so only the error
    /// or hang-up of a closed peer wakes it.
    pub(super) fn watch_stdout(gone: &std::sync::Arc<super::StdoutGone>) {
        let stdout = std::io::stdout();
        let Some((fd, _)) = probe(stdout.as_fd()) else {
            return;
        };
        let gone = gone.clone();
        let watching = std::thread::Builder::new().name("stdout-watch".into()).spawn(move || {
            use rustix::event::{PollFd, PollFlags, poll};
            loop {
                let mut fds = [PollFd::new(&fd, PollFlags::empty())];
                match poll(&mut fds, None) {
                    Ok(_) if fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP) => {
                        tracing::info!("the client closed its end of stdout");
                        gone.set();
                        return;
                    }
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => {
                        tracing::debug!("cannot watch stdout: {e}");
                        return;
                    }
                }
            }
        });
        if let Err(e) = watching {
            tracing::debug!("cannot watch stdout: {e}");
        }
    }

    /// Make fd 0 and fd 1 blocking again where [`reader`] or [`writer`]
    /// made them non-blocking (one that came non-blocking stays so). The flag belongs to the open file, which the
    /// process that started the server shares: a shell pipeline's next
    /// command writing to the same pipe would otherwise fail with EAGAIN.
    pub(super) fn restore_blocking() {
        let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
        for (flag, fd) in MADE_NONBLOCKING.iter().zip([stdin.as_fd(), stdout.as_fd()]) {
            if flag.swap(false, Ordering::SeqCst)
                && let Ok(owned) = fd.try_clone_to_owned()
            {
                // FIONBIO, which works on any file, pipes included.
                let _ = std::os::unix::net::UnixStream::from(owned).set_nonblocking(false);
            }
        }
    }
}

/// Undo what [`streams`] changed on stdin and stdout (their non-blocking
/// mode), for whatever uses them after the server.
pub fn restore() {
    #[cfg(unix)]
    unix::restore_blocking();
}
