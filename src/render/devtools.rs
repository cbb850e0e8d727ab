//! DevTools over a pipe. Chromium is started with `--remote-debugging-pipe`: it reads commands
//! on its fd 3 and writes answers and events on its fd 4, each message a JSON text ended by a
//! NUL byte, and listens on no port. A listening DevTools port would let any local user drive
//! the browser (and read files through `file://`). chromiumoxide only speaks WebSocket to a
//! `ws://` address, so this module bridges: it makes the two pipes, and serves one WebSocket
//! connection on a loopback port bound only for the moment chromiumoxide connects, at a path
//! holding 128 random bits that never leave this process. A connection is accepted only from a
//! socket of this very process (the kernel's socket table says whose it is), and only with the
//! path; the first such one is bridged to the pipes and the port is closed at once. Another
//! local user could at most connect during those milliseconds, and is dropped unheard.

use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use async_tungstenite::tungstenite::protocol::WebSocketConfig;
use futures::StreamExt;
use std::io::Read;
use std::net::SocketAddr;
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
    let ours = listener.local_addr().ok()?;
    loop {
        let (stream, peer) = listener.accept().await.ok()?;
        // Messages are small and answer each other: Nagle's algorithm would hold an event
        // behind the one before it until the peer's delayed ACK, up to 40 ms.
        let _ = stream.set_nodelay(true);
        // A stranger is dropped before it can send a byte, so it cannot hold up the handshake.
        let own = tokio::task::spawn_blocking(move || connected_from_this_process(peer, ours));
        if !own.await.unwrap_or(false) {
            tracing::warn!(target: "wachet::render", %peer, "refused a connection to the browser's DevTools from another process");
            continue;
        }
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

/// Whether the TCP connection from `peer` to `listener` was made by this process: its client
/// socket (in `/proc/net/tcp`, by inode) is one of this process's descriptors. The kernel says
/// who holds a socket; a path, however secret, only says who knows it.
fn connected_from_this_process(peer: SocketAddr, listener: SocketAddr) -> bool {
    let (SocketAddr::V4(peer), SocketAddr::V4(listener)) = (peer, listener) else {
        return false;
    };
    // Addresses as the kernel prints them: the 32-bit value as it lies in memory, in hex.
    let hex = |a: std::net::SocketAddrV4| {
        format!(
            "{:08X}:{:04X}",
            u32::from_ne_bytes(a.ip().octets()),
            a.port()
        )
    };
    let (local, remote) = (hex(peer), hex(listener));
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    let Some(inode) = table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(1) == Some(&local.as_str()) && fields.get(2) == Some(&remote.as_str()))
            .then(|| fields.get(9).map(|i| format!("socket:[{i}]")))
            .flatten()
    }) else {
        return false;
    };
    std::fs::read_dir("/proc/self/fd").is_ok_and(|fds| {
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == inode.as_str())
        })
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/devtools/browser/0123456789abcdef";

    /// Another process is dropped unheard even with the secret path; this process is refused
    /// with a wrong path and accepted with the right one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_this_process_with_the_path_attaches() {
        let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let accepting = tokio::spawn(async move { accept(listener, PATH).await });

        let handshake = format!(
            "GET {PATH} HTTP/1.1\\r\\nHost: {addr}\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n"
        );
        let script = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port}; printf '{handshake}' >&3; cat <&3",
            port = addr.port()
        );
        let other = tokio::process::Command::new("bash")
            .arg("-c")
            .arg(script)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let other = tokio::time::timeout(Duration::from_secs(10), other)
            .await
            .expect("the other process's connection is closed")
            .unwrap();
        // Closed unread: cat may see a reset; what matters is that nothing was answered.
        assert_eq!(
            String::from_utf8_lossy(&other.stdout),
            "",
            "answered another process: {other:?}"
        );
        assert!(!accepting.is_finished());

        let wrong =
            async_tungstenite::tokio::connect_async(format!("ws://{addr}/devtools/browser/x"));
        assert!(wrong.await.is_err(), "a wrong path attached");
        assert!(!accepting.is_finished());

        let right = async_tungstenite::tokio::connect_async(format!("ws://{addr}{PATH}"));
        let _client = right.await.expect("this process attaches");
        let accepted = tokio::time::timeout(Duration::from_secs(10), accepting)
            .await
            .unwrap()
            .unwrap();
        assert!(accepted.is_some());
    }
}
