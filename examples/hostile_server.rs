//! Serves wachet's hostile pages (`wachet::testing::hostile`) on 127.0.0.1 until interrupted,
//! printing each case's URL, so any tool (wachet's own command line, an older build of it, a
//! peer) can be tried against the same pages:
//!
//! ```sh
//! cargo run --release --features testing --example hostile_server
//! ```

use wachet::testing::hostile::{Hostile, HostileServer};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let server = HostileServer::start().await?;
    for case in Hostile::ALL {
        println!("{case:?} {}", server.url(case));
    }
    println!("Harmless {}", server.server().url("/ok"));
    // Serves until the process is stopped; nothing here needs cleaning up.
    std::future::pending::<std::io::Result<()>>().await
}
