//! Secrets in the system keyring (Secret Service on Linux, the Keychain on macOS, the Credential
//! Manager on Windows), under the service "DeepRead" and an account per secret: the remote server's
//! API key, and the passwords of PDFs the person asked to remember. Secrets never reach a log or a message.
//!
//! A store is opened for each call rather than once: a keyring that was locked, or not running when
//! the window opened, is used as soon as it answers. Calls may block while the keyring asks the person
//! to unlock it, so callers run them off the window's thread.

use std::sync::Arc;

use keyring_core::{CredentialStore, Entry, Error};

/// The service every DeepRead secret is filed under.
const SERVICE: &str = "DeepRead";

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("no system keyring answered ({detail}){HINT}")]
    NoKeyring { detail: String },
    #[error("the system keyring refused access, locked or declined ({detail})")]
    Refused { detail: String },
    #[error("the system keyring failed: {detail}")]
    Failed { detail: String },
}

#[cfg(all(unix, not(target_os = "macos")))]
const HINT: &str = "; a Secret Service such as GNOME Keyring, KWallet or KeePassXC must be running";
#[cfg(not(all(unix, not(target_os = "macos"))))]
const HINT: &str = "";

/// The secret kept for `account`; `None` when none is.
pub fn load(account: &str) -> Result<Option<String>, SecretError> {
    match entry(account)?.get_password() {
        Ok(secret) => Ok(Some(secret)),
        Err(Error::NoEntry) => Ok(None),
        Err(error) => Err(described(error)),
    }
}

/// Keeps `secret` for `account`, in place of any kept before.
pub fn store(account: &str, secret: &str) -> Result<(), SecretError> {
    let entry = entry(account)?;
    match entry.set_password(secret) {
        // Several items for one account (left by another tool): clear them, then keep one.
        Err(Error::Ambiguous(_)) => {
            forget(account)?;
            entry.set_password(secret).map_err(described)
        }
        done => done.map_err(described),
    }
}

/// Removes what is kept for `account`; nothing kept is not an error.
pub fn forget(account: &str) -> Result<(), SecretError> {
    match entry(account)?.delete_credential() {
        Ok(()) | Err(Error::NoEntry) => Ok(()),
        Err(Error::Ambiguous(entries)) => {
            entries
                .iter()
                .try_for_each(|each| match each.delete_credential() {
                    Ok(()) | Err(Error::NoEntry) => Ok(()),
                    Err(error) => Err(described(error)),
                })
        }
        Err(error) => Err(described(error)),
    }
}

fn entry(account: &str) -> Result<Entry, SecretError> {
    let store = system_store().map_err(|error| SecretError::NoKeyring {
        detail: platform_detail(&error),
    })?;
    Entry::new_in_store(&store, SERVICE, account).map_err(described)
}

/// This platform's own keyring, connected now.
fn system_store() -> keyring_core::Result<Arc<CredentialStore>> {
    #[cfg(target_os = "macos")]
    let store: Arc<CredentialStore> = apple_native_keyring_store::keychain::Store::new()?;
    #[cfg(target_os = "windows")]
    let store: Arc<CredentialStore> = windows_native_keyring_store::Store::new()?;
    #[cfg(all(unix, not(target_os = "macos")))]
    let store: Arc<CredentialStore> = dbus_secret_service_keyring_store::Store::new()?;
    Ok(store)
}

/// The error in words. Variants that carry the secret's bytes are described without them.
fn described(error: Error) -> SecretError {
    match error {
        Error::NoStorageAccess(_) => SecretError::Refused {
            detail: platform_detail(&error),
        },
        Error::PlatformFailure(_) => SecretError::Failed {
            detail: platform_detail(&error),
        },
        Error::BadEncoding(_) | Error::BadDataFormat(..) => SecretError::Failed {
            detail: "what it keeps for DeepRead is not readable text".to_owned(),
        },
        Error::Ambiguous(entries) => SecretError::Failed {
            detail: format!("it holds {} items for one account", entries.len()),
        },
        other => SecretError::Failed {
            detail: other.to_string(),
        },
    }
}

/// The platform's own sentence (D-Bus's, say), without keyring-core's prefix: its first line, cut short, since
/// D-Bus can answer with a page of dbus-launch's output. The whole of it goes to the log.
fn platform_detail(error: &Error) -> String {
    let text = match error {
        Error::PlatformFailure(inner) | Error::NoStorageAccess(inner) => inner.to_string(),
        other => other.to_string(),
    };
    tracing::debug!(error = %text, "system keyring");
    first_line_cut(&text)
}

/// Characters of the platform's sentence shown in a message.
const DETAIL_SHOWN: usize = 120;

fn first_line_cut(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(DETAIL_SHOWN) {
        Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_platform_answer_is_cut_to_its_first_line() {
        // What D-Bus answers when it has no session bus and no X display to start one on.
        let dbus =
            "dbus-launch terminated abnormally with the following error: Autolaunch error: X11 \
                    initialization failed.\nand more of its output, line after line\n";
        let error = Error::PlatformFailure(dbus.into());
        let detail = platform_detail(&error);
        assert!(
            !detail.contains('\n') && !detail.contains("more of its output"),
            "{detail}"
        );
        assert!(
            detail.starts_with("dbus-launch terminated abnormally"),
            "{detail}"
        );
        let long = "x".repeat(500);
        let detail = platform_detail(&Error::PlatformFailure(long.into()));
        assert_eq!(
            detail.chars().count(),
            DETAIL_SHOWN + 1,
            "cut, with an ellipsis"
        );
    }

    /// Set in the child process that [`without_a_session_bus_no_keyring_answers`] starts.
    const CHILD: &str = "DEEPREAD_KEYRING_TEST_CHILD";

    /// The test itself, run in a child whose session bus address leads nowhere (changing the
    /// environment of this process would race the other tests' threads). Passes at once elsewhere.
    #[test]
    fn load_without_a_session_bus() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let error = load("remote-api-key:http://127.0.0.1:8000/v1").unwrap_err();
        assert!(matches!(error, SecretError::NoKeyring { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.starts_with("no system keyring answered"),
            "{message}"
        );
        assert!(
            matches!(
                forget("remote-api-key:x"),
                Err(SecretError::NoKeyring { .. })
            ) && matches!(
                store("remote-api-key:x", "sk-never-kept"),
                Err(SecretError::NoKeyring { .. })
            )
        );
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn without_a_session_bus_no_keyring_answers() {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "keyring::tests::load_without_a_session_bus"])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env(
                "DBUS_SESSION_BUS_ADDRESS",
                "unix:path=/nonexistent/deepread-test-bus",
            )
            .env_remove("DISPLAY")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(said.contains("1 passed"), "{said}");
    }
}
