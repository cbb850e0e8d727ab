//! The secrets of a monitor's browser steps (a password typed at sign-in): sealed with the
//! service's key when the monitor is saved, never written back out (the API, the web
//! interface and exports show `"secret": true` without a value; an export that asks for
//! secrets carries them encrypted to a passphrase, [`super::transfer::export_secrets`]), kept
//! when a monitor is saved without the value, and opened only for the check that types them
//! (and sealed again when the service's key is rotated, [`super::keys`]). Steps imply a rendered
//! check, so a monitor with steps is saved with `dynamicContent` on (it is then claimed by the
//! browser checks and counted on its owner's tabs).

use super::{OpError, UserId};
use crate::secrets::Sealer;
use wachet::model::Monitor;

/// Whether `monitor` holds a step value marked secret.
pub fn has_secrets(monitor: &Monitor) -> bool {
    monitor.has_secret_steps()
}

/// Gives each secret step of `monitor` that came without a value the value of the step
/// `stored` (the monitor as saved before) holds at the same place with the same action and
/// selector, opened; then checks that steps imply rendering.
pub fn keep_secrets(
    sealer: &Sealer,
    user: &UserId,
    monitor: &mut Monitor,
    stored: Option<&Monitor>,
) -> Result<(), OpError> {
    if monitor.steps.is_some() || monitor.login.is_some() {
        monitor.dynamic_content = true;
    }
    let mut stored = stored.cloned().unwrap_or_default();
    let before = stored.step_lists_mut();
    for ((field, list), (_, old)) in monitor.step_lists_mut().into_iter().zip(before) {
        let old = old.map(|o| o.as_slice()).unwrap_or_default();
        for (i, step) in list.into_iter().flatten().enumerate() {
            if !step.secret || step.value.is_some() {
                continue;
            }
            let same = old
                .get(i)
                .filter(|o| o.secret && o.action == step.action && o.selector == step.selector);
            let Some(sealed) = same.and_then(|o| o.value.as_deref()) else {
                continue;
            };
            let opened = crate::secrets::open_step(sealer, user, sealed).ok_or_else(|| {
                OpError::field(
                    format!("{field}[{i}].value"),
                    "the stored secret cannot be opened (the server's key changed); type it again",
                )
            })?;
            step.value = Some(opened);
        }
    }
    Ok(())
}

/// Seals every secret value of `monitor` for `user`, as it is stored.
pub fn seal(sealer: &Sealer, user: &UserId, monitor: &mut Monitor) -> Result<(), OpError> {
    for (field, list) in monitor.step_lists_mut() {
        for (i, step) in list.into_iter().flatten().enumerate() {
            let Some(value) = step.value.as_mut().filter(|_| step.secret) else {
                continue;
            };
            if crate::secrets::is_sealed_step(value) {
                continue;
            }
            *value = crate::secrets::seal_step(sealer, user, value)
                .map_err(|e| OpError::field(format!("{field}[{i}].value"), e))?;
        }
    }
    Ok(())
}

/// `monitor` without the values of its secret steps: how it is shown and exported.
pub fn hide(monitor: &mut Monitor) {
    monitor.hide_secret_steps();
}

/// `monitor` with its secret values opened, for the check that types them
/// ([`crate::secrets::open_steps`]).
pub fn open(sealer: &Sealer, user: &UserId, monitor: &mut Monitor) {
    crate::secrets::open_steps(sealer, user, monitor);
}

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::model::{Login, Step, StepAction};

    #[test]
    fn a_secret_is_sealed_hidden_kept_and_opened() {
        let sealer = Sealer::new(b"service secret").unwrap();
        let mut password = Step::new(StepAction::Type).on("#password").with("hunter2");
        password.secret = true;
        let mut m = Monitor::new("https://example.com/");
        m.login = Some(Login {
            steps: vec![password],
            logged_in_when: None,
        });
        keep_secrets(&sealer, "u1", &mut m, None).unwrap();
        assert!(m.dynamic_content);
        seal(&sealer, "u1", &mut m).unwrap();
        let stored = m.clone();
        let kept = serde_json::to_string(&stored).unwrap();
        assert!(!kept.contains("hunter2"), "{kept}");

        let mut shown = stored.clone();
        hide(&mut shown);
        let json = serde_json::to_value(&shown).unwrap();
        assert_eq!(
            json["login"]["steps"][0],
            serde_json::json!({"action": "type", "selector": "#password", "secret": true})
        );
        // Saved again as shown: the stored value is kept.
        keep_secrets(&sealer, "u1", &mut shown, Some(&stored)).unwrap();
        assert_eq!(
            shown.login.as_ref().unwrap().steps[0].value.as_deref(),
            Some("hunter2")
        );
        let mut checked = stored.clone();
        open(&sealer, "u1", &mut checked);
        assert_eq!(
            checked.login.as_ref().unwrap().steps[0].value.as_deref(),
            Some("hunter2")
        );
        // Another user's key context opens nothing.
        let mut other = stored;
        open(&sealer, "u2", &mut other);
        assert_eq!(other.login.as_ref().unwrap().steps[0].value, None);
    }
}
