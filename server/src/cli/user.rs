//! `wachet user add`: creates a user and prints its four lines (`user id:`, `email:`,
//! `password:`, `api key:`); `wachet user password`: gives a user a new password and prints
//! it. Both work while the service runs on the same database.

use super::serve::DbArg;
use crate::ops::account::{create_account, reset_password};
use clap::{Args, Subcommand};
use std::process::ExitCode;

/// User management.
#[derive(Debug, Args)]
pub struct UserArgs {
    #[command(subcommand)]
    command: UserCommand,
}

#[derive(Debug, Subcommand)]
enum UserCommand {
    /// Adds a user; prints its id, e-mail, password and API key once.
    Add {
        /// The user's e-mail address (the login).
        #[arg(long)]
        email: String,
        /// The password (8 to 1,024 characters); a random one is made and printed when
        /// omitted.
        #[arg(long, env = "WACHET_USER_PASSWORD")]
        password: Option<String>,
        #[command(flatten)]
        db: DbArg,
    },
    /// Gives a user a new password (to sign in to the web interface) and prints it once;
    /// every token and session of the user ends.
    Password {
        /// The user's e-mail address.
        #[arg(long)]
        email: String,
        /// The new password (8 to 1,024 characters); a random one is made and printed when
        /// omitted.
        #[arg(long, env = "WACHET_USER_PASSWORD")]
        password: Option<String>,
        #[command(flatten)]
        db: DbArg,
    },
}

pub async fn run(args: UserArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        UserCommand::Add {
            email,
            password,
            db,
        } => {
            let store = db.open().await?;
            let account = create_account(store.store(), &email, password).await?;
            println!("{account}");
            store.close().await;
            Ok(ExitCode::SUCCESS)
        }
        UserCommand::Password {
            email,
            password,
            db,
        } => {
            let store = db.open().await?;
            let result = reset_password(store.store(), &email, password).await;
            store.close().await;
            println!("password: {}", result?);
            Ok(ExitCode::SUCCESS)
        }
    }
}
