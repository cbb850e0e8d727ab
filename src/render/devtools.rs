//! DevTools over a pipe. Chromium is started with `--remote-debugging-pipe`: it reads commands
//! on its fd 3 and writes answers and events on its fd 4, each message a JSON text ended by a
//! NUL byte, and listens on no port. A listening DevTools port would let any local user drive
//! the browser (and read files through `file://`). chromiumoxide only speaks WebSocket to a
//! `ws://` address, so this module bridges: it makes the two pipes, and serves one WebSocket
//! connection on a loopback port bound only for the moment chromiumoxide connects, at a path
//! holding 128 random bits that never leave this process. The first connection that presents
//! the path is bridged to the pipes and the port is closed at once; one without it is dropped.
//! Another local user could at most connect, without the path, during those milliseconds.

use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use async_tungstenite::tungstenite::protocol::WebSocketConfig;
use futures::StreamExt;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;

/// The largest message either side may send. Chromium's largest are a serialized DOM and a
/// response body, within the render's caps; this only stops a runaway from filling memory.
const MAX_MESSAGE: usize = 512 * 1024 * 1024;

/// The pipes to Chromium, made before it is spawned.
pub(crate) struct Pipes {
    /// Chromium's fd 3 (it reads commands) and fd 4 (it writes messages).
    browser_read: OwnedFd,
    browser_write: OwnedFd,
    /// This process's ends.
    commands: OwnedFd,
    messages: OwnedFd,
}

impl Pipes {
    pub(crate) fn new() -> std::io::Result<Pipes> {
        // Close-on-exec: no other child inherits them (Chromium gets copies on fds 3 and 4).
        let cloexec = nix::fcntl::OFlag::O_CLOEXEC;
        let (browser_read, commands) = nix::unistd::pipe2(cloexec)?;
        let (messages, browser_write) = nix::unistd::pipe2(cloexec)?;
        Ok(Pipes {
            browser_read,
            browser_write,
            commands,
            messages,
        })
    }

    /// Chromium's ends, to be put on fds 3 and 4 in the child ([`install_in_child`]).
    pub(crate) fn browser_fds(&self) -> (RawFd, RawFd) {
        (
            self.browser_read.as_raw_fd(),
            self.browser_write.as_raw_fd(),
        )
    }

    /// Serves the WebSocket end for chromiumoxide. Call once Chromium is spawned: this closes
    /// Chromium's ends here, so either side sees the other go. Returns the address to connect
    /// to and the bridge, which runs until either side closes.
    pub(crate) async fn serve(self) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
        let Pipes {
            browser_read,
            browser_write,
            commands,
            messages,
        } = self;
        drop((browser_read, browser_write));
        let commands = pipe::Sender::from_owned_fd(commands)?;
        let messages = pipe::Receiver::from_owned_fd(messages)?;
        let secret = secret()?;
        let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let url = format!("ws://{}/devtools/browser/{secret}", listener.local_addr()?);
        let path = format!("/devtools/browser/{secret}");
        let bridge = tokio::spawn(async move {
            let accepted = tokio::time::timeout(ACCEPT_TIMEOUT, accept(listener, &path)).await;
            match accepted {
                Ok(Some(ws)) => bridge(ws, commands, messages).await,
                _ => tracing::debug!(target: "wachet::render", "nobody attached to the browser"),
            }
        });
        Ok((url, bridge))
    }
}

/// Puts Chromium's pipe ends on fds 3 and 4, in the forked child before exec. Only makes
/// system calls (async-signal-safe).
pub(crate) fn install_in_child((read, write): (RawFd, RawFd)) -> std::io::Result<()> {
    use nix::libc;
    // Out of the way first: either may itself be fd 3 or 4. The copies are closed at exec.
    // SAFETY: plain descriptor calls on descriptors this process owns.
    let (read, write) = unsafe {
        (
            libc::fcntl(read, libc::F_DUPFD_CLOEXEC, 10),
            libc::fcntl(write, libc::F_DUPFD_CLOEXEC, 10),
        )
    };
    if read < 0 || write < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // dup2 leaves the new descriptors open across exec.
    // SAFETY: as above.
    if unsafe { libc::dup2(read, 3) } < 0 || unsafe { libc::dup2(write, 4) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// How long chromiumoxide may take to connect.
const ACCEPT_TIMEOUT: Duration = Duration::from_secs(20);

fn secret() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

type Ws = async_tungstenite::WebSocketStream<
    async_tungstenite::tokio::TokioAdapter<tokio::net::TcpStream>,
>;

/// The first connection that asks for `path`; the listener is closed when this returns.
// The handshake's callback must answer with tungstenite's (large) response type.
#[allow(clippy::result_large_err)]
async fn accept(listener: tokio::net::TcpListener, path: &str) -> Option<Ws> {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    loop {
        let (stream, _) = listener.accept().await.ok()?;
        let check = |request: &Request, response: Response| {
            if request.uri().path() == path {
                Ok(response)
            } else {
                let mut refused = ErrorResponse::new(None);
                *refused.status_mut() = async_tungstenite::tungstenite::http::StatusCode::NOT_FOUND;
                Err(refused)
            }
        };
        let handshake =
            async_tungstenite::tokio::accept_hdr_async_with_config(stream, check, Some(config));
        if let Ok(Ok(ws)) = tokio::time::timeout(Duration::from_secs(5), handshake).await {
            return Some(ws);
        }
    }
}

/// Carries messages both ways until either side closes or fails.
async fn bridge(ws: Ws, mut commands: pipe::Sender, mut messages: pipe::Receiver) {
    let (mut sink, mut stream) = ws.split();
    let to_browser = async {
        while let Some(Ok(message)) = stream.next().await {
            let bytes = match &message {
                Message::Text(text) => text.as_bytes(),
                Message::Binary(bytes) => bytes.as_ref(),
                Message::Close(_) => break,
                _ => continue,
            };
            if commands.write_all(bytes).await.is_err() || commands.write_all(&[0]).await.is_err() {
                break;
            }
        }
    };
    let from_browser = async {
        let mut pending: Vec<u8> = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match messages.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut rest = &buf[..n];
            while let Some(end) = memchr::memchr(0, rest) {
                pending.extend_from_slice(&rest[..end]);
                rest = &rest[end + 1..];
                let Ok(text) = String::from_utf8(std::mem::take(&mut pending)) else {
                    tracing::debug!(target: "wachet::render", "Chromium sent a message that is not UTF-8");
                    return;
                };
                if sink.send(Message::text(text)).await.is_err() {
                    return;
                }
            }
            pending.extend_from_slice(rest);
            if pending.len() > MAX_MESSAGE {
                tracing::debug!(target: "wachet::render", "Chromium sent a message over {MAX_MESSAGE} bytes");
                return;
            }
        }
        // No closing handshake: chromiumoxide takes a close frame as the end of messages but
        // not of the browser, while a connection dropped without one fails its handler, which
        // is how the engine learns that the browser is gone.
        drop(sink);
    };
    tokio::select! {
        () = to_browser => {}
        () = from_browser => {}
    }
}
